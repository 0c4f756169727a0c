"""A session cluster of real processes on loopback for integration tests: `strom jobmanager`
and `strom taskmanager` subprocesses, and a REST client to drive and observe them."""

from __future__ import annotations

import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "runtime-image"), env.get("PYTHONPATH", "")])
    return env


def wait_until(condition: Any, timeout: float = 30, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout} s")
        time.sleep(0.05)


class SessionCluster:
    def __init__(
        self,
        *,
        taskmanagers: int,
        slots: int,
        extra: tuple[str, ...] = (),
        rest_tls: ssl.SSLContext | None = None,
        client_args: tuple[str, ...] = (),
    ) -> None:
        self.extra = extra
        self.rest_tls = rest_tls  # HTTPS (security.ssl.rest.enabled): how `get` reaches the REST API
        self.client_args = client_args  # what `cli` adds to every client command (e.g. --config of TLS keys)
        self._start_jobmanager(rpc_port=0, rest_port=0)
        self.tms: list[subprocess.Popen[str]] = []
        self.tm_metrics_ports: list[int] = []
        for _ in range(taskmanagers):
            self.add_taskmanager(slots)
        wait_until(lambda: self.get("/overview")["taskmanagers"] == taskmanagers, what="TaskManagers registered")

    def _start_jobmanager(self, *, rpc_port: int, rest_port: int) -> None:
        self.jm = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "strom.cli",
                "jobmanager",
                "-D",
                f"rest.port={rest_port}",
                "-D",
                f"jobmanager.rpc.port={rpc_port}",
                "-D",
                "heartbeat.interval=500",
                "-D",
                "heartbeat.timeout=3000",
                "-D",
                "metrics.reporter.prom.port=0",
                *self.extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=_env(),
        )
        line = self.jm.stdout.readline()  # type: ignore[union-attr]
        m = re.search(r"rpc port (\d+), rest port (\d+), metrics port (\d+)", line)
        if not m:
            self.jm.kill()
            raise RuntimeError(f"JobManager did not start: {line!r}")
        self.rpc_port, self.rest_port, self.metrics_port = int(m.group(1)), int(m.group(2)), int(m.group(3))

    def kill_jobmanager(self) -> None:
        """kill -9 the JobManager."""
        self.jm.kill()
        self.jm.wait(10)
        if self.jm.stdout is not None:
            self.jm.stdout.close()

    def restart_jobmanager(self) -> None:
        """A new JobManager on the same RPC and REST ports (where the TaskManagers and clients look)."""
        self._start_jobmanager(rpc_port=self.rpc_port, rest_port=self.rest_port)

    def add_taskmanager(self, slots: int) -> subprocess.Popen[str]:
        tm_id = f"tm-{len(self.tms)}"
        tm = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "strom.cli",
                "taskmanager",
                "--jobmanager",
                f"127.0.0.1:{self.rpc_port}",
                "-D",
                f"taskmanager.numberOfTaskSlots={slots}",
                "-D",
                f"taskmanager.resource-id={tm_id}",
                "-D",
                "metrics.reporter.prom.port=0",
                *self.extra,
                "--log-level",
                "WARNING",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            start_new_session=True,
        )
        line = tm.stderr.readline()  # type: ignore[union-attr]
        m = re.search(r"metrics port (\d+)", line)
        self.tm_metrics_ports.append(int(m.group(1)) if m else 0)
        self.tms.append(tm)
        return tm

    def get(self, path: str) -> Any:
        scheme = "https" if self.rest_tls is not None else "http"
        url = f"{scheme}://127.0.0.1:{self.rest_port}{path}"
        with urllib.request.urlopen(url, timeout=10, context=self.rest_tls) as r:
            return json.loads(r.read())

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "strom.cli", *args, *self.client_args,
             "--jobmanager", f"127.0.0.1:{self.rest_port}"],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=timeout,
        )

    def job_state(self, job_id: str) -> str:
        return self.get(f"/jobs/{job_id}")["state"]

    def wait_for_state(self, job_id: str, states: tuple[str, ...], timeout: float = 60) -> str:
        return wait_until(lambda: (s := self.job_state(job_id)) in states and s, timeout, f"job {job_id} in {states}")

    def kill_taskmanager(self, tm: subprocess.Popen[str]) -> None:
        """kill -9 the TaskManager and its slot processes (its process group)."""
        os.killpg(tm.pid, signal.SIGKILL)
        tm.wait(10)

    def close(self) -> None:
        for tm in self.tms:
            if tm.poll() is None:
                try:
                    os.killpg(tm.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self.jm.terminate()
        for p in [*self.tms, self.jm]:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        for p in [self.jm, *self.tms]:
            for stream in (p.stdout, p.stderr):
                if stream is not None:
                    stream.close()
