"""A FlinkJob with spec.security.tls on, end to end on the process kubelet: the operator generates the
Secret, the pods mount it (the kubelet's Secret volume), the engine runs RPC, data and REST over mutual
TLS with it, and the operator observes the job over https with the job's certificate. The job's keyed
sums end at the plain-Python reference; the JobManager's REST port refuses a client without the job's
certificate."""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.engine.s3_server import S3Server
from tests.operator.operator_harness import Cluster, RunningOperator, wait_until
from tests.operator.running_jobs import final_sums, flinkjob, lifecycle, reference, s3_secret, sums_job


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

    wait_until(lambda: final_sums(out) == reference(count), timeout=120, what="the job's final sums",
               details=lambda: f"{final_sums(out)} != {reference(count)}\n{details()}")
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
    wait_until(lambda: k8s.get("FlinkJob", name) is None, timeout=30, what="the FlinkJob deleted", details=details)
