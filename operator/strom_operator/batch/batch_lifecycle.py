"""The batch state machine: `next_batch_step(spec, status, observed, now=...) -> BatchStep`.

A pure function of the desired spec, the status (write-ahead log) and what was seen of the driver
pod; the batch reconciler performs the step, writes its status and asks again. status.batch.state:

    (none) -> SUBMITTED -> RUNNING -> COMPLETED                 the driver pod ran and exited 0
    SUBMITTED/RUNNING -> FAILED                                 it failed; restartPolicy Never, or retries spent
    SUBMITTED/RUNNING -> PENDING_RERUN -> SUBMITTED             OnFailure: a new driver pod after a back-off
    any -> PENDING_RERUN -> SUBMITTED                           the spec changed (or spec.restartNonce): a new run

A driver fails when its pod fails (the container's exit code and log tail are the reason), when
its pod disappears, or when it stays Pending for a reason that does not pass (an image that
cannot be pulled, no node fits) longer than kubernetes.operator.pod.problem.deadline. Executor
pods of an ended driver are deleted with the transition. The lifecycleState follows as the Flink
Kubernetes Operator shows a finished application: DEPLOYED while submitted or waiting to retry,
STABLE while running and once completed, FAILED when failed for good; status.jobStatus.state is
the batch state, so `kubectl get fj` shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from strom_operator.batch.batch_status import (
    COMPLETED,
    FAILED,
    PENDING_RERUN,
    RUNNING,
    SUBMITTED,
    TERMINAL,
    BatchStatus,
)
from strom_operator.batch.batch_steps import BatchStep, CleanupExecutors, CreateDriver, DeleteDriver
from strom_operator.batch.batch_validation import validate_batch_change, validate_batch_spec
from strom_operator.batch.names import driver_pod_name
from strom_operator.batch.observed_driver import ObservedBatch
from strom_operator.crd.operator_options import OperatorOptions
from strom_operator.crd.spec import FlinkJobSpec, duration_seconds
from strom_operator.crd.status import FlinkJobStatus, JobStatus, Reconciliation, format_time
from strom_operator.lifecycle.sql_admission import SqlVerdict, admission_error
from strom_operator.lifecycle.steps import IDLE, SOON, Wait, WriteStatus
from strom_operator.resources.labels import FlinkJobRef

INVALID_SPEC = "invalid spec: "
MAX_EXTRA_BACKOFF_S = 300.0
# Fields whose change does not start a new run: the restart policy steers the operator only.
_OPERATOR_ONLY = ("restartPolicy",)


def retry_delay_s(interval_s: float, failed_attempt: int) -> float:
    """Back-off before the retry that follows attempt `failed_attempt` (1-based): the interval, doubling
    with each further failure, at most MAX_EXTRA_BACKOFF_S more than the interval."""
    return min(interval_s * 2 ** (failed_attempt - 1), interval_s + MAX_EXTRA_BACKOFF_S)


def run_relevant(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a camelCase spec whose change means a new run of the batch job."""
    return {k: v for k, v in FlinkJobSpec.from_dict(spec).to_dict().items() if k not in _OPERATOR_ONLY}


def next_batch_step(spec: FlinkJobSpec, status: FlinkJobStatus, observed: ObservedBatch, *, now: datetime,
                    name: str, namespace: str = "default", generation: int | None = None,
                    sql: SqlVerdict | None = None) -> BatchStep:
    reconciled = status.reconciliation.last_reconciled_spec
    error = validate_batch_spec(spec) or admission_error(spec, sql) or validate_batch_change(spec, reconciled)
    if error is not None:
        if status.error != INVALID_SPEC + error:
            new = replace(status, error=INVALID_SPEC + error)
            return WriteStatus(new.with_condition("Degraded", "True", "InvalidSpec", error, now))
        if reconciled is None:
            return Wait(INVALID_SPEC + error, status, IDLE)
        # The last valid spec's run goes on; it is followed, not changed.
        spec = FlinkJobSpec.from_dict(reconciled)
    else:
        if status.error is not None and status.error.startswith(INVALID_SPEC):
            new = replace(status, error=None)
            return WriteStatus(new.with_condition("Degraded", "False", "SpecValid", "the spec is valid", now))
        if generation is not None and status.observed_generation != generation:
            status = replace(status, observed_generation=generation)
    ref = FlinkJobRef(name, namespace, "")
    batch = BatchStatus.from_dict(status.batch)
    if reconciled is None or batch.state is None:
        return _submit(ref, spec, status, batch, attempt=1, now=now, why="submitted")
    if run_relevant(spec.to_dict()) != run_relevant(reconciled):
        return _resubmit(spec, status, batch, now)
    if batch.state == PENDING_RERUN:
        due = batch.next_attempt_at or now
        if now < due:
            return Wait(f"next driver pod at {format_time(due)}", status, (due - now).total_seconds())
        return _submit(ref, spec, status, batch, attempt=batch.attempt + 1, now=now, why="resubmitted")
    if batch.state in TERMINAL:
        if observed.executors_running and batch.driver_pod:
            return CleanupExecutors(batch.driver_pod, status)
        return Wait(f"the job is {batch.state}", status, IDLE)
    return _follow_driver(spec, status, batch, observed, now)


def _with_batch(status: FlinkJobStatus, batch: BatchStatus, *, lifecycle: str) -> FlinkJobStatus:
    return replace(status, lifecycle_state=lifecycle, batch=batch.to_dict(),
                   job_status=JobStatus(state=batch.state, start_time=batch.started_at))


def _submit(ref: FlinkJobRef, spec: FlinkJobSpec, status: FlinkJobStatus, batch: BatchStatus, *, attempt: int,
            now: datetime, why: str) -> BatchStep:
    submission = batch.submission + 1
    pod = driver_pod_name(ref, submission)
    new_batch = replace(batch, state=SUBMITTED, driver_pod=pod, submission=submission, attempt=attempt,
                        submitted_at=now, started_at=None, next_attempt_at=None, executors=0)
    new = _with_batch(status, new_batch, lifecycle="DEPLOYED")
    new = replace(new, reconciliation=replace(new.reconciliation, last_reconciled_spec=spec.to_dict(),
                                              deployed_at=now, reason=None))
    if new.error is not None and not new.error.startswith(INVALID_SPEC):
        new = replace(new, error=None)
    tries = f" (attempt {attempt} of {spec.restart_policy.on_failure_retries + 1})" if attempt > 1 else ""
    new = new.with_condition("Ready", "False", "Submitted", f"driver pod {pod} {why}{tries}", now)
    return CreateDriver(spec, submission, new.with_condition("Progressing", "True", "Submitted",
                                                             f"driver pod {pod} {why}{tries}", now))


def _resubmit(spec: FlinkJobSpec, status: FlinkJobStatus, batch: BatchStatus, now: datetime) -> BatchStep:
    """A new run of a changed spec: the spec is written first, the old driver goes, the attempts start over."""
    reason = "the spec changed: a new run"
    new_batch = replace(batch, state=PENDING_RERUN, attempt=0, next_attempt_at=now, reason=reason)
    new = _with_batch(status, new_batch, lifecycle="DEPLOYED")
    new = replace(new, reconciliation=replace(new.reconciliation, last_reconciled_spec=spec.to_dict(), reason=reason))
    new = new.with_condition("Progressing", "True", "SpecChanged", reason, now)
    if batch.driver_pod and batch.state not in TERMINAL:
        return DeleteDriver(batch.driver_pod, new)
    return WriteStatus(new)


def _follow_driver(spec: FlinkJobSpec, status: FlinkJobStatus, batch: BatchStatus, observed: ObservedBatch,
                   now: datetime) -> BatchStep:
    driver = observed.driver
    pod = batch.driver_pod or ""
    if driver is None:
        return _failed(spec, status, batch, now, reason=f"the driver pod {pod} is gone (deleted or evicted)",
                       exit_code=None)
    if driver.phase == "Succeeded":
        new_batch = replace(batch, state=COMPLETED, finished_at=now, exit_code=driver.exit_code,
                            reason=driver.describe(), executors=0)
        new = _with_batch(status, new_batch, lifecycle="STABLE")
        new = new.with_condition("Ready", "True", "JobCompleted", f"driver pod {pod} completed", now)
        new = new.with_condition("Progressing", "False", "JobCompleted", f"driver pod {pod} completed", now)
        if (old := new.condition("Degraded")) is not None and old.status == "True":
            new = new.with_condition("Degraded", "False", "JobCompleted", "the job completed", now)
        return CleanupExecutors(pod, new)
    if driver.phase == "Failed":
        return _failed(spec, status, batch, now, reason=driver.describe(), exit_code=driver.exit_code)
    if driver.stuck:
        waited = (now - (batch.submitted_at or now)).total_seconds()
        deadline = OperatorOptions.from_flink_configuration(spec.flink_configuration).pod_problem_deadline_s
        if waited > deadline:
            return _failed(spec, status, batch, now, exit_code=None,
                           reason=f"{driver.describe()} (pending for {int(waited)} s)")
    state = RUNNING if driver.phase == "Running" else SUBMITTED
    reason = driver.describe() if driver.waiting_reason else None
    new_batch = replace(batch, state=state, reason=reason, executors=observed.executors_running,
                        started_at=batch.started_at or (now if state == RUNNING else None))
    if new_batch == batch:
        return Wait(f"driver pod {pod} {driver.phase}", status, SOON)
    new = _with_batch(status, new_batch, lifecycle="STABLE" if state == RUNNING else "DEPLOYED")
    if state == RUNNING and batch.state != RUNNING:
        new = new.with_condition("Ready", "True", "JobRunning", f"driver pod {pod} running", now)
    return WriteStatus(new, SOON)


def _failed(spec: FlinkJobSpec, status: FlinkJobStatus, batch: BatchStatus, now: datetime, *, reason: str,
            exit_code: int | None) -> BatchStep:
    policy = spec.restart_policy
    pod = batch.driver_pod or ""
    retry = policy.type == "OnFailure" and batch.attempt <= policy.on_failure_retries
    ended = replace(batch, finished_at=now, exit_code=exit_code, reason=reason, executors=0)
    if retry:
        delay = retry_delay_s(duration_seconds(policy.on_failure_retry_interval), batch.attempt)
        due = now + timedelta(seconds=delay)
        new = _with_batch(status, replace(ended, state=PENDING_RERUN, next_attempt_at=due), lifecycle="DEPLOYED")
        message = (f"driver pod {pod} failed (attempt {batch.attempt} of {policy.on_failure_retries + 1}): "
                   f"{reason}; retrying at {format_time(due)}")
        new = new.with_condition("Ready", "False", "DriverFailed", message, now)
        new = new.with_condition("Degraded", "True", "DriverFailed", message, now)
        return CleanupExecutors(pod, new)
    spent = f" after {batch.attempt} attempts" if batch.attempt > 1 else ""
    message = f"driver pod {pod} failed{spent}: {reason}"
    new = _with_batch(status, replace(ended, state=FAILED), lifecycle="FAILED")
    new = replace(new, error=message, reconciliation=replace(new.reconciliation or Reconciliation(), reason=message))
    new = new.with_condition("Ready", "False", "JobFailed", message, now)
    new = new.with_condition("Progressing", "False", "JobFailed", message, now)
    new = new.with_condition("Degraded", "True", "JobFailed", message, now)
    return CleanupExecutors(pod, new)
