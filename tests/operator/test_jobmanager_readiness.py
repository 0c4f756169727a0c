"""A JobManager Service without a ready endpoint while TaskManagers wait: decided from pods, told by one Event."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import Any

from strom_operator.clients.jobmanager_client import JobManagerUnreachable
from strom_operator.clients.jobmanager_endpoints import JobManagerEndpoints
from strom_operator.crd.status import FlinkJobStatus, format_time
from strom_operator.lifecycle.state_machine import next_step
from strom_operator.observe.jobmanager_readiness import STARTUP_GRACE_S, jobmanager_endpoint, with_jobmanager_condition
from strom_operator.observe.observed import JobManagerEndpoint
from strom_operator.reconcile.observer import Observer
from strom_operator.reconcile.reconciler import Reconciler
from strom_operator.resources.labels import FlinkJobRef

from tests.operator.fakes import T0, deploy_stable, later

REF = FlinkJobRef("wordcount", "streams", "uid-1")
SERVICE = "streams/wordcount-jobmanager"


def _pod(name: str, component: str, *, phase: str = "Running", state: dict[str, Any] | None = None,
         last_exit: dict[str, Any] | None = None, age_s: float = 5.0, scheduled: dict[str, str] | None = None
         ) -> dict[str, Any]:
    container: dict[str, Any] = {"name": component, "ready": False, "state": state or {"running": {}}}
    if last_exit is not None:
        container["lastState"] = {"terminated": last_exit}
    conditions = [{"type": "PodScheduled", "status": "False", **scheduled}] if scheduled else []
    return {"metadata": {"name": name, "labels": {"app.kubernetes.io/component": component},
                         "creationTimestamp": format_time(T0 - timedelta(seconds=age_s))},
            "status": {"phase": phase, "conditions": conditions, "containerStatuses": [container]}}


def _deployment(ready: int, age_s: float = 5.0) -> dict[str, Any]:
    created = format_time(T0 - timedelta(seconds=age_s))
    return {"metadata": {"name": "wordcount-jobmanager", "creationTimestamp": created},
            "status": {"replicas": 1, "readyReplicas": ready}}


TM = _pod("wordcount-taskmanager-a", "taskmanager")
CRASH_LOOP = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s restarting failed container"}}
ERROR_EXIT = {"reason": "Error", "exitCode": 1}


def test_crash_looping_jobmanager_with_waiting_taskmanagers_is_not_ready_at_once():
    jm = _pod("wordcount-jobmanager-x", "jobmanager", state=CRASH_LOOP, last_exit=ERROR_EXIT)
    endpoint = jobmanager_endpoint(REF, _deployment(0), [jm, TM], now=T0)
    assert endpoint == JobManagerEndpoint(SERVICE, "NotReady", "JobManager pod wordcount-jobmanager-x is waiting: "
                                          "CrashLoopBackOff (last exit: Error, code 1)", stuck=True)


def test_missing_secret_names_the_waiting_reason_and_its_message():
    jm = _pod("wordcount-jobmanager-x", "jobmanager", phase="Pending", state={"waiting": {
        "reason": "CreateContainerConfigError", "message": 'secret "s3-creds" not found'}})
    endpoint = jobmanager_endpoint(REF, _deployment(0), [jm, TM], now=T0)
    assert endpoint is not None and (endpoint.state, endpoint.stuck) == ("NotReady", True)
    assert endpoint.cause == ('JobManager pod wordcount-jobmanager-x is waiting: CreateContainerConfigError '
                              '(secret "s3-creds" not found)')


def test_an_unschedulable_jobmanager_pod_is_reported_with_the_schedulers_message():
    jm = _pod("wordcount-jobmanager-x", "jobmanager", phase="Pending", state={"waiting": {"reason": "Pending"}},
              scheduled={"reason": "Unschedulable", "message": "0/3 nodes have enough memory"})
    endpoint = jobmanager_endpoint(REF, _deployment(0), [jm, TM], now=T0)
    assert endpoint is not None and endpoint.stuck
    assert endpoint.cause == ("JobManager pod wordcount-jobmanager-x is Pending: Unschedulable "
                              "(0/3 nodes have enough memory)")


def test_a_starting_jobmanager_gets_the_grace_period_then_is_reported():
    young = _pod("wordcount-jobmanager-x", "jobmanager", age_s=STARTUP_GRACE_S - 1)
    old = _pod("wordcount-jobmanager-x", "jobmanager", age_s=STARTUP_GRACE_S + 1)
    assert jobmanager_endpoint(REF, _deployment(0), [young, TM], now=T0).state == "Starting"
    late = jobmanager_endpoint(REF, _deployment(0), [old, TM], now=T0)
    assert (late.state, late.stuck) == ("NotReady", False)
    assert late.cause.startswith("JobManager pod wordcount-jobmanager-x is running, not ready")


def test_no_jobmanager_pod_at_all_counts_from_the_deployment():
    assert jobmanager_endpoint(REF, _deployment(0, age_s=5), [TM], now=T0).state == "Starting"
    endpoint = jobmanager_endpoint(REF, _deployment(0, age_s=STARTUP_GRACE_S + 1), [TM], now=T0)
    assert (endpoint.state, endpoint.cause) == ("NotReady", "no JobManager pod exists")


def test_nothing_to_say_without_running_taskmanagers_and_ready_with_a_ready_replica():
    jm = _pod("wordcount-jobmanager-x", "jobmanager", state=CRASH_LOOP, last_exit=ERROR_EXIT)
    pending_tm = _pod("wordcount-taskmanager-a", "taskmanager", phase="Pending")
    assert jobmanager_endpoint(REF, _deployment(0), [jm, pending_tm], now=T0).state == "Starting"
    assert jobmanager_endpoint(REF, _deployment(1), [jm, TM], now=T0) == JobManagerEndpoint(SERVICE, "Ready")
    assert jobmanager_endpoint(REF, None, [TM], now=T0) is None


def _changes(endpoints: list[JobManagerEndpoint | None]) -> list[tuple[str, str, str]]:
    """Fold the endpoints in turn; the condition changes, which the reconciler posts as Events."""
    status, seen = FlinkJobStatus(), []
    for i, endpoint in enumerate(endpoints):
        new = with_jobmanager_condition(status, endpoint, later(i))
        before, after = status.condition("JobManagerReady"), new.condition("JobManagerReady")
        if after is not None and (before is None or (before.status, before.reason, before.message) != (
                after.status, after.reason, after.message)):
            seen.append((after.status, after.reason, after.message))
        status = new
    return seen


def test_a_crash_loop_is_one_warning_and_recovery_one_normal_change():
    stuck = JobManagerEndpoint(SERVICE, "NotReady", "JobManager pod p is waiting: CrashLoopBackOff", stuck=True)
    between = JobManagerEndpoint(SERVICE, "NotReady", "JobManager pod p exited: Error, code 1")
    ready = JobManagerEndpoint(SERVICE, "Ready")
    assert _changes([stuck, between, stuck, between, stuck, ready, ready]) == [
        ("False", "JobManagerNotReady", "Service streams/wordcount-jobmanager has no ready endpoint: JobManager pod "
         "p is waiting: CrashLoopBackOff; the TaskManagers keep retrying registration"),
        ("True", "JobManagerReady", "Service streams/wordcount-jobmanager has a ready endpoint")]


def test_a_new_stuck_reason_is_a_new_change():
    loop = JobManagerEndpoint(SERVICE, "NotReady", "JobManager pod p is waiting: CrashLoopBackOff", stuck=True)
    secret = JobManagerEndpoint(SERVICE, "NotReady", "JobManager pod q is waiting: CreateContainerConfigError",
                                stuck=True)
    assert [m for _, _, m in _changes([loop, secret])] == [
        f"Service {SERVICE} has no ready endpoint: {e.cause}; the TaskManagers keep retrying registration"
        for e in (loop, secret)]


def test_a_healthy_job_never_gets_the_condition_and_it_goes_with_the_deployment():
    ready, starting = JobManagerEndpoint(SERVICE, "Ready"), JobManagerEndpoint(SERVICE, "Starting")
    status = FlinkJobStatus()
    for endpoint in (starting, ready, None, ready):
        status = with_jobmanager_condition(status, endpoint, T0)
    assert status.condition("JobManagerReady") is None
    stuck = JobManagerEndpoint(SERVICE, "NotReady", "JobManager pod p is waiting: CrashLoopBackOff", stuck=True)
    status = with_jobmanager_condition(with_jobmanager_condition(status, stuck, T0), starting, T0)
    assert status.condition("JobManagerReady").status == "False"  # too early to say is not "recovered"
    assert with_jobmanager_condition(status, None, T0).condition("JobManagerReady") is None  # e.g. suspended


def test_the_lifecycle_folds_the_condition_into_whatever_step_comes_next():
    spec, status, cluster = deploy_stable()
    stuck = JobManagerEndpoint(SERVICE, "NotReady", "JobManager pod p is waiting: CrashLoopBackOff", stuck=True)
    step = next_step(spec, status, replace(cluster.observe(), jobmanager_endpoint=stuck), now=later(60))
    condition = step.status.condition("JobManagerReady")
    assert (condition.status, condition.reason) == ("False", "JobManagerNotReady")
    assert step.status.condition("Ready") == status.condition("Ready")  # the lifecycle's own conditions stay


class _StatusSink:
    async def merge_patch(self, *_: Any, **__: Any) -> None:
        return None


def test_the_reconciler_posts_the_change_once_as_a_warning_and_recovery_as_normal():
    events: list[tuple[str, str, str]] = []
    reconciler = Reconciler(_StatusSink(), None, None,  # type: ignore[arg-type] - only the status write is used
                            post_event=lambda _body, type_, reason, message: events.append((type_, reason, message)))
    body = {"metadata": {"name": "wordcount", "namespace": "streams"}}
    stuck = JobManagerEndpoint(SERVICE, "NotReady", "JobManager pod p is waiting: CrashLoopBackOff", stuck=True)
    statuses = [FlinkJobStatus()]
    for endpoint in (stuck, stuck, JobManagerEndpoint(SERVICE, "Ready")):
        statuses.append(with_jobmanager_condition(statuses[-1], endpoint, T0))
    for before, after in zip(statuses, statuses[1:], strict=False):
        asyncio.run(reconciler._write_status(body, before, after, T0))
    assert [(t, r) for t, r, _ in events] == [("Warning", "JobManagerNotReady"), ("Normal", "JobManagerReady")]
    assert SERVICE in events[0][2] and "no ready endpoint" in events[0][2] and "CrashLoopBackOff" in events[0][2]


class _Pods:
    """The Kubernetes API as the observer reads it: the two Deployments and the job's pods."""

    def __init__(self, deployments: dict[str, dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.deployments, self.pods = deployments, pods

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.deployments.get(name) if kind == "Deployment" else None

    async def list(self, kind: str, namespace: str, *, labels: Any = None) -> list[dict[str, Any]]:
        return [p for p in self.pods if kind == "Pod"]


class _Unreachable:
    async def jobs_overview(self, base_url: str) -> Any:
        raise JobManagerUnreachable(f"{base_url}: connection refused")


def test_the_observer_reports_the_endpoint_while_the_jobmanager_does_not_answer():
    jm = _pod("wordcount-jobmanager-x", "jobmanager", state=CRASH_LOOP, last_exit=ERROR_EXIT)
    kube = _Pods({"wordcount-jobmanager": _deployment(0), "wordcount-taskmanager": _deployment(1)}, [jm, TM])
    observer = Observer(kube, _Unreachable(), JobManagerEndpoints(map_file=""))  # type: ignore[arg-type]
    observed = asyncio.run(observer.observe(REF, FlinkJobStatus(), now=T0))
    assert observed.job_state is None and observed.jobmanager_endpoint is not None
    assert (observed.jobmanager_endpoint.state, observed.jobmanager_endpoint.service) == ("NotReady", SERVICE)
