"""One FlinkJob's reconciliation: observe -> `next_step` -> perform the step -> write the status.

The decisions are the pure functions' (lifecycle.next_step, deletion.next_deletion_step); this
module only performs what a step says, with the Kubernetes API, the JobManager REST API and the
savepoint storage, then writes `step.status` as a merge patch of the status subresource. The
autoscaler's evaluations (`autoscale`) take the same lock and write their decision the same way. A pass
repeats that until a step asks to wait; it returns how long. Passes of one FlinkJob never
overlap (a lock per FlinkJob), whoever calls: a kopf handler, the daemon, the deletion handler.
Events are posted for what a user wants to see in `kubectl describe`: condition changes (an
invalid spec with its field path, savepoint failures, rollbacks, a JobManager Service without a ready
endpoint), deployments, disposals.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from strom_operator.autoscaler.scaling import parallelism_overrides_value
from strom_operator.autoscaler.settings import AutoscalerSettings
from strom_operator.autoscaling import evaluate_autoscaler
from strom_operator.batch.batch_reconciler import BatchReconciler, is_batch
from strom_operator.builders import build_job_objects, scaling_of
from strom_operator.deletion import next_deletion_step
from strom_operator.ha_data import checkpoints_dir, ha_data_uri, newer_checkpoint, read_checkpoint_pointers
from strom_operator.jobmanager_client import JobManagerClient, JobManagerError, JobManagerUnreachable
from strom_operator.kube_api import KubeApi, KubeApiError
from strom_operator.labels import FlinkJobRef, jobmanager_name, taskmanager_name
from strom_operator.lifecycle import next_step
from strom_operator.metrics import OperatorMetrics
from strom_operator.observed import ObservedJob, SavepointTrigger
from strom_operator.observer import Observer
from strom_operator.operator_options import OperatorOptions
from strom_operator.rescaling import autoscaler_blocked, begin_rescale
from strom_operator.savepoint_disposal import DisposalError, S3Access, dispose_savepoint, remove_directory
from strom_operator.spec import FlinkJobSpec
from strom_operator.status import FlinkJobStatus, status_patch
from strom_operator.steps import (
    IDLE,
    SOON,
    DeleteDeployments,
    DeployJob,
    DisposeSavepoints,
    FinishDeletion,
    MarkDegraded,
    Step,
    StopWithSavepoint,
    TriggerSavepoint,
    Wait,
)
from strom_operator.upgrades import Situation

log = logging.getLogger(__name__)

MAX_STEPS_PER_PASS = 25
# Conditions whose change to these reasons is a warning in the FlinkJob's events.
WARNING_REASONS = {"InvalidSpec", "SavepointFailed", "DeploymentTimeout", "JobFailed", "RollingBack",
                   "JobNotRunning", "JobManagerNotReady", *("ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff",
                                                            "Unschedulable", "CreateContainerConfigError",
                                                            "InvalidImageName")}

EventPoster = Callable[[Mapping[str, Any], str, str, str], None]


def _restoring(step: DeployJob, path: str) -> DeployJob:
    """`step` deploying from `path` instead, with the status saying so."""
    status = step.status
    if status.restored_from is not None:
        status = replace(status, restored_from=replace(
            status.restored_from, kind="checkpoint", path=path, age="",
            why="the latest completed checkpoint (it completed after the last observation)"))
    return replace(step, restore_from=path, status=status)


def _no_events(body: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
    log.info("event %s %s: %s", type_, reason, message)


@dataclass(frozen=True, slots=True)
class AutoscalerPass:
    """When to evaluate again (None: the FlinkJob is gone) and whether a rescale was just written."""

    delay: float | None
    rescaled: bool = False


@dataclass(frozen=True, slots=True)
class ReconcilerSettings:
    # Upper bound of any requeue delay: tests and impatient users poll faster than the steps ask.
    max_requeue_s: float | None = None

    def delay(self, requested: float) -> float:
        return requested if self.max_requeue_s is None else min(requested, self.max_requeue_s)


class Reconciler:
    def __init__(self, kube: KubeApi, client: JobManagerClient, observer: Observer, *,
                 metrics: OperatorMetrics | None = None, post_event: EventPoster = _no_events,
                 settings: ReconcilerSettings = ReconcilerSettings()) -> None:
        self.kube = kube
        self.client = client
        self.observer = observer
        self.metrics = metrics or OperatorMetrics()
        self.post_event = post_event
        self.settings = settings
        self._locks: dict[str, asyncio.Lock] = {}
        # spec.mode 'batch': Spark-on-Kubernetes driver pods instead of JobManager/TaskManagers (batch/)
        self.batch = BatchReconciler(kube, write_status=self._write_status, post_event=post_event)

    def _lock(self, namespace: str, name: str) -> asyncio.Lock:
        return self._locks.setdefault(f"{namespace}/{name}", asyncio.Lock())

    # -- passes -----------------------------------------------------------------------------------

    async def reconcile(self, namespace: str, name: str) -> float | None:
        """Steps until one waits; its delay (capped by the settings), or None when the FlinkJob is gone."""
        async with self._lock(namespace, name):
            started = time.perf_counter()
            self.metrics.reconciliations.labels(namespace, name).inc()
            try:
                return await self._reconcile(namespace, name)
            except Exception:
                self.metrics.reconcile_errors.labels(namespace, name).inc()
                raise
            finally:
                self.metrics.reconcile_duration.labels(namespace, name).observe(time.perf_counter() - started)

    async def _reconcile(self, namespace: str, name: str) -> float | None:
        for _ in range(MAX_STEPS_PER_PASS):
            body = await self.kube.get("FlinkJob", namespace, name)
            if body is None or body["metadata"].get("deletionTimestamp"):
                return None
            ref = FlinkJobRef.from_metadata(body["metadata"])
            status = FlinkJobStatus.from_dict(body.get("status"))
            spec = await self._parse_spec(body, status)
            if spec is None:
                return self.settings.delay(IDLE)
            if is_batch(spec, status):
                delay = await self.batch.step(body, spec, status)
                if delay is not None:
                    return self.settings.delay(delay)
                continue
            observed = await self.observer.observe(ref, status)
            now = datetime.now(UTC)
            step = next_step(spec, status, observed, now=now, name=name,
                             generation=body["metadata"].get("generation"))
            await self.perform(ref, body, spec, status, step, now)
            if isinstance(step, Wait) or step.requeue_after > 0:
                return self.settings.delay(step.requeue_after)
        return self.settings.delay(SOON)

    async def finalize(self, namespace: str, name: str) -> str:
        """The deletion: steps until `FinishDeletion`; its reason."""
        async with self._lock(namespace, name):
            while True:
                body = await self.kube.get("FlinkJob", namespace, name)
                if body is None:
                    return "already gone"
                ref = FlinkJobRef.from_metadata(body["metadata"])
                status = FlinkJobStatus.from_dict(body.get("status"))
                try:
                    spec = FlinkJobSpec.from_dict(body.get("spec") or {})
                except (KeyError, TypeError, ValueError) as e:
                    return f"deleted (spec unreadable: {e})"
                if is_batch(spec, status):
                    self.metrics.set_state(f"{namespace}/{name}", None)
                    return await self.batch.finalize(body, status)
                observed = await self.observer.observe(ref, status)
                now = datetime.now(UTC)
                step = next_deletion_step(spec, status, observed, now=now, name=name)
                await self.perform(ref, body, spec, status, step, now)
                if isinstance(step, FinishDeletion):
                    self.metrics.set_state(f"{namespace}/{name}", None)
                    self.observer.forget(ref)
                    return step.reason
                if isinstance(step, Wait) or step.requeue_after > 0:
                    await asyncio.sleep(self.settings.delay(step.requeue_after))

    async def autoscale(self, namespace: str, name: str, *, now: datetime | None = None) -> AutoscalerPass:
        """One autoscaler evaluation (autoscaling.py) when rescaling.autoscaler_blocked allows it; the
        decision goes to status.scaling.autoscaler and, for a rescale, the upgrade is written too."""
        async with self._lock(namespace, name):
            body = await self.kube.get("FlinkJob", namespace, name)
            if body is None or body["metadata"].get("deletionTimestamp"):
                return AutoscalerPass(None)
            status = FlinkJobStatus.from_dict(body.get("status"))
            try:
                spec = FlinkJobSpec.from_dict(body.get("spec") or {})
                interval = AutoscalerSettings.from_spec(spec).metrics_interval_s
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                log.debug("%s/%s: no autoscaling with this spec: %s", namespace, name, e)
                return AutoscalerPass(self.settings.delay(IDLE))
            delay = self.settings.delay(interval)
            blocked = autoscaler_blocked(spec, status)
            if blocked is not None:
                log.debug("%s/%s: autoscaler waits: %s", namespace, name, blocked)
                return AutoscalerPass(delay)
            ref = FlinkJobRef.from_metadata(body["metadata"])
            now = now or datetime.now(UTC)
            js = status.job_status
            assert js.job_id is not None and js.start_time is not None  # autoscaler_blocked checked
            outcome = await evaluate_autoscaler(self.kube, self.client, self.metrics.registry, ref=ref, spec=spec,
                                                base_url=self.observer.endpoints.url(ref), job_id=js.job_id,
                                                job_start=js.start_time, now=now)
            decision = outcome.decision
            if outcome.state_problem:
                self.post_event(body, "Warning", "AutoscalerStateReset", outcome.state_problem)
            previous = status.scaling.autoscaler if status.scaling is not None else None
            if decision.action != "none" or previous is None or previous.get("reason") != decision.reason:
                self.post_event(body, "Normal", f"Autoscaler{decision.reason}", decision.event_message())
            rec = status.reconciliation
            scaling = status.scaling or scaling_of(spec, rec.vertex_parallelism)
            new = replace(status, scaling=replace(scaling, autoscaler=decision.to_dict()))
            if decision.rescales:
                observed = ObservedJob(deployments_exist=True, job_id=js.job_id, job_state="RUNNING",
                                       start_time=js.start_time)
                new = begin_rescale(Situation(spec, new, observed, now, name), outcome.state.overrides,
                                    decision.message).status
            await self._write_status(body, status, new, now)
            return AutoscalerPass(delay, rescaled=decision.rescales)

    async def _parse_spec(self, body: Mapping[str, Any], status: FlinkJobStatus) -> FlinkJobSpec | None:
        """The typed spec; one that does not even parse is reported like any invalid spec."""
        try:
            return FlinkJobSpec.from_dict(body.get("spec") or {})
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            message = f"spec: cannot be read: {type(e).__name__}: {e}"
            now = datetime.now(UTC)
            new = status.with_condition("Degraded", "True", "InvalidSpec", message, now)
            await self._write_status(body, status, replace(new, error="invalid spec: " + message), now)
            return None

    # -- steps ------------------------------------------------------------------------------------

    async def perform(self, ref: FlinkJobRef, body: Mapping[str, Any], spec: FlinkJobSpec, before: FlinkJobStatus,
                      step: Step, now: datetime) -> None:
        """Do what `step` says, then write its status (idempotent: a repeated step does no harm)."""
        if isinstance(step, DeployJob):
            newer = await self._clear_ha_data(ref, body, step.spec, step.restore_from)
            if newer is not None:
                step = _restoring(step, newer)
            for obj in build_job_objects(ref, step.spec, restore_from=step.restore_from,
                                         allow_non_restored_state=step.allow_non_restored_state,
                                         vertex_parallelism=step.vertex_parallelism):
                await self.kube.apply(obj)
            where = f"from {step.restore_from}" if step.restore_from else "without state"
            what = (f"vertex parallelism {parallelism_overrides_value(step.vertex_parallelism)}"
                    if step.vertex_parallelism else f"parallelism {step.spec.job.parallelism}")
            self.post_event(body, "Normal", "Deploying", f"deploying {what} {where}")
        elif isinstance(step, DeleteDeployments):
            for deployment in (jobmanager_name(ref), taskmanager_name(ref)):
                await self.kube.delete("Deployment", ref.namespace, deployment)
        elif isinstance(step, TriggerSavepoint | StopWithSavepoint):
            await self._send_savepoint(ref, body, spec, step)
        elif isinstance(step, DisposeSavepoints):
            await self._dispose(ref, body, spec, step.paths)
        elif isinstance(step, MarkDegraded):
            log.warning("%s/%s degraded: %s", ref.namespace, ref.name, step.message)
        elif isinstance(step, Wait):
            log.debug("%s/%s: %s", ref.namespace, ref.name, step.reason)
        elif isinstance(step, FinishDeletion):
            self.post_event(body, "Normal", "Deleted", step.reason)
            return  # the resource goes away: no status to write
        await self._write_status(body, before, step.status, now)

    async def _send_savepoint(self, ref: FlinkJobRef, body: Mapping[str, Any], spec: FlinkJobSpec,
                              step: TriggerSavepoint | StopWithSavepoint) -> None:
        base = self.observer.endpoints.url(ref)
        requests = self.observer.requests_of(ref)
        stop = isinstance(step, StopWithSavepoint)
        send = self.client.stop_with_savepoint if stop else self.client.trigger_savepoint
        try:
            request_id = await send(base, step.job_id, target_dir=step.target_dir or None, trigger_id=step.trigger_id)
        except JobManagerUnreachable as e:
            log.warning("%s/%s: savepoint trigger not sent: %s", ref.namespace, ref.name, e)
            return  # the next observation decides: re-send, or time out
        except JobManagerError as e:
            # A refusal (e.g. the job is not RUNNING) is the savepoint's failure, not a reason to retry.
            requests.remember(step.trigger_id, step.job_id, step.trigger_id)
            request = requests.get(step.trigger_id)
            assert request is not None
            request.result = SavepointTrigger(step.trigger_id, "FAILED", failure_cause=str(e))
            return
        requests.remember(step.trigger_id, step.job_id, request_id)
        what = "stopping the job with a savepoint" if stop else "savepoint triggered"
        self.post_event(body, "Normal", "SavepointTriggered", f"{what} ({step.trigger_id}) into {step.target_dir}")
        if stop:  # the JobManager may exit with its job: catch the result while it still answers
            timeout = OperatorOptions.from_flink_configuration(spec.flink_configuration).savepoint_timeout_s
            requests.watch(step.trigger_id, base, self.client, timeout_s=timeout)

    async def _s3_access(self, ref: FlinkJobRef, spec: FlinkJobSpec) -> S3Access:
        credentials: dict[str, str] = {}
        if spec.s3.credentials_secret:
            secret = await self.kube.get("Secret", ref.namespace, spec.s3.credentials_secret)
            data = (secret or {}).get("data") or {}
            credentials = {k: base64.b64decode(v).decode() for k, v in data.items()}
        return S3Access.of(spec, credentials)

    async def _clear_ha_data(self, ref: FlinkJobRef, body: Mapping[str, Any], spec: FlinkJobSpec,
                             restore_from: str | None) -> str | None:
        """Remove HA data an earlier JobManager left (ha_data.py) before a JobManager is deployed from
        the snapshot the lifecycle chose; a newer checkpoint of the same job that the data points to
        is returned (it replaces the chosen one). Only while no JobManager Deployment exists: a
        DeployJob repeated after its objects were applied (an operator restarted in between) must not
        take the running JobManager's recovery data away. A failure raises: deploying anyway could
        resume the stale job, so the pass is retried."""
        uri = ha_data_uri(ref, spec)
        if uri is None or await self.kube.get("Deployment", ref.namespace, jobmanager_name(ref)) is not None:
            return None
        access = await self._s3_access(ref, spec)
        try:
            pointers = await asyncio.to_thread(read_checkpoint_pointers, uri, access)
            newer = newer_checkpoint(restore_from, checkpoints_dir(ref, spec), pointers)
            removed = await asyncio.to_thread(remove_directory, uri, access, what="high-availability data")
        except Exception as e:  # botocore's errors reading the pointers, DisposalError removing them
            self.post_event(body, "Warning", "HaDataCleanupFailed", f"{e}; not deploying until it is removed")
            raise
        if newer is not None:
            self.post_event(body, "Normal", "NewerCheckpoint",
                            f"restoring {newer}, completed after {restore_from} was chosen")
        if removed:
            self.post_event(body, "Normal", "HaDataRemoved",
                            f"removed {removed} files of an earlier JobManager's high-availability data at {uri}")
        return newer

    async def _dispose(self, ref: FlinkJobRef, body: Mapping[str, Any], spec: FlinkJobSpec,
                       paths: tuple[str, ...]) -> None:
        access = await self._s3_access(ref, spec)
        for path in paths:
            try:
                removed = await asyncio.to_thread(dispose_savepoint, path, access)
            except DisposalError as e:
                self.post_event(body, "Warning", "SavepointDisposalFailed", str(e))
                continue
            self.metrics.disposed_savepoints.labels(ref.namespace, ref.name).inc()
            self.post_event(body, "Normal", "SavepointDisposed", f"disposed of {path} ({removed} files)")

    async def _write_status(self, body: Mapping[str, Any], before: FlinkJobStatus, after: FlinkJobStatus,
                            now: datetime) -> None:
        meta = body["metadata"]
        patch = status_patch(before.to_dict(), after.to_dict())
        self.metrics.record_transition(meta["namespace"], meta["name"], before, after, now)
        if not patch:
            return
        try:
            await self.kube.merge_patch("FlinkJob", meta["namespace"], meta["name"], {"status": patch},
                                        subresource="status")
        except KubeApiError as e:
            if e.status == 404:
                return
            raise
        for cond in after.conditions:
            old = before.condition(cond.type)
            if old is not None and (old.status, old.reason, old.message) == (cond.status, cond.reason, cond.message):
                continue
            warning = cond.reason in WARNING_REASONS and cond.status in ("True", "False") and not (
                cond.type == "Degraded" and cond.status == "False")
            self.post_event(body, "Warning" if warning else "Normal", cond.reason or cond.type,
                            f"{cond.type}={cond.status}: {cond.message}")
        if before.lifecycle_state != after.lifecycle_state and after.lifecycle_state:
            self.post_event(body, "Normal", "LifecycleState",
                            f"{before.lifecycle_state or '(new)'} -> {after.lifecycle_state}")
