"""Observation: fill `ObservedJob` from the JobManager REST API and the pods' states.

The Deployments and pods come from the operator's watches (owned_objects.py: kopf indexes), not from
a GET and a LIST per pass; the API is asked only where that view cannot answer.

Reads only; the lifecycle decides. The JobManager is asked only while the job's Deployments
exist (otherwise there is nothing to ask and `job_state` stays None, "no answer"). Pods stuck in
a state they will not leave by themselves become `PodProblem`s; since the pod status does not
say when a container started waiting, the first time the operator saw it counts. Whether the
JobManager Service has a ready endpoint while TaskManagers wait for it: jobmanager_readiness.py.

`SavepointRequests` remembers, per operator trigger id, the id the JobManager answered with and
the last result seen: a JobManager that exits when its job stops (application mode) can no longer
be asked, and the result seen just before is what the lifecycle needs.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from strom_operator.clients.jobmanager_client import JobManagerClient, JobManagerError, JobManagerUnreachable
from strom_operator.clients.jobmanager_endpoints import JobManagerEndpoints
from strom_operator.clients.kube_api import KubeApi
from strom_operator.crd.status import FlinkJobStatus, parse_time
from strom_operator.observe.jobmanager_readiness import jobmanager_endpoint
from strom_operator.observe.observed import POD_PROBLEM_REASONS, ObservedJob, PodProblem, SavepointTrigger
from strom_operator.observe.owned_objects import OwnedObjects
from strom_operator.resources.labels import FlinkJobRef, jobmanager_name, taskmanager_name

log = logging.getLogger(__name__)

SAVEPOINT_POLL_S = 0.1


@dataclass(slots=True)
class SavepointRequest:
    job_id: str
    request_id: str
    result: SavepointTrigger | None = None


class SavepointRequests:
    """Operator trigger id -> what the JobManager was asked and answered (in memory)."""

    def __init__(self) -> None:
        self._requests: dict[str, SavepointRequest] = {}
        self._watchers: set[asyncio.Task[None]] = set()

    def remember(self, trigger_id: str, job_id: str, request_id: str) -> None:
        self._requests[trigger_id] = SavepointRequest(job_id, request_id)

    def get(self, trigger_id: str) -> SavepointRequest | None:
        return self._requests.get(trigger_id)

    def forget_others(self, keep: str | None) -> None:
        for tid in [t for t in self._requests if t != keep]:
            del self._requests[tid]

    def watch(self, trigger_id: str, base_url: str, client: JobManagerClient, *, timeout_s: float) -> None:
        """Poll the trigger's result closely until it is final: the JobManager may be gone soon after."""
        task = asyncio.get_running_loop().create_task(self._watch(trigger_id, base_url, client, timeout_s))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _watch(self, trigger_id: str, base_url: str, client: JobManagerClient, timeout_s: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while asyncio.get_running_loop().time() < deadline:
            req = self._requests.get(trigger_id)
            if req is None or (req.result is not None and req.result.status != "IN_PROGRESS"):
                return
            try:
                result = await client.savepoint_status(base_url, req.job_id, req.request_id)
            except (JobManagerUnreachable, JobManagerError):
                return  # gone or refusing: the last result seen stays
            if result is not None:
                req.result = SavepointTrigger(trigger_id, result.status, result.location, result.failure_cause)
            await asyncio.sleep(SAVEPOINT_POLL_S)

    async def close(self) -> None:
        for task in list(self._watchers):
            task.cancel()
        if self._watchers:
            await asyncio.gather(*self._watchers, return_exceptions=True)


class PodProblemTracker:
    """(pod, reason) -> when the operator first saw it."""

    def __init__(self) -> None:
        self._first_seen: dict[tuple[str, str], datetime] = {}

    def since(self, pod: str, reason: str, now: datetime) -> datetime:
        return self._first_seen.setdefault((pod, reason), now)

    def keep_only(self, current: set[tuple[str, str]]) -> None:
        for key in [k for k in self._first_seen if k not in current]:
            del self._first_seen[key]


def pod_problems(pods: list[dict[str, Any]], tracker: PodProblemTracker, now: datetime) -> tuple[PodProblem, ...]:
    found: list[PodProblem] = []
    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        for cond in status.get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and \
                    cond.get("reason") == "Unschedulable":
                since = parse_time(cond.get("lastTransitionTime")) or tracker.since(name, "Unschedulable", now)
                found.append(PodProblem(name, "Unschedulable", since, cond.get("message", "")))
        for cs in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason")
            if reason in POD_PROBLEM_REASONS:
                found.append(PodProblem(name, reason, tracker.since(name, reason, now), waiting.get("message", "")))
    tracker.keep_only({(p.pod, p.reason) for p in found})
    return tuple(found)


class Observer:
    """`observe(ref, status)` -> ObservedJob, for one operator (shared by all FlinkJobs)."""

    def __init__(self, kube: KubeApi, client: JobManagerClient, endpoints: JobManagerEndpoints, *,
                 owned: OwnedObjects | None = None) -> None:
        self.kube = kube
        self.client = client
        self.endpoints = endpoints
        self.owned = owned or OwnedObjects()  # the watches' view; unattached it sends every read to the API
        self.savepoints: dict[str, SavepointRequests] = {}
        self.trackers: dict[str, PodProblemTracker] = {}

    def requests_of(self, ref: FlinkJobRef) -> SavepointRequests:
        return self.savepoints.setdefault(f"{ref.namespace}/{ref.name}", SavepointRequests())

    def forget(self, ref: FlinkJobRef) -> None:
        key = f"{ref.namespace}/{ref.name}"
        self.savepoints.pop(key, None)
        self.trackers.pop(key, None)
        self.owned.forget(ref)

    async def owned_objects(self, ref: FlinkJobRef) -> tuple[list[dict[str, Any] | None], list[dict[str, Any]]]:
        """([JobManager Deployment, TaskManager Deployment] (None: absent), the job's live pods): from the
        watches' view (owned_objects.py), or from the API where the view cannot answer."""
        view = self.owned.view(ref)
        if view is not None:
            deployments, pods = view
        else:
            deployments = [await self.kube.get("Deployment", ref.namespace, n)
                           for n in (jobmanager_name(ref), taskmanager_name(ref))]
            pods = await self.kube.list("Pod", ref.namespace, labels={"app.kubernetes.io/instance": ref.name,
                                                                       "app.kubernetes.io/name": "strom"})
            self.owned.compare(ref, deployments, pods)
        pods = [p for p in pods if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/component")
                in ("jobmanager", "taskmanager") and (p.get("status") or {}).get("phase") not in ("Succeeded",
                                                                                                 "Failed")]
        return deployments, pods

    async def observe(self, ref: FlinkJobRef, status: FlinkJobStatus, *, now: datetime | None = None
                      ) -> ObservedJob:
        now = now or datetime.now(UTC)
        deployments, pods = await self.owned_objects(ref)
        tracker = self.trackers.setdefault(f"{ref.namespace}/{ref.name}", PodProblemTracker())
        observed = ObservedJob(deployments_exist=any(d is not None for d in deployments) or bool(pods),
                               pod_problems=pod_problems(pods, tracker, now),
                               jobmanager_endpoint=jobmanager_endpoint(ref, deployments[0], pods, now=now))
        requests = self.requests_of(ref)
        pending = status.savepoints.pending
        requests.forget_others(pending.trigger_id if pending else None)
        cached = requests.get(pending.trigger_id) if pending else None
        if deployments[0] is None:
            return _with_cached_savepoint(observed, cached)
        base = self.endpoints.url(ref)
        try:
            jobs = await self.client.jobs_overview(base)
        except (JobManagerUnreachable, JobManagerError) as e:
            log.debug("%s/%s: JobManager not answering: %s", ref.namespace, ref.name, e)
            return _with_cached_savepoint(observed, cached)
        if not jobs:
            return _with_cached_savepoint(observed, cached)
        known = status.job_status.job_id
        job = next((j for j in jobs if j.job_id == known), None) or max(jobs, key=lambda j: j.start_time_ms)
        last_checkpoint = savepoint = None
        try:
            last_checkpoint = await self.client.latest_checkpoint(base, job.job_id)
            if pending is not None:
                request_id = cached.request_id if cached is not None else pending.trigger_id
                savepoint = await self.client.savepoint_status(base, job.job_id, request_id)
        except (JobManagerUnreachable, JobManagerError) as e:
            log.debug("%s/%s: JobManager stopped answering: %s", ref.namespace, ref.name, e)
        if savepoint is not None and pending is not None:
            savepoint = SavepointTrigger(pending.trigger_id, savepoint.status, savepoint.location,
                                         savepoint.failure_cause)
            if cached is not None:
                cached.result = savepoint
        elif cached is not None:
            savepoint = cached.result
        start = datetime.fromtimestamp(job.start_time_ms / 1000, UTC) if job.start_time_ms > 0 else None
        return replace(observed, deployments_exist=True, job_id=job.job_id, job_state=job.state, start_time=start,
                       last_checkpoint=last_checkpoint, savepoint=savepoint)


def _with_cached_savepoint(observed: ObservedJob, cached: SavepointRequest | None) -> ObservedJob:
    if cached is None or cached.result is None:
        return observed
    return replace(observed, savepoint=cached.result)
