"""Observation from watches, and passes only when due: what the operator asks of the API server.

In-process, the reconciler against the API (`k8s`) through a KubeApi that counts its requests: a
steady-state pass with the watches' view (owned_objects.py, filled here from the API the way kopf's
index handlers fill it) reads the FlinkJob and nothing else; without the view the same pass also
GETs both Deployments and LISTs the pods. Right after its own
apply, a pass reads the API rather than a view the watch has not updated yet.

Then the real operator (kopf) against an emulator of its own whose request log tells kopf's watches
(User-Agent kopf/...) from the operator's calls, with uncapped delays: a steady FlinkJob is observed
with no GET or LIST of Deployments and pods; a first deployment the API refuses (403, as RBAC would)
is attempted once per back-off interval (5 s, then 10 s: action_failures.retry_delay), not once per
status patch, so its Warning Event starts at count 1.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from strom_operator.clients.action_failures import retry_delay
from strom_operator.clients.jobmanager_client import JobSummary
from strom_operator.clients.jobmanager_endpoints import JobManagerEndpoints
from strom_operator.clients.kube_api import KubeApi
from strom_operator.observe.owned_objects import OwnedObjects, index_entry
from strom_operator.reconcile.observer import Observer
from strom_operator.reconcile.reconciler import Reconciler
from strom_operator.resources.labels import FlinkJobRef

from tests.operator.fakes import spec_dict
from tests.operator.k8s_emulator import EmulatedCluster, Served, StromKubernetesEmulator
from tests.operator.operator_harness import Cluster, events_of, running_operator, wait_until

FILE_CHECKPOINTS = {"interval": "10 s", "dir": "file:///tmp/strom-watch-chk"}  # no S3 on the way to a deployment


class CountingKube(KubeApi):
    """The operator's client, logging (method, path, verb) of each request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[tuple[str, str, str]] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.log.append((method, path, kwargs.get("verb") or method.lower()))
        return await super().request(method, path, **kwargs)


class RunningJobManager:
    """A JobManager whose one job runs."""

    def __init__(self) -> None:
        self.started_ms = int(datetime.now(UTC).timestamp() * 1000)

    async def jobs_overview(self, base_url: str) -> list[JobSummary]:
        return [JobSummary("a" * 32, "wc", "RUNNING", self.started_ms)]

    async def latest_checkpoint(self, base_url: str, job_id: str) -> str | None:
        return None

    async def savepoint_status(self, base_url: str, job_id: str, request_id: str) -> Any:
        return None


async def watched(kube: KubeApi, namespace: str) -> tuple[dict[Any, list[Any]], dict[Any, list[Any]]]:
    """The indexes kopf keeps, as its index handlers (handlers.owned_deployments/owned_pods) fill them from a
    complete listing."""
    indexes: list[dict[Any, list[Any]]] = []
    for kind in ("Deployment", "Pod"):
        index: dict[Any, list[Any]] = {}
        for obj in await kube.list(kind, namespace):
            for key, value in index_entry(namespace, obj).items():
                index.setdefault(key, []).append(value)
        indexes.append(index)
    return indexes[0], indexes[1]


def owned_reads(log: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [r for r in log if r[0] == "GET" and ("/deployments" in r[1] or "/pods" in r[1])]


def test_a_steady_state_pass_reads_the_flinkjob_and_no_deployment_or_pod(own_namespace: Cluster) -> None:
    k8s = own_namespace  # the suite's operator would deploy the FlinkJob too (a 409 or one apply fewer here)
    name = f"steady-{uuid.uuid4().hex[:6]}"
    k8s.call(lambda k: k.create({"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
                                 "metadata": {"name": name, "namespace": k8s.namespace},
                                 "spec": spec_dict(checkpointing=FILE_CHECKPOINTS)}))
    kube = k8s.connect(CountingKube)
    client: Any = RunningJobManager()
    observer = Observer(kube, client, JobManagerEndpoints(map_file=""))
    reconciler = Reconciler(kube, client, observer)
    observer.owned.attach({}, {})  # primed and empty: no Deployment of this FlinkJob seen yet
    try:
        # The first pass looks at the API (the view was never checked against it) and deploys; the next
        # one reads its own apply from the API, not from the view the watch has not updated yet (it
        # would say "no Deployment": deploy again).
        k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        jobmanager = f"/apis/apps/v1/namespaces/{k8s.namespace}/deployments/{name}-jobmanager"
        assert [r[0] for r in kube.log if r[1] == jobmanager] == ["GET", "PATCH"]  # a first look: the API
        kube.log.clear()
        k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        assert {r[0] for r in kube.log if r[1] == jobmanager} == {"GET"}  # read, not applied again
        for _ in range(5):  # the watches catch up; passes until the job is STABLE
            observer.owned.attach(*k8s.loop.run_until_complete(watched(k8s.api, k8s.namespace)))
            k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
            if k8s.status(name).get("lifecycleState") == "STABLE":
                break
        assert k8s.status(name)["lifecycleState"] == "STABLE"

        observer.owned.attach(*k8s.loop.run_until_complete(watched(k8s.api, k8s.namespace)))
        kube.log.clear()
        k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        with_watches = list(kube.log)
        assert with_watches == [("GET", f"/apis/strom.io/v1beta1/namespaces/{k8s.namespace}/flinkjobs/{name}", "get")]

        polling = Reconciler(kube, client, Observer(kube, client, JobManagerEndpoints(map_file="")))  # no view
        kube.log.clear()
        k8s.loop.run_until_complete(polling.reconcile(k8s.namespace, name))
        # Without the view: both Deployments and the pods from the API (once per look at them in the pass).
        reads = {(r[1].rsplit("/", 1)[-1], r[2]) for r in owned_reads(kube.log)}
        assert reads == {(f"{name}-jobmanager", "get"), (f"{name}-taskmanager", "get"), ("pods", "list")}
        print(f"\nrequests per steady-state pass: polling {len(kube.log)} {kube.log}; "
              f"from the watches {len(with_watches)} {with_watches}")
    finally:
        k8s.loop.run_until_complete(kube.close())


# -- the operator (kopf) against an emulator of its own ---------------------------------------------

NAMESPACE = "watched"
REFUSED = "refused"  # the FlinkJob whose owned objects the API refuses to create


@pytest.fixture(scope="module")
def own_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmulatedCluster, StromKubernetesEmulator]]:
    cluster = EmulatedCluster(tmp_path_factory.mktemp("k8s-watch"), namespace=NAMESPACE).start()
    assert cluster.emulator is not None
    try:
        yield cluster, cluster.emulator
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def uncapped_operator(own_api: tuple[EmulatedCluster, StromKubernetesEmulator],
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    cluster, emulator = own_api
    work = tmp_path_factory.mktemp("operator-watch")
    url_map = work / "urls.json"  # every JobManager at a closed port: the job never answers, fast
    url_map.write_text(json.dumps({f"{NAMESPACE}/{n}-jobmanager": "http://127.0.0.1:9" for n in ("steady", REFUSED)}))

    def refuse(method: str, path: str, body: Any) -> tuple[int, str] | None:
        name = path.rsplit("/", 1)[-1] if method != "POST" else ((body or {}).get("metadata") or {}).get("name", "")
        if method in ("POST", "PATCH", "PUT") and name.startswith(f"{REFUSED}-"):
            return 403, (f'{path.split("/")[-2] if method != "POST" else path.rsplit("/", 1)[-1]} "{name}" is '
                         f'forbidden: User "system:serviceaccount:strom:strom-operator" cannot create it')
        return None

    emulator.refuse = refuse
    with running_operator(str(cluster.kubeconfig), NAMESPACE, work, url_map=url_map, max_requeue=None) as running:
        yield running
    emulator.refuse = None


def _call(cluster: EmulatedCluster, make: Any) -> Any:
    async def run() -> Any:
        api = KubeApi(cluster.url)
        try:
            return await make(api)
        finally:
            await api.close()
    return asyncio.run(run())


def _create(cluster: EmulatedCluster, name: str) -> None:
    _call(cluster, lambda k: k.create({"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
                                       "metadata": {"name": name, "namespace": NAMESPACE},
                                       "spec": spec_dict(checkpointing=FILE_CHECKPOINTS)}))


def _operators(served: list[Served]) -> list[Served]:
    """The operator's own calls; kopf's (its watches, listings, finalizer and annotation patches) say kopf/."""
    return [r for r in served if not r.user_agent.startswith("kopf/")]


def test_the_operator_observes_a_steady_flinkjob_without_reading_deployments_or_pods(
        own_api: tuple[EmulatedCluster, StromKubernetesEmulator], uncapped_operator: Any) -> None:
    cluster, emulator = own_api
    _create(cluster, "steady")
    flinkjob = f"/apis/strom.io/v1beta1/namespaces/{NAMESPACE}/flinkjobs/steady"
    wait_until(lambda: _call(cluster, lambda k: k.get("Deployment", NAMESPACE, "steady-taskmanager")),
               timeout=60, what="the Deployments", details=uncapped_operator.log)
    kopf_watches = {r.path for r in emulator.served if r.watch and r.user_agent.startswith("kopf/")}
    assert {f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", f"/api/v1/namespaces/{NAMESPACE}/pods"} <= kopf_watches

    start = time.monotonic()
    passes = lambda: [r for r in _operators(list(emulator.served))  # noqa: E731
                      if r.at > start and r.method == "GET" and r.path == flinkjob]
    wait_until(lambda: len(passes()) >= 3, timeout=60, what="three passes", details=uncapped_operator.log)
    window = [r for r in _operators(list(emulator.served)) if r.at > start]
    reads = [(r.method, r.path) for r in window
             if r.method == "GET" and ("/deployments" in r.path or "/pods" in r.path)]
    assert reads == [], reads
    _call(cluster, lambda k: k.delete("FlinkJob", NAMESPACE, "steady"))


def test_a_refused_first_deployment_is_tried_once_per_back_off_interval(
        own_api: tuple[EmulatedCluster, StromKubernetesEmulator], uncapped_operator: Any) -> None:
    cluster, emulator = own_api
    _create(cluster, REFUSED)
    attempts = lambda: [r for r in emulator.served if r.refused]  # noqa: E731 - one refused create per attempt
    first_count: list[int] = []

    def warning_count() -> int | None:
        events = events_of(_call(cluster, lambda k: k.list("Event", NAMESPACE)), REFUSED, None)
        counts = [e.get("count", 1) for e in events if e["reason"] == "Forbidden"]
        return counts[0] if counts else None

    def first_warning() -> bool:
        count = warning_count()
        if count is not None and not first_count:
            first_count.append(count)
        return count is not None

    wait_until(first_warning, timeout=60, what="the Forbidden Warning Event", details=uncapped_operator.log)
    assert len(attempts()) == 1 and first_count == [1], (attempts(), first_count)
    bound = retry_delay(1) + retry_delay(2) + 5.0  # until just before a fourth attempt would be due (20 s later)
    wait_until(lambda: len(attempts()) >= 3, timeout=bound + 30, what="three attempts", details=uncapped_operator.log)
    a1, a2, a3 = (r.at for r in attempts()[:3])
    assert retry_delay(1) <= a2 - a1 + 0.05 < retry_delay(1) + 3.0, (a1, a2, a3)
    assert retry_delay(2) <= a3 - a2 + 0.05 < retry_delay(2) + 3.0, (a1, a2, a3)
    wait_until(lambda: warning_count() == 3, timeout=10, what="the Warning counting three attempts")
    assert len(attempts()) == 3  # nothing in between: the status patches of each attempt started no pass
    ready = next(c for c in _call(cluster, lambda k: k.get("FlinkJob", NAMESPACE, REFUSED))["status"]["conditions"]
                 if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "Forbidden")
    emulator.refuse = None
    _call(cluster, lambda k: k.delete("FlinkJob", NAMESPACE, REFUSED))


def test_requests_are_logged_with_who_sent_them(own_api: tuple[EmulatedCluster, StromKubernetesEmulator]) -> None:
    cluster, emulator = own_api
    start = time.monotonic()
    _call(cluster, lambda k: k.list("Pod", NAMESPACE, labels={"test": "served-log"}))
    [listing] = [r for r in emulator.served if r.at >= start and r.query.get("labelSelector") == "test=served-log"]
    assert (listing.method, listing.path, listing.watch) == ("GET", f"/api/v1/namespaces/{NAMESPACE}/pods", False)
    assert not listing.user_agent.startswith("kopf/") and listing.refused is None


def test_the_index_keeps_a_flinkjobs_jobmanager_and_taskmanager_objects_only() -> None:
    def obj(component: str | None, *, name: str = "strom", instance: str | None = "wc") -> dict[str, Any]:
        labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": component,
                  "app.kubernetes.io/instance": instance}
        return {"metadata": {"name": f"wc-{component}", "labels": {k: v for k, v in labels.items() if v},
                             "managedFields": [{"manager": "strom-operator"}]},
                "status": {"phase": "Running"}}

    entry = index_entry("jobs", obj("taskmanager"))
    assert list(entry) == [("jobs", "wc")]
    assert entry[("jobs", "wc")] == {"metadata": {"name": "wc-taskmanager", "labels": {
        "app.kubernetes.io/name": "strom", "app.kubernetes.io/component": "taskmanager",
        "app.kubernetes.io/instance": "wc"}}, "status": {"phase": "Running"}}
    assert index_entry("jobs", obj("jobmanager")).keys() == {("jobs", "wc")}
    for other in (obj("driver"), obj(None), obj("taskmanager", name="spark"), obj("taskmanager", instance=None)):
        assert index_entry("jobs", other) == {}
    assert index_entry(None, obj("taskmanager")) == {}


def test_the_view_answers_only_once_the_watch_shows_the_operators_own_change() -> None:
    ref = FlinkJobRef("wc", "jobs", "uid-1")
    now = [0.0]
    owned = OwnedObjects(resync_s=300, clock=lambda: now[0])
    assert owned.view(ref) is None  # not attached: the API answers
    jobmanager = {"metadata": {"name": "wc-jobmanager"}, "status": {}}
    deployments: dict[Any, list[Any]] = {("jobs", "wc"): [jobmanager]}
    owned.attach(deployments, {})
    assert owned.view(ref) is None  # not yet compared with the API
    assert owned.compare(ref, [jobmanager, None], [])
    assert owned.view(ref) == ([jobmanager, None], [])
    owned.expect(ref, jobmanager=False)  # the operator deleted the Deployments; the watch has not said so
    assert owned.view(ref) is None
    deployments.clear()
    assert owned.view(ref) == ([None, None], [])
    deployments[("jobs", "wc")] = [jobmanager]  # someone else's Deployment of that name: no expectation is left
    assert owned.view(ref) == ([jobmanager, None], [])


def test_the_view_is_checked_against_the_api_every_resync_and_unused_while_they_disagree() -> None:
    ref = FlinkJobRef("wc", "jobs", "uid-1")
    now = [0.0]
    owned = OwnedObjects(resync_s=300, clock=lambda: now[0])
    pod = {"metadata": {"name": "wc-taskmanager-1", "labels": {"app.kubernetes.io/component": "taskmanager"}}}
    pods: dict[Any, list[Any]] = {("jobs", "wc"): [pod]}
    owned.attach({}, pods)
    assert owned.compare(ref, [None, None], [pod])
    now[0] = 300.0
    assert owned.view(ref) == ([None, None], [pod])
    now[0] = 300.5  # time for the API again
    assert owned.view(ref) is None
    # The pod went while no watch was open: the API does not show it, the index (never told) still does.
    assert not owned.compare(ref, [None, None], [])
    assert owned.view(ref) is None  # so the API answers, pass after pass, ...
    pods.clear()
    assert owned.compare(ref, [None, None], [])  # ... until the index shows the same
    assert owned.view(ref) == ([None, None], [])
    driver = {"metadata": {"name": "wc-driver-1", "labels": {"app.kubernetes.io/component": "driver"}}}
    assert owned.compare(ref, [None, None], [driver])  # not a JobManager or TaskManager: not compared
