"""One FlinkJob's reconciliation: observe -> `next_step` -> perform the step -> write the status.

The decisions are the pure functions' (lifecycle.next_step, deletion.next_deletion_step); this
module only performs what a step says, with the Kubernetes API, the JobManager REST API and the
savepoint storage, then writes `step.status` as a merge patch of the status subresource. The
autoscaler's evaluations (`autoscale`) take the same lock and write their decision the same way. A pass
repeats that until a step asks to wait; it returns how long. Passes of one FlinkJob never
overlap (a lock per FlinkJob), whoever calls: a kopf handler, the daemon, the deletion handler.
Events are posted for what a user wants to see in `kubectl describe`: condition changes (an
invalid spec with its field path, savepoint failures, rollbacks, a JobManager Service without a ready
endpoint), deployments, disposals. Whatever the operator cannot do (the API server refuses an object,
S3 or its credentials Secret is missing) becomes the `Ready=False` condition with the reason and a
Warning Event per occurrence (aggregated by the poster, event_recorder.py), and the pass is retried
with a growing delay (action_failures.py) instead of a traceback every few seconds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from strom_operator.autoscaler.settings import AutoscalerSettings
from strom_operator.batch.batch_reconciler import BatchReconciler, is_batch
from strom_operator.clients.action_failures import (
    FAILURE_REASONS,
    S3CredentialsMissing,
    S3Unavailable,
    SqlCheckUnavailable,
    TlsSecretPending,
    failure_of,
    retry_delay,
    with_failure,
    without_failure,
)
from strom_operator.clients.jobmanager_client import JobManagerClient, JobManagerError, JobManagerUnreachable
from strom_operator.clients.jobmanager_tls import follow_deployed_tls, tls_possible
from strom_operator.clients.kube_api import KubeApi, KubeApiError
from strom_operator.clients.savepoint_disposal import DisposalError, S3Access, dispose_savepoint, remove_directory
from strom_operator.clients.secret_cache import SecretCache
from strom_operator.clients.sql_checker import SqlChecker
from strom_operator.crd.operator_options import OperatorOptions
from strom_operator.crd.spec import FlinkJobSpec, IngressSpec
from strom_operator.crd.status import FlinkJobStatus, status_patch
from strom_operator.lifecycle.deletion import next_deletion_step
from strom_operator.lifecycle.rescaling import autoscaler_blocked, begin_rescale
from strom_operator.lifecycle.state_machine import next_step
from strom_operator.lifecycle.steps import (
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
from strom_operator.lifecycle.upgrades import Situation
from strom_operator.observe.derived_status import DERIVED_CONDITIONS, DERIVED_READY_REASONS, with_derived_fields
from strom_operator.observe.observed import ObservedJob, SavepointTrigger
from strom_operator.reconcile.autoscaling import evaluate_autoscaler
from strom_operator.reconcile.ha_data import (
    BEST_EFFORT,
    NO_CLEANUP,
    checkpoints_dir,
    cleanup_policy,
    ha_data_uri,
    newer_checkpoint,
    read_checkpoint_pointers,
)
from strom_operator.reconcile.metrics import OperatorMetrics
from strom_operator.reconcile.observer import Observer
from strom_operator.reconcile.owned_secrets import ensure_cluster_secret, ensure_tls_secret
from strom_operator.resources.builders import build_job_objects, scaling_of
from strom_operator.resources.configmap import parallelism_overrides_value
from strom_operator.resources.ingress import ingress_name, with_default_ingress
from strom_operator.resources.labels import FlinkJobRef, jobmanager_name, taskmanager_name
from strom_operator.resources.network_policy import OperatorPods

log = logging.getLogger(__name__)

MAX_STEPS_PER_PASS = 25
# Conditions whose change to these reasons is a warning in the FlinkJob's events.
WARNING_REASONS = {"InvalidSpec", "IncompatibleUpgrade", "SavepointFailed", "DeploymentTimeout", "JobFailed",
                   "RollingBack", "JobNotRunning", "JobManagerNotReady",
                   *("ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff", "Unschedulable",
                     "CreateContainerConfigError", "InvalidImageName")}

EventPoster = Callable[[Mapping[str, Any], str, str, str], None]
# What a failure to act raises: the API's refusals and silences, S3's, a missing credentials Secret,
# a TLS Secret not issued yet.
ACTION_ERRORS = (KubeApiError, DisposalError, S3Unavailable, S3CredentialsMissing, TlsSecretPending,
                 SqlCheckUnavailable)
# How long a best-effort HA-data cleanup (a first deployment) may hold the deployment up.
BEST_EFFORT_CLEANUP_S = 10.0
# What each step does, in the words of a failure's message.
_DOING: dict[type, str] = {DeployJob: "deploying the job", DeleteDeployments: "deleting the Deployments",
                           TriggerSavepoint: "triggering a savepoint", StopWithSavepoint: "stopping with a savepoint",
                           DisposeSavepoints: "disposing of savepoints", FinishDeletion: "finishing the deletion"}
OBSERVING = "observing the Deployments and pods"


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
    job_ingress: IngressSpec | None = None  # the chart's jobIngress: for FlinkJobs without spec.ingress

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
        self.secrets = SecretCache(kube)
        self._failures: dict[str, int] = {}  # namespace/name -> failed passes in a row
        # namespace/name -> metadata.generation the latest pass read: a wakeup for it is no news (handlers.py)
        self.seen_generation: dict[str, int | None] = {}
        # spec.mode 'batch': Spark-on-Kubernetes driver pods instead of JobManager/TaskManagers (batch/)
        self.batch = BatchReconciler(kube, write_status=self._write_status, post_event=post_event)
        # SQL FlinkJobs: the engine's verdict on the script, before pods and before upgrades (sql_checker.py)
        self.sql = SqlChecker(kube)

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
            self.seen_generation[f"{namespace}/{name}"] = body["metadata"].get("generation")
            ref = FlinkJobRef.from_metadata(body["metadata"])
            status = FlinkJobStatus.from_dict(body.get("status"))
            spec = await self._parse_spec(body, status)
            if spec is None:
                return self.settings.delay(IDLE)
            try:
                sql = await self.sql.verdict(namespace, spec)
            except ACTION_ERRORS as e:
                return self.settings.delay(await self._failed(body, status, e, "checking the SQL script"))
            if is_batch(spec, status):
                try:
                    delay = await self.batch.step(body, spec, status, sql=sql)
                except ACTION_ERRORS as e:
                    return self.settings.delay(await self._failed(body, status, e, "running the batch driver"))
                self._failures.pop(f"{namespace}/{name}", None)
                if delay is not None:
                    return self.settings.delay(delay)
                continue
            try:
                await self._jobmanager_tls(ref, status)
                observed = await self.observer.observe(ref, status)
            except ACTION_ERRORS as e:
                return self.settings.delay(await self._failed(body, status, e, OBSERVING))
            now = datetime.now(UTC)
            step = next_step(spec, status, observed, now=now, name=name,
                             generation=body["metadata"].get("generation"), sql=sql)
            try:
                await self.perform(ref, body, spec, status, step, now)
            except ACTION_ERRORS as e:
                return self.settings.delay(await self._failed(body, status, e, _DOING.get(type(step), "reconciling")))
            self._failures.pop(f"{namespace}/{name}", None)
            if isinstance(step, Wait) or step.requeue_after > 0:
                return self.settings.delay(step.requeue_after)
        return self.settings.delay(SOON)

    async def _failed(self, body: Mapping[str, Any], status: FlinkJobStatus, error: BaseException,
                      doing: str) -> float:
        """A failure to act: one log line, a Warning Event, the Ready=False condition; the retry delay."""
        meta = body["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        failure = failure_of(error, doing=doing)
        delay = retry_delay(failures)
        self.metrics.reconcile_errors.labels(meta["namespace"], meta["name"]).inc()
        log.warning("%s: %s: %s (attempt %d, next in %.0f s)", key, failure.reason, failure.message, failures,
                    delay)
        self.post_event(body, "Warning", failure.reason, failure.message)
        now = datetime.now(UTC)
        try:
            await self._write_status(body, status, with_failure(status, failure, now), now)
        except KubeApiError as e:  # the status itself is refused: the Event is all the user gets
            log.warning("%s: the failure condition was not written: %s", key, e)
        return delay

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
                now = datetime.now(UTC)
                step: Step | None = None
                try:
                    await self._jobmanager_tls(ref, status)
                    observed = await self.observer.observe(ref, status)
                    step = next_deletion_step(spec, status, observed, now=now, name=name)
                    await self.perform(ref, body, spec, status, step, now)
                except ACTION_ERRORS as e:
                    doing = "deleting: " + (_DOING.get(type(step), "reconciling") if step else OBSERVING)
                    await asyncio.sleep(self.settings.delay(await self._failed(body, status, e, doing)))
                    continue
                self._failures.pop(f"{namespace}/{name}", None)
                if isinstance(step, FinishDeletion):
                    self.metrics.set_state(f"{namespace}/{name}", None)
                    self.observer.forget(ref)
                    self.seen_generation.pop(f"{namespace}/{name}", None)
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
            try:
                await self._jobmanager_tls(ref, status)
                outcome = await evaluate_autoscaler(self.kube, self.client, self.metrics.registry, ref=ref,
                                                    spec=spec, base_url=self.observer.endpoints.url(ref),
                                                    job_id=js.job_id, job_start=js.start_time, now=now)
            except KubeApiError as e:  # its state ConfigMap: the next evaluation tries again
                failure = failure_of(e, doing="keeping the autoscaler's state")
                log.warning("%s/%s: %s: %s", namespace, name, failure.reason, failure.message)
                self.post_event(body, "Warning", failure.reason, failure.message)
                return AutoscalerPass(delay)
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
            newer = await self._clear_ha_data(ref, body, step.spec, step.restore_from, before)
            if newer is not None:
                step = _restoring(step, newer)
            # created once, before the pods that read it; never applied (that would change its value)
            await ensure_cluster_secret(self.kube, ref)
            if step.spec.security.tls.enabled:  # the same for the TLS material, or cert-manager's (waited for)
                await ensure_tls_secret(self.kube, self.secrets, ref, step.spec)
            deployed = with_default_ingress(step.spec, self.settings.job_ingress)
            for obj in build_job_objects(ref, deployed, restore_from=step.restore_from,
                                         allow_non_restored_state=step.allow_non_restored_state,
                                         vertex_parallelism=step.vertex_parallelism,
                                         operator=OperatorPods.from_env()):
                await self.kube.apply(obj)
            if deployed.ingress is None:  # spec.ingress (or jobIngress) removed: so is its Ingress (404: none)
                await self.kube.delete("Ingress", ref.namespace, ingress_name(ref))
            self.observer.owned.expect(ref, jobmanager=True)  # read our own write, not a watch in flight
            where = f"from {step.restore_from}" if step.restore_from else "without state"
            what = (f"vertex parallelism {parallelism_overrides_value(step.vertex_parallelism)}"
                    if step.vertex_parallelism else f"parallelism {step.spec.job.parallelism}")
            self.post_event(body, "Normal", "Deploying", f"deploying {what} {where}")
        elif isinstance(step, DeleteDeployments):
            for deployment in (jobmanager_name(ref), taskmanager_name(ref)):
                await self.kube.delete("Deployment", ref.namespace, deployment)
            self.observer.owned.expect(ref, jobmanager=False)
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
        # Done without a failure: an earlier failure to act is over.
        await self._write_status(body, before, without_failure(step.status), now)

    async def _jobmanager_tls(self, ref: FlinkJobRef, status: FlinkJobStatus) -> None:
        """https with the job's certificate while its JobManager runs with TLS (jobmanager_tls.py)."""
        rec, tls = status.reconciliation, self.observer.endpoints.tls
        jobmanager = None
        if tls_possible(tls, ref, rec.last_reconciled_spec, rec.last_stable_spec):
            jobmanager = (await self.observer.owned_objects(ref))[0][0]
        await follow_deployed_tls(tls, self.secrets, ref, jobmanager, rec.last_reconciled_spec)

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
        """S3 access with the credentials Secret's keys (through the cache); S3CredentialsMissing without them."""
        credentials: dict[str, str] = {}
        if spec.s3.credentials_secret:
            credentials = await self.secrets.s3_credentials(ref.namespace, spec.s3.credentials_secret)
        return S3Access.of(spec, credentials)

    async def _clear_ha_data(self, ref: FlinkJobRef, body: Mapping[str, Any], spec: FlinkJobSpec,
                             restore_from: str | None, before: FlinkJobStatus) -> str | None:
        """Remove HA data an earlier JobManager left (ha_data.py) before a JobManager is deployed from
        the snapshot the lifecycle chose; a newer checkpoint of the same job that the data points to
        is returned (it replaces the chosen one). Only while no JobManager Deployment exists: a
        DeployJob repeated after its objects were applied (an operator restarted in between) must not
        take the running JobManager's recovery data away. A failure raises S3Unavailable (or
        S3CredentialsMissing): deploying anyway could resume the stale job. Except before the
        FlinkJob's first deployment, which restores nothing of its own: there a failure or a slow
        S3 is a Warning Event and the deployment goes on (ha_data.cleanup_policy)."""
        uri = ha_data_uri(ref, spec)
        exists = uri is not None and (await self.observer.owned_objects(ref))[0][0] is not None
        policy = cleanup_policy(uri, jobmanager_exists=exists, lifecycle_state=before.lifecycle_state)
        if policy == NO_CLEANUP or uri is None:
            return None
        try:
            access = await self._s3_access(ref, spec)
            deadline = time.monotonic() + BEST_EFFORT_CLEANUP_S if policy == BEST_EFFORT else None
            work = asyncio.to_thread(_clear, uri, access, restore_from, checkpoints_dir(ref, spec), deadline)
            newer, removed = await (asyncio.wait_for(work, BEST_EFFORT_CLEANUP_S) if deadline else work)
        except (TimeoutError, S3CredentialsMissing, S3Unavailable) as e:
            if policy != BEST_EFFORT:
                if isinstance(e, S3Unavailable):
                    raise S3Unavailable(f"{e}; not deploying until it is removed") from None
                raise
            why = str(e) or f"S3 did not answer within {BEST_EFFORT_CLEANUP_S:.0f} s"
            self.post_event(body, "Warning", "HaDataCleanupSkipped",
                            f"first deployment: high-availability data at {uri} not checked ({why}); deploying")
            return None
        if newer is not None:
            self.post_event(body, "Normal", "NewerCheckpoint",
                            f"restoring {newer}, completed after {restore_from} was chosen")
        if removed:
            self.post_event(body, "Normal", "HaDataRemoved",
                            f"removed {removed} files of an earlier JobManager's high-availability data at {uri}")
        return newer

    async def _dispose(self, ref: FlinkJobRef, body: Mapping[str, Any], spec: FlinkJobSpec,
                       paths: tuple[str, ...]) -> None:
        """Best effort: a savepoint not disposed of is a Warning Event, the history is pruned anyway."""
        try:
            access = await self._s3_access(ref, spec)
        except S3CredentialsMissing as e:
            self.post_event(body, "Warning", "SavepointDisposalFailed", f"not disposed of {', '.join(paths)}: {e}")
            return
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
        spec = body.get("spec") or {}
        tls = bool(((spec.get("security") or {}).get("tls") or {}).get("enabled", False))
        after = with_derived_fields(after, FlinkJobRef.from_metadata(meta),
                                    batch=spec.get("mode") == "batch", now=now, tls=tls)
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
        posted: set[str] = set()
        for cond in after.conditions:
            old = before.condition(cond.type)
            if old is not None and (old.status, old.reason, old.message) == (cond.status, cond.reason, cond.message):
                continue
            if cond.reason in FAILURE_REASONS:
                continue  # posted by _failed, once per occurrence (aggregated)
            if cond.type in DERIVED_CONDITIONS or (cond.type == "Ready" and cond.reason in DERIVED_READY_REASONS):
                continue  # views of the lifecycle's conditions (derived_status.py): their events are posted already
            if (cond.reason or cond.type) in posted:
                continue  # one change, one Event: e.g. a batch submission sets Ready and Progressing to Submitted
            posted.add(cond.reason or cond.type)
            warning = cond.reason in WARNING_REASONS and cond.status in ("True", "False") and not (
                cond.type == "Degraded" and cond.status == "False")
            self.post_event(body, "Warning" if warning else "Normal", cond.reason or cond.type,
                            f"{cond.type}={cond.status}: {cond.message}")
        failed, now_ready = before.condition("Ready"), after.condition("Ready")
        if failed is not None and failed.reason in FAILURE_REASONS and (
                now_ready is None or now_ready.reason not in FAILURE_REASONS):
            self.post_event(body, "Normal", "Recovered", f"no longer {failed.reason}: {failed.message}")
        if before.lifecycle_state != after.lifecycle_state and after.lifecycle_state:
            self.post_event(body, "Normal", "LifecycleState",
                            f"{before.lifecycle_state or '(new)'} -> {after.lifecycle_state}")


def _clear(uri: str, access: S3Access, restore_from: str | None, checkpoints: str,
           deadline: float | None) -> tuple[str | None, int]:
    """In a thread: read the checkpoint pointers of the HA data at `uri`, then remove it; (a newer
    checkpoint, files removed). Past `deadline` nothing is removed: the caller gave up waiting and
    may already be deploying a JobManager that writes there."""
    try:
        pointers = read_checkpoint_pointers(uri, access)
        newer = newer_checkpoint(restore_from, checkpoints, pointers)
        if deadline is not None and time.monotonic() > deadline:
            raise S3Unavailable(f"reading the high-availability data at {uri} took too long; nothing removed")
        removed = remove_directory(uri, access, what="high-availability data")
    except S3Unavailable:
        raise
    except Exception as e:  # noqa: BLE001 - botocore's errors reading the pointers, DisposalError removing them
        text = str(e) if isinstance(e, DisposalError) else f"cannot read high-availability data {uri}: " \
            f"{type(e).__name__}: {e}"
        raise S3Unavailable(text) from None
    return newer, removed
