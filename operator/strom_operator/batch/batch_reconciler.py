"""A batch FlinkJob's reconciliation: observe the driver pod -> `next_batch_step` -> perform -> write status.

The decisions are batch_lifecycle's; this module talks to the Kubernetes API (kube_api.KubeApi):
it reads the driver pod and the executor pods, applies the objects of a submission, deletes a
replaced driver and the executor pods of ended drivers (found by their labels, since Spark does
not delete them when the driver crashes), and hands the step's status to the streaming
reconciler's status writer (same merge patch, events on condition changes, metrics). The
streaming Reconciler calls `step` for FlinkJobs whose mode is batch, under its per-FlinkJob lock.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from strom_operator.batch.batch_lifecycle import next_batch_step
from strom_operator.batch.batch_status import BatchStatus
from strom_operator.batch.batch_steps import BatchStep, CleanupExecutors, CreateDriver, DeleteDriver
from strom_operator.batch.driver import driver_objects
from strom_operator.batch.names import DRIVER, DRIVER_POD_LABEL, EXECUTOR, batch_selector
from strom_operator.batch.observed_driver import ObservedBatch, executor_running, observe_driver
from strom_operator.clients.kube_api import KubeApi, KubeApiError
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.sql_admission import SqlVerdict
from strom_operator.lifecycle.steps import Wait
from strom_operator.resources.labels import FlinkJobRef

log = logging.getLogger(__name__)

StatusWriter = Callable[[Mapping[str, Any], FlinkJobStatus, FlinkJobStatus, datetime], Awaitable[None]]
EventPoster = Callable[[Mapping[str, Any], str, str, str], None]


def is_batch(spec: FlinkJobSpec, status: FlinkJobStatus) -> bool:
    """Batch by the mode it was first reconciled with: a FlinkJob never switches between the two
    reconcilers (a changed mode is reported as an invalid spec by the one that owns the job)."""
    reconciled = status.reconciliation.last_reconciled_spec
    return (reconciled or {}).get("mode", spec.mode) == "batch"


class BatchReconciler:
    def __init__(self, kube: KubeApi, *, write_status: StatusWriter, post_event: EventPoster) -> None:
        self.kube = kube
        self.write_status = write_status
        self.post_event = post_event

    async def observe(self, ref: FlinkJobRef, batch: BatchStatus) -> ObservedBatch:
        if not batch.driver_pod:
            return ObservedBatch(None)
        pod = await self.kube.get("Pod", ref.namespace, batch.driver_pod)
        executors = await self._executor_pods(ref, batch.driver_pod)
        return ObservedBatch(observe_driver(pod), sum(1 for p in executors if executor_running(p)))

    async def step(self, body: Mapping[str, Any], spec: FlinkJobSpec, status: FlinkJobStatus, *,
                   sql: SqlVerdict | None = None) -> float | None:
        """One step; the delay before the next pass when the step waits, None to go on at once. `sql`: the
        engine's verdict on a SQL FlinkJob's script (a bad one is an invalid spec: no driver pod)."""
        meta = body["metadata"]
        ref = FlinkJobRef.from_metadata(meta)
        observed = await self.observe(ref, BatchStatus.from_dict(status.batch))
        now = datetime.now(UTC)
        step = next_batch_step(spec, status, observed, now=now, name=ref.name, namespace=ref.namespace,
                               generation=meta.get("generation"), sql=sql)
        await self.perform(ref, body, step)
        await self.write_status(body, status, step.status, now)
        if isinstance(step, Wait) or step.requeue_after > 0:
            return step.requeue_after
        return None

    async def perform(self, ref: FlinkJobRef, body: Mapping[str, Any], step: BatchStep) -> None:
        if isinstance(step, CreateDriver):
            for obj in driver_objects(ref, step.spec, submission=step.submission):
                await self._apply(obj)
            pod = BatchStatus.from_dict(step.status.batch).driver_pod
            self.post_event(body, "Normal", "DriverSubmitted", f"driver pod {pod} created")
        elif isinstance(step, DeleteDriver):
            await self.kube.delete("Pod", ref.namespace, step.driver_pod)
            await self.cleanup_executors(ref, body, step.driver_pod)
        elif isinstance(step, CleanupExecutors):
            await self.cleanup_executors(ref, body, step.driver_pod)
        elif isinstance(step, Wait):
            log.debug("%s/%s: %s", ref.namespace, ref.name, step.reason)

    async def _apply(self, obj: dict[str, Any]) -> None:
        if obj["kind"] != "Pod":
            await self.kube.apply(obj)
            return
        try:  # a pod's spec cannot be patched: one that exists is this submission's, from an earlier pass
            await self.kube.create(obj)
        except KubeApiError as e:
            if e.status != 409:
                raise

    async def _executor_pods(self, ref: FlinkJobRef, driver_pod: str | None) -> list[dict[str, Any]]:
        labels = batch_selector(ref, EXECUTOR)
        if driver_pod is not None:
            labels[DRIVER_POD_LABEL] = driver_pod
        return await self.kube.list("Pod", ref.namespace, labels=labels)

    async def cleanup_executors(self, ref: FlinkJobRef, body: Mapping[str, Any], driver_pod: str | None) -> int:
        """Delete the executor pods of one driver (None: of every driver of the job); how many went."""
        deleted = 0
        for pod in await self._executor_pods(ref, driver_pod):
            if await self.kube.delete("Pod", ref.namespace, pod["metadata"]["name"]):
                deleted += 1
        if deleted:
            whose = f"of driver pod {driver_pod}" if driver_pod else "of the job"
            self.post_event(body, "Normal", "ExecutorsDeleted", f"deleted {deleted} executor pods {whose}")
        return deleted

    async def finalize(self, body: Mapping[str, Any], status: FlinkJobStatus) -> str:
        """The deletion of a batch FlinkJob: its driver pods and every executor pod go now (the rest, and
        anything missed, with the FlinkJob through ownerReferences)."""
        ref = FlinkJobRef.from_metadata(body["metadata"])
        now = datetime.now(UTC)
        if status.lifecycle_state != "DELETING":
            await self.write_status(body, status, replace(status, lifecycle_state="DELETING"), now)
        drivers = await self.kube.list("Pod", ref.namespace, labels=batch_selector(ref, DRIVER))
        for pod in drivers:
            await self.kube.delete("Pod", ref.namespace, pod["metadata"]["name"])
        executors = await self.cleanup_executors(ref, body, None)
        return f"deleted ({len(drivers)} driver and {executors} executor pods removed)"
