"""Whether the JobManager Service that TaskManagers dial has a ready endpoint, and the condition saying so.

TaskManagers whose JobManager is away keep retrying registration (the engine does that), so their
pods run and look healthy while the job cannot start, and Kubernetes says nothing about it. The
operator says it: `jobmanager_endpoint` reads the JobManager Deployment and the job's pods (pure,
called by the observer), and `with_jobmanager_condition` folds that into the FlinkJob's
`JobManagerReady` condition (called by the lifecycle). The reconciler posts a condition's change as
an Event, so the user gets one Warning `JobManagerNotReady` naming the Service and what its pod is
stuck in, and one Normal `JobManagerReady` when it recovers, not one per reconciliation.

While a JobManager starts, TaskManagers often run first: within STARTUP_GRACE_S of the JobManager
pod's creation only a state the pod will not leave by itself (CrashLoopBackOff, a missing Secret,
an image that cannot be pulled, ...) is reported.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from strom_operator.crd.status import FlinkJobStatus, parse_time
from strom_operator.observe.observed import POD_PROBLEM_REASONS, JobManagerEndpoint
from strom_operator.resources.labels import FlinkJobRef, jobmanager_name

CONDITION = "JobManagerReady"
NOT_READY = "JobManagerNotReady"
STARTUP_GRACE_S = 60.0


def _component(pod: dict[str, Any]) -> str | None:
    return (pod["metadata"].get("labels") or {}).get("app.kubernetes.io/component")


def _running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")


def _container_state(pod: dict[str, Any]) -> tuple[str, bool]:
    """What the pod is doing, in words, and whether it is a state the pod will not leave by itself."""
    name, status = pod["metadata"]["name"], pod.get("status") or {}
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            reason = cond.get("reason") or "not scheduled"
            detail = f" ({cond['message']})" if cond.get("message") else ""
            return f"JobManager pod {name} is Pending: {reason}{detail}", reason in POD_PROBLEM_REASONS
    statuses = [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    for cs in statuses:
        state = cs.get("state") or {}
        waiting = state.get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
            if reason == "CrashLoopBackOff":
                # The back-off message counts up; the last exit says why, and stays the same per cause.
                last = (cs.get("lastState") or {}).get("terminated") or {}
                detail = f" (last exit: {last.get('reason') or 'exit'}, code {last['exitCode']})" \
                    if "exitCode" in last else ""
            else:
                detail = f" ({waiting['message']})" if waiting.get("message") else ""
            return f"JobManager pod {name} is waiting: {reason}{detail}", reason in POD_PROBLEM_REASONS
    for cs in statuses:
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated:
            return (f"JobManager pod {name} exited: {terminated.get('reason') or 'terminated'}, "
                    f"code {terminated.get('exitCode')}"), False
    if status.get("phase") == "Running":
        return f"JobManager pod {name} is running, not ready (its REST API does not answer the probe)", False
    return f"JobManager pod {name} is {status.get('phase') or 'Pending'}", False


def _age_s(meta: dict[str, Any], now: datetime) -> float | None:
    created = parse_time(meta.get("creationTimestamp"))
    return (now - created).total_seconds() if created is not None else None


def jobmanager_endpoint(ref: FlinkJobRef, deployment: dict[str, Any] | None, pods: list[dict[str, Any]], *,
                        now: datetime) -> JobManagerEndpoint | None:
    """The JobManager Service's readiness as TaskManagers see it; None when no JobManager Deployment
    exists (suspended, or between an upgrade's deletion and deployment: nothing is expected to answer).
    `pods`: the job's pods (any component)."""
    if deployment is None:
        return None
    service = f"{ref.namespace}/{jobmanager_name(ref)}"
    if int((deployment.get("status") or {}).get("readyReplicas") or 0) > 0:
        return JobManagerEndpoint(service, "Ready")
    if not any(_running(p) for p in pods if _component(p) == "taskmanager"):
        return JobManagerEndpoint(service, "Starting")  # no one waits for it yet
    jobmanagers = [p for p in pods if _component(p) == "jobmanager" and not p["metadata"].get("deletionTimestamp")]
    if jobmanagers:
        pod = max(jobmanagers, key=lambda p: p["metadata"].get("creationTimestamp") or "")
        cause, stuck = _container_state(pod)
        age = _age_s(pod["metadata"], now)
    else:
        cause, stuck = "no JobManager pod exists", False
        age = _age_s(deployment["metadata"], now)
    if not stuck and (age is None or age <= STARTUP_GRACE_S):
        return JobManagerEndpoint(service, "Starting", cause)
    return JobManagerEndpoint(service, "NotReady", cause, stuck=stuck)


def not_ready_message(endpoint: JobManagerEndpoint) -> str:
    return (f"Service {endpoint.service} has no ready endpoint: {endpoint.cause}; "
            "the TaskManagers keep retrying registration")


def with_jobmanager_condition(status: FlinkJobStatus, endpoint: JobManagerEndpoint | None,
                              now: datetime) -> FlinkJobStatus:
    """`status` with its JobManagerReady condition following `endpoint`.

    The condition appears only once the endpoint was missed (a healthy job has none) and goes away
    with the JobManager Deployment. Once False, its message changes only for a state the pod will
    not leave by itself: a crash-looping pod passes through running and exited between back-offs,
    and each of those would otherwise be another Event.
    """
    current = status.condition(CONDITION)
    if endpoint is None:
        if current is None:
            return status
        return replace(status, conditions=tuple(c for c in status.conditions if c.type != CONDITION))
    if endpoint.state == "Ready":
        if current is None:
            return status
        return status.with_condition(CONDITION, "True", CONDITION, f"Service {endpoint.service} has a ready endpoint",
                                     now)
    if endpoint.state == "NotReady":
        if current is not None and current.status == "False" and current.reason == NOT_READY and not endpoint.stuck:
            return status
        return status.with_condition(CONDITION, "False", NOT_READY, not_ready_message(endpoint), now)
    return status  # Starting: too early to say
