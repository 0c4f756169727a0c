"""A FlinkJob with spec.security.tls on, end to end on the process kubelet: the operator generates the
Secret, the pods mount it (the kubelet's Secret volume), the engine runs RPC, data and REST over mutual
TLS with it, and the operator observes the job over https with the job's certificate. The job's keyed
sums end at the plain-Python reference; the JobManager's REST port refuses a client without the job's
certificate."""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from strom_operator.clients.jobmanager_tls import client_context

from tests.engine.s3_server import S3Server
from tests.operator.operator_harness import Cluster, RunningOperator, wait_until
from tests.operator.running_jobs import final_sums, flinkjob, lifecycle, pods_of, reference, s3_secret, sums_job


async def _refused_without_certificate(host: str, port: int) -> bool:
    """A TLS client without a certificate: refused in the handshake, or (TLS 1.3) by the server's alert or
    close right after it; a plain-TCP client would not even get that far."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=context), 10)
        data = await asyncio.wait_for(reader.read(1), 10)
        writer.close()
        return data == b""
    except TimeoutError:  # an OSError too: a server still waiting has not refused
        return False
    except (ssl.SSLError, ConnectionError, OSError):
        return True


async def _accepted_with(context: ssl.SSLContext, host: str, port: int) -> bool:
    """The TLS handshake with the job's certificate completes and the server keeps the connection for its next
    step (the cluster-secret challenge): a plain server fails the handshake, a TLS 1.3 refusal closes at once."""
    context.check_hostname = False  # internal TLS names no host, as Flink's
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=context), 10)
    except (ssl.SSLError, ConnectionError, OSError):
        return False
    try:
        return await asyncio.wait_for(reader.read(1), 1) != b""
    except TimeoutError:
        return True  # waiting for this client's first frame
    except (ssl.SSLError, ConnectionError, OSError):
        return False
    finally:
        writer.close()


@pytest.mark.timeout(300)
def test_a_tls_job_runs_and_the_operator_follows_it_over_mutual_tls(
        k8s: Cluster, operator: RunningOperator, kubelet: Any, s3_server: S3Server, url_map: Path, tmp_path: Path):
    name, count = "tls", 3000
    job_file, out = sums_job(tmp_path / "sums.py", count=count, rate=1000.0), tmp_path / "out"
    body = flinkjob(name, k8s.namespace, job_file, out, s3_server)
    body["spec"]["security"] = {"tls": {"enabled": True}}
    k8s.call(lambda k: k.create(s3_secret(f"{name}-s3", k8s.namespace, s3_server)))
    k8s.call(lambda k: k.create(body))

    def details() -> str:
        return f"{k8s.status(name)}\n{operator.log()}\n{kubelet.logs()}"

    # STABLE: the operator read RUNNING from the JobManager's REST API, which only answers over mutual TLS
    wait_until(lambda: lifecycle(k8s, name) == "STABLE", timeout=90, what="the TLS job RUNNING", details=details)
    secret = k8s.get("Secret", f"{name}-tls")
    assert secret is not None and secret["type"] == "kubernetes.io/tls"
    base = json.loads(url_map.read_text())[f"{k8s.namespace}/{name}-jobmanager"]
    address = base.split("://", 1)[1]
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, ConnectionError)):  # it speaks TLS only
        urllib.request.urlopen(f"http://{address}/overview", timeout=5)
    anyone = ssl.create_default_context()
    anyone.check_hostname, anyone.verify_mode = False, ssl.CERT_NONE
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):  # no client certificate
        urllib.request.urlopen(f"https://{address}/overview", timeout=5, context=anyone).read()

    # RPC on the JobManager and a data port on a TaskManager: TLS with a client certificate of the job's CA
    taskmanager_ip = next(p["status"]["podIP"] for p in pods_of(k8s, name)
                          if p["metadata"]["labels"]["app.kubernetes.io/component"] == "taskmanager")
    for host, port in ((address.rsplit(":", 1)[0], 6123), (taskmanager_ip, 6121)):
        assert asyncio.run(_refused_without_certificate(host, port)), f"{host}:{port} took a client without one"
        assert asyncio.run(_accepted_with(client_context(secret), host, port)), f"{host}:{port} refused the job's"

    wait_until(lambda: final_sums(out) == reference(count), timeout=120, what="the job's final sums",
               details=lambda: f"{final_sums(out)} != {reference(count)}\n{details()}")
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
    wait_until(lambda: k8s.get("FlinkJob", name) is None, timeout=30, what="the FlinkJob deleted", details=details)


@pytest.mark.timeout(300)
def test_turning_tls_on_is_a_savepoint_upgrade_that_stops_the_plain_jobmanager_and_restores_under_tls(
        k8s: Cluster, operator: RunningOperator, kubelet: Any, s3_server: S3Server, tmp_path: Path):
    """The operator asks the old JobManager for the savepoint over plain HTTP (the spec it heads for already
    says TLS) and the new one over https; the keyed sums of the second run end at the reference."""
    name, count = "tls-on", 12000
    job_file = sums_job(tmp_path / "sums.py", count=count, rate=1000.0)
    first, second = tmp_path / "out-1", tmp_path / "out-2"
    k8s.call(lambda k: k.create(s3_secret(f"{name}-s3", k8s.namespace, s3_server)))
    k8s.call(lambda k: k.create(flinkjob(name, k8s.namespace, job_file, first, s3_server)))

    def details() -> str:
        return f"{k8s.status(name)}\n{operator.log()}\n{kubelet.logs()}"

    wait_until(lambda: lifecycle(k8s, name) == "STABLE", timeout=90, what="the plain job RUNNING", details=details)
    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, name, {"spec": {
        "security": {"tls": {"enabled": True}}, "job": {"args": [str(second)]}}}))
    wait_until(lambda: lifecycle(k8s, name) == "STABLE" and (k8s.status(name).get("savepoints") or {}).get("last")
               and k8s.status(name)["reconciliation"]["lastReconciledSpec"]["job"]["args"] == [str(second)],
               timeout=120, what="the upgrade to TLS RUNNING", details=details)
    savepoint = k8s.status(name)["savepoints"]["last"]
    assert savepoint["kind"] == "upgrade"
    volumes = k8s.get("Deployment", f"{name}-jobmanager")["spec"]["template"]["spec"]["volumes"]
    assert any((v.get("secret") or {}).get("secretName") == f"{name}-tls" for v in volumes)
    expected = reference(count)
    wait_until(lambda: final_sums(second) == expected, timeout=120, what="the TLS job's final sums",
               details=lambda: f"{final_sums(second)} != {expected}\n{details()}")
    before = final_sums(first)
    assert before and all(before[k] < expected[k] for k in before)  # the plain job was stopped midway
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
    wait_until(lambda: k8s.get("FlinkJob", name) is None, timeout=30, what="the FlinkJob deleted", details=details)
