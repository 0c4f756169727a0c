"""TLS on a session cluster of real processes (JobManager, TaskManagers, the `strom` CLI) on loopback.

Certificates come from a throwaway CA made in the test (`tls_material`, `cryptography` alone). The
cluster runs with the keys the operator writes (PEM tls.crt / tls.key / ca.crt) for internal TLS and
for mutual-TLS REST, read from one `--config` file by every process and by the CLI.
"""

from __future__ import annotations

import glob
import json
import os
import pickle
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.engine.cluster_testing import ROOT, SessionCluster, wait_until
from tests.engine.test_cluster import final_sums, reference, submit
from tests.engine.test_cluster_checkpoints import COUNT, checkpointed_job
from tests.engine.test_peer_auth import exploit_frame, free_port, read_until_closed
from tests.engine.tls_material import CertificateAuthority, pem_tls_keys

pytestmark = pytest.mark.timeout(300)


class Material:
    """The cluster's CA and certificate, a client certificate of the same CA, and one of another CA."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.ca = CertificateAuthority()
        self.ca_file = self.ca.write_pem(directory)
        self.crt, self.key = self.ca.issue("strom-cluster").write_pem(directory, "tls")
        self.client_crt, self.client_key = self.ca.issue("a user").write_pem(directory, "client")
        self.stranger_crt, self.stranger_key = CertificateAuthority("another CA").issue("stranger").write_pem(
            directory, "stranger"
        )

    def cluster_config(self, **extra: str) -> Path:
        conf = {**pem_tls_keys("internal", self.crt, self.key, self.ca_file),
                **pem_tls_keys("rest", self.crt, self.key, self.ca_file),
                "security.ssl.rest.authentication-enabled": "true", **extra}
        path = self.dir / "cluster.yaml"
        path.write_text(yaml.safe_dump(conf))
        return path

    def client_config(self, *, with_certificate: bool = True) -> Path:
        conf = {"security.ssl.rest.enabled": "true", "security.ssl.rest.truststore": str(self.ca_file)}
        if with_certificate:
            conf |= {"security.ssl.rest.keystore": str(self.client_crt), "security.ssl.rest.key": str(self.client_key)}
        path = self.dir / ("client.yaml" if with_certificate else "client-without-certificate.yaml")
        path.write_text(yaml.safe_dump(conf))
        return path

    def context(self, crt: Path | None, key: Path | None, *, verify: bool = True) -> ssl.SSLContext:
        """A client context built with the standard library only (not strom.common.tls)."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        if not verify:
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        if crt is not None:
            ctx.load_cert_chain(str(crt), str(key))
        return ctx


@pytest.fixture
def material(tmp_path: Path) -> Material:
    return Material(tmp_path)


def tls_cluster(material: Material, *, taskmanagers: int, slots: int, extra: tuple[str, ...] = ()) -> SessionCluster:
    return SessionCluster(
        taskmanagers=taskmanagers,
        slots=slots,
        extra=("--config", str(material.cluster_config()), *extra),
        rest_tls=material.context(material.client_crt, material.client_key),
        client_args=("--config", str(material.client_config())),
    )


def test_a_tls_cluster_runs_a_keyed_job_and_fails_over_from_its_checkpoint(material: Material, tmp_path: Path):
    checkpoints = tmp_path / "checkpoints"
    cluster = tls_cluster(material, taskmanagers=3, slots=2)
    try:
        job_id = submit(cluster, checkpointed_job(tmp_path, checkpoints_dir=f"file://{checkpoints}"))
        wait_until(lambda: cluster.get(f"/jobs/{job_id}/checkpoints")["counts"]["completed"] >= 1, timeout=60,
                   what="a completed checkpoint")
        wait_until(lambda: glob.glob(str(checkpoints / job_id / "chk-*" / "_metadata")), what="a checkpoint")
        used = sorted({
            st["taskmanager-id"]
            for v in cluster.get(f"/jobs/{job_id}")["vertices"]
            for st in cluster.get(f"/jobs/{job_id}/vertices/{v['id']}")["subtasks"]
            if st.get("taskmanager-id")
        })
        assert len(used) >= 2  # the keyed exchange crosses TaskManagers: data ports carry TLS
        # the submitting client's TLS keys (and the cluster's) are no part of the job's configuration
        effective = {e["key"] for e in cluster.get(f"/jobs/{job_id}/jobmanager/config")}
        assert "execution.checkpointing.interval" in effective
        assert not {k for k in effective if k.startswith("security.ssl.")}
        cluster.kill_taskmanager(cluster.tms[int(used[0].split("-")[1])])  # kill -9, slots included
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=120) == "FINISHED"
        stats = cluster.get(f"/jobs/{job_id}/checkpoints")
        assert stats["latest"]["restored"] is not None and stats["counts"]["restored"] >= 1, stats
        assert final_sums(tmp_path / "out") == reference(COUNT)
    finally:
        cluster.close()


def _tls_probe(port: int, ctx: ssl.SSLContext, payload: bytes) -> bytes:
    """Handshake with `ctx` (as far as the server lets it), send `payload`, read until closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with ctx.wrap_socket(raw) as sock:
                sock.sendall(payload)
                return read_until_closed(sock)
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return b""  # refused during the handshake, or at the first read after it (TLS 1.3)


def test_peers_without_the_clusters_certificate_are_refused_before_anything_is_unpickled(
    material: Material, tmp_path: Path
):
    data_port = free_port()
    cluster = tls_cluster(material, taskmanagers=1, slots=1, extra=("-D", f"taskmanager.data.port={data_port}"))
    marker = tmp_path / "pwned"  # the pickle creates it when loaded, in whichever process loads it
    try:
        no_certificate = material.context(None, None, verify=False)
        stranger = material.context(material.stranger_crt, material.stranger_key, verify=False)
        for port in (cluster.rpc_port, data_port):
            # plain text: a pickle frame where the TLS handshake should be
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(exploit_frame(marker))
                got = read_until_closed(sock)
            assert b"STRMAUTH" not in got  # not even the peer-authentication hello: TLS comes first
            for ctx in (no_certificate, stranger):
                got = _tls_probe(port, ctx, exploit_frame(marker))
                assert b"STRMAUTH" not in got
        # REST with mutual TLS: a submission whose pickle would run on load, without and with a foreign certificate
        body = pickle.dumps(ExploitJob(marker))
        for ctx in (no_certificate, stranger):
            request = urllib.request.Request(f"https://127.0.0.1:{cluster.rest_port}/jobs", data=body, method="POST")
            with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
                urllib.request.urlopen(request, timeout=10, context=ctx).read()
        # plain HTTP to the HTTPS port
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(f"http://127.0.0.1:{cluster.rest_port}/overview", timeout=10).read()
        assert not marker.exists()
        overview = cluster.get("/overview")  # with the client certificate: served, the TaskManager still there
        assert overview["taskmanagers"] == 1 and overview["slots-total"] == 1
    finally:
        cluster.close()
    assert not marker.exists()


class ExploitJob:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


def test_strom_list_needs_the_client_certificate_of_a_mutual_tls_jobmanager(material: Material, tmp_path: Path):
    cluster = tls_cluster(material, taskmanagers=0, slots=1)
    try:
        ok = cluster.cli("list")
        assert ok.returncode == 0 and ok.stdout.strip() == "No jobs.", ok.stderr
        env = dict(PYTHONPATH=str(Path(ROOT) / "runtime-image"), PATH="/usr/bin:/bin")
        base = [sys.executable, "-m", "strom.cli", "list", "--jobmanager", f"127.0.0.1:{cluster.rest_port}"]
        for args, expected in (
            (["--config", str(material.client_config(with_certificate=False))],
             "security.ssl.rest.keystore"),
            ([], "lost the connection to the JobManager"),  # plain HTTP to an HTTPS endpoint
            (["-D", "security.ssl.rest.enabled=true"],  # the system's CAs do not know the test CA
             "cannot verify the TLS certificate"),
        ):
            done = subprocess.run([*base, *args], capture_output=True, text=True, env=env, timeout=60)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 1 and len(lines) == 1, done.stderr
            assert lines[0].startswith("strom: error: ") and expected in lines[0], lines[0]
        # the same keys given with -D work as well as the config file
        client = json.loads(json.dumps(yaml.safe_load(material.client_config().read_text())))
        dashes = [arg for k, v in client.items() for arg in ("-D", f"{k}={v}")]
        done = subprocess.run([*base, *dashes], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == "No jobs.", done.stderr
    finally:
        cluster.close()


def test_a_taskmanager_with_a_certificate_of_another_ca_exits_with_one_line(material: Material, tmp_path: Path):
    cluster = tls_cluster(material, taskmanagers=0, slots=1)
    try:
        conf = {**pem_tls_keys("internal", material.stranger_crt, material.stranger_key, material.ca_file)}
        path = tmp_path / "stranger.yaml"
        path.write_text(yaml.safe_dump(conf))
        env = dict(PYTHONPATH=str(Path(ROOT) / "runtime-image"), PATH="/usr/bin:/bin", HOME=str(tmp_path))
        done = subprocess.run(
            [sys.executable, "-m", "strom.cli", "taskmanager", "--jobmanager", f"127.0.0.1:{cluster.rpc_port}",
             "--config", str(path), "-D", "metrics.reporter.prom.port=0", "--log-level", "ERROR"],
            capture_output=True, text=True, env=env, timeout=60,
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert lines[-1].startswith(f"strom: error: TaskManager could not establish TLS with JobManager 127.0.0.1:"
                                    f"{cluster.rpc_port}"), done.stderr
        assert "security.ssl.internal.truststore" in lines[-1]
        assert cluster.get("/overview")["taskmanagers"] == 0
    finally:
        cluster.close()


@pytest.mark.parametrize("process", ["jobmanager", "taskmanager"])
def test_bad_tls_material_stops_a_process_at_its_start_with_one_line(tmp_path: Path, process: str):
    material = Material(tmp_path)
    conf = pem_tls_keys("internal", material.crt, tmp_path / "missing.key", material.ca_file)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(conf))
    env = dict(PYTHONPATH=str(Path(ROOT) / "runtime-image"), PATH="/usr/bin:/bin", HOME=str(tmp_path))
    extra = ["--jobmanager", "127.0.0.1:1"] if process == "taskmanager" else ["-D", "rest.port=0",
                                                                               "-D", "jobmanager.rpc.port=0"]
    done = subprocess.run([sys.executable, "-m", "strom.cli", process, "--config", str(path), *extra,
                           "-D", "metrics.reporter.prom.port=0"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"strom: error: cannot read {tmp_path / 'missing.key'} (security.ssl.internal.key): No such file or "
        "directory; check the path and its permissions"
    ]


def test_strom_run_hands_internal_tls_to_its_taskmanagers_and_slots(material: Material, tmp_path: Path):
    """The mini-cluster of `strom run`: keys given with -D reach its TaskManager processes, whose slot
    processes exchange the keyed records over TLS data connections."""
    out = tmp_path / "out"
    job = Path(ROOT) / "tests" / "engine" / "keyed_sums_job.py"
    keys = pem_tls_keys("internal", material.crt, material.key, material.ca_file)
    dashes = [arg for k, v in keys.items() for arg in ("-D", f"{k}={v}")]
    env = dict(PYTHONPATH=os.pathsep.join([str(Path(ROOT) / "runtime-image"), ROOT]), PATH="/usr/bin:/bin",
               HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "strom.cli", "run", str(job), str(out), "3000", "2", *dashes],
                          capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    assert final_sums(out) == reference(3000)


def test_the_mini_cluster_hands_tls_keys_to_its_taskmanagers_in_a_private_file_not_on_the_command_line(
        material: Material, tmp_path: Path):
    """A -D argument shows in `ps` to every user of the machine: the keys (passwords among them) travel in a
    configuration file only this user can read, removed when the cluster closes."""
    import stat

    import yaml
    from strom.common.configuration import Configuration
    from strom.runtime.minicluster import MiniCluster

    keys = pem_tls_keys("internal", material.crt, material.key, material.ca_file)
    conf = Configuration()
    for key, value in keys.items():
        conf.set(key, value)
    with MiniCluster(conf) as cluster:
        args = cluster._tls_config_args()
        assert args[0] == "--config" and len(args) == 2
        path = Path(args[1])
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        written = yaml.safe_load(path.read_text())
        assert {k: str(v).lower() for k, v in written.items()} == {k: str(v).lower() for k, v in keys.items()}
        assert cluster._tls_config_args() == args  # one file for every TaskManager
    assert not path.parent.exists()
