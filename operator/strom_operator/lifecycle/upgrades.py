"""Upgrades, suspends and rollbacks as a write-ahead log in `status.reconciliation`.

An upgrade begins with a `WriteStatus` that records the target spec (lastReconciledSpec), the
lifecycle state UPGRADING and the first upgrade step, before anything is stopped. Then, one step
per reconciliation, reading only the status and what is observed:

    STOP_WITH_SAVEPOINT  (savepoint mode, or suspending a job with a savepoint dir)
        -> DELETE_DEPLOYMENTS -> DEPLOY -> lifecycle DEPLOYED (or SUSPENDED, or ROLLED_BACK)
    a savepoint that fails or times out -> SAVEPOINT_FAILED (the old job keeps running), or,
        only when `kubernetes.operator.job.upgrade.last-state-fallback.enabled`, the latest checkpoint.

The snapshot to restore is decided once pods are gone and written (restorePath) before the
deploy, so a restarted operator deploys from the same snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from strom_operator.crd.operator_options import LAST_STATE_FALLBACK, OperatorOptions
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus, JobStatus, Reconciliation, RestoredFrom, Scaling
from strom_operator.lifecycle.savepoint_history import clear_pending, format_age, record_completed, with_pending
from strom_operator.lifecycle.savepoint_outcome import FailureKind, SavepointProgress, savepoint_outcome
from strom_operator.lifecycle.steps import (
    SOON,
    DeleteDeployments,
    DeployJob,
    Step,
    StopWithSavepoint,
    Wait,
    WriteStatus,
)
from strom_operator.observe.observed import ObservedJob
from strom_operator.resources.builders import scaling_of


@dataclass(frozen=True, slots=True)
class Situation:
    """Everything one decision reads: the desired (valid) spec, the status, the observation, the time."""

    spec: FlinkJobSpec
    status: FlinkJobStatus
    observed: ObservedJob
    now: datetime
    name: str = ""

    @property
    def options(self) -> OperatorOptions:
        return OperatorOptions.from_flink_configuration(self.spec.flink_configuration)


def _rec(status: FlinkJobStatus, **changes: Any) -> FlinkJobStatus:
    return replace(status, reconciliation=replace(status.reconciliation, **changes))


def target_spec(status: FlinkJobStatus) -> FlinkJobSpec:
    """The spec the upgrade in progress deploys: the last stable one when rolling back."""
    rec = status.reconciliation
    raw = rec.last_stable_spec if status.lifecycle_state == "ROLLING_BACK" else rec.last_reconciled_spec
    if raw is None:
        raise ValueError("status.reconciliation has no spec to deploy")
    return FlinkJobSpec.from_dict(raw)


def begin_upgrade(s: Situation) -> Step:
    """Write the target spec and the first step (the write-ahead log); nothing is stopped yet."""
    spec, status, observed = s.spec, s.status, s.observed
    suspend = spec.job.state == "suspended"
    mode = spec.job.upgrade_mode
    take_savepoint = observed.running and (
        mode == "savepoint" or (suspend and mode == "last-state" and bool(spec.savepoints.dir)))
    reason = "suspending the job" if suspend else "upgrading to the new spec"
    rec = status.reconciliation
    before = FlinkJobSpec.from_dict(rec.last_reconciled_spec) if rec.last_reconciled_spec is not None else None
    # The autoscaler's per-vertex parallelism survives upgrades, unless the user sets a new parallelism.
    keep = before is not None and (before.job.parallelism, before.job.max_parallelism) == (
        spec.job.parallelism, spec.job.max_parallelism)
    new = _rec(status, last_reconciled_spec=spec.to_dict(), upgrade_started_at=s.now, restore_path=None,
               reason=reason, upgrade_step="STOP_WITH_SAVEPOINT" if take_savepoint else "DELETE_DEPLOYMENTS",
               vertex_parallelism=rec.vertex_parallelism if keep else {})
    new = replace(new, lifecycle_state="UPGRADING").with_condition("Progressing", "True",
                                                                   "Suspending" if suspend else "Upgrading",
                                                                   reason, s.now)
    if take_savepoint:
        new = with_pending(new, s.name, "suspend" if suspend else "upgrade", s.now)
    return WriteStatus(new)


def continue_upgrade(s: Situation) -> Step:
    step = s.status.reconciliation.upgrade_step
    if step == "STOP_WITH_SAVEPOINT":
        return _stop_with_savepoint(s)
    if step == "DELETE_DEPLOYMENTS":
        return _delete_deployments(s)
    if step == "DEPLOY":
        return _deploy(s)
    raise ValueError(f"unknown upgrade step {step!r}")


def _stop_with_savepoint(s: Situation) -> Step:
    status, observed = s.status, s.observed
    pending = status.savepoints.pending
    target = target_spec(status)
    if pending is None:  # a status written by hand, or an older operator: decide again
        return WriteStatus(with_pending(status, s.name, "upgrade", s.now))
    outcome = savepoint_outcome(pending, observed, now=s.now, timeout_s=s.options.savepoint_timeout_s)
    match outcome.progress:
        case SavepointProgress.COMPLETED:
            done = record_completed(status, outcome.location or "", s.now)
            return WriteStatus(_rec(done, upgrade_step="DELETE_DEPLOYMENTS", restore_path=outcome.location))
        case SavepointProgress.FAILED:
            kind = outcome.failure or FailureKind.REPORTED  # a FAILED outcome always names its kind
            return savepoint_failed(s, _UPGRADE_FAILURE[kind].format(cause=outcome.cause))
        case SavepointProgress.IN_PROGRESS:
            return Wait(f"waiting for savepoint {pending.trigger_id} ({format_age(outcome.waited_s)} so far)",
                        status, SOON)
        case SavepointProgress.NO_ANSWER:
            return Wait("waiting for the JobManager to answer before stopping the job with a savepoint", status, SOON)
    job_id = observed.job_id or status.job_status.job_id or ""
    return StopWithSavepoint(job_id, target.savepoints.dir or "", pending.trigger_id, status)


# How an upgrade words each failure (the status' error and the SavepointFailed condition).
_UPGRADE_FAILURE = {
    FailureKind.REPORTED: "savepoint failed: {cause}",
    FailureKind.TIMED_OUT: "savepoint {cause}",
    FailureKind.JOB_NOT_RUNNING: "{cause}, it cannot take a savepoint",
}


def savepoint_failed(s: Situation, cause: str) -> Step:
    """No silent fallback: wait with the reason, unless the spec allows last-state and a checkpoint exists."""
    status = clear_pending(s.status)
    checkpoint = s.observed.last_checkpoint or status.job_status.last_checkpoint
    if s.options.last_state_fallback and checkpoint:
        reason = f"{cause}; restarting from the latest checkpoint as {LAST_STATE_FALLBACK.key} allows"
        new = _rec(status, upgrade_step="DELETE_DEPLOYMENTS", restore_path=checkpoint, reason=reason)
        return WriteStatus(replace(new, error=cause))
    if s.options.last_state_fallback:
        cause += "; no checkpoint to fall back to"
    reason = (f"{cause}; the running job is left as it was. Fix the cause and change the spec (or its "
              f"restartNonce) to retry, or set {LAST_STATE_FALLBACK.key}: \"true\" to allow the latest checkpoint")
    new = _rec(status, upgrade_step="SAVEPOINT_FAILED", reason=reason)
    new = replace(new, error=cause).with_condition("Progressing", "False", "SavepointFailed", reason, s.now)
    return WriteStatus(new)


def _delete_deployments(s: Situation) -> Step:
    status = s.status
    if s.observed.deployments_exist:
        gone = replace(status, job_status=JobStatus(last_checkpoint=status.job_status.last_checkpoint))
        return DeleteDeployments(gone)
    target = target_spec(status)
    if status.lifecycle_state != "ROLLING_BACK" and target.job.state == "suspended":
        new = _rec(status, upgrade_step=None, upgrade_started_at=None, reason="suspended by spec.job.state")
        # No pods, no slots; the autoscaler's latest record stays for the resumption.
        kept = status.scaling.autoscaler if status.scaling is not None else None
        new = replace(new, lifecycle_state="SUSPENDED", scaling=Scaling(0, 0, 0, autoscaler=kept) if kept else None,
                      job_status=replace(
            status.job_status, job_id=None, state="SUSPENDED"))
        new = new.with_condition("Ready", "False", "Suspended", "the job is suspended", s.now)
        return WriteStatus(new.with_condition("Progressing", "False", "Suspended", "the job is suspended", s.now))
    restore = choose_restore(s, target)
    return WriteStatus(replace(_rec(status, upgrade_step="DEPLOY", restore_path=restore.path), restored_from=restore))


def choose_restore(s: Situation, target: FlinkJobSpec) -> RestoredFrom:
    """The snapshot the next deployment starts from, and why (shown in status.restoredFrom).

    A path already in the log wins: the upgrade's or suspension's savepoint, the checkpoint a
    permitted fallback chose, or what a failed upgrade started from (for its rollback).
    """
    status, rec = s.status, s.status.reconciliation
    last = status.savepoints.last
    if status.lifecycle_state == "ROLLING_BACK":
        if rec.restore_path and status.restored_from is not None:
            return replace(status.restored_from, why="the snapshot the failed upgrade started from")
        return RestoredFrom("none", None, "", "the failed upgrade started empty")
    if target.job.upgrade_mode == "stateless":
        return RestoredFrom("none", None, "", "upgradeMode stateless starts empty")
    if rec.restore_path:
        if last is not None and last.path == rec.restore_path:
            age = format_age((s.now - last.timestamp).total_seconds())
            return RestoredFrom("savepoint", rec.restore_path, age, f"the {last.kind} savepoint")
        return RestoredFrom("checkpoint", rec.restore_path, "", rec.reason or "the latest completed checkpoint")
    checkpoint = s.observed.last_checkpoint or status.job_status.last_checkpoint
    if checkpoint:
        return RestoredFrom("checkpoint", checkpoint, "", "the latest completed checkpoint")
    if last is not None:
        return RestoredFrom("savepoint", last.path, format_age((s.now - last.timestamp).total_seconds()),
                            "no checkpoint; the latest savepoint")
    if status.restored_from is not None and status.restored_from.path:
        return replace(status.restored_from, why="no newer checkpoint or savepoint; what the job last restored from")
    return RestoredFrom("none", None, "", "the job never completed a checkpoint or savepoint")


def deployed_vertex_parallelism(status: FlinkJobStatus, target: FlinkJobSpec) -> dict[str, int]:
    """The autoscaler's per-vertex parallelism the deployment gets: the stable deployment's when
    rolling back; none once the autoscaler is disabled (spec.job.parallelism applies again)."""
    rec = status.reconciliation
    if not target.autoscaler.enabled:
        return {}
    chosen = rec.stable_vertex_parallelism if status.lifecycle_state == "ROLLING_BACK" else rec.vertex_parallelism
    return dict(chosen)


def _deploy(s: Situation) -> Step:
    status = s.status
    target = target_spec(status)
    rolling_back = status.lifecycle_state == "ROLLING_BACK"
    rec = status.reconciliation
    vertex_parallelism = deployed_vertex_parallelism(status, target)
    new = replace(
        status,
        lifecycle_state="ROLLED_BACK" if rolling_back else "DEPLOYED",
        reconciliation=Reconciliation(rec.last_reconciled_spec, rec.last_stable_spec, None, None, s.now, None,
                                      rec.reason if rolling_back else None, vertex_parallelism,
                                      rec.stable_vertex_parallelism),
        # The autoscaler's latest record stays: it explains the parallelism being deployed.
        scaling=scaling_of(target, vertex_parallelism, status.scaling.autoscaler if status.scaling else None),
        # A new job: the checkpoint pointer belongs to the job that is gone.
        job_status=JobStatus(),
    )
    new = new.with_condition("Progressing", "True", "Deployed", "waiting for the job to reach RUNNING", s.now)
    return DeployJob(target, rec.restore_path, target.job.allow_non_restored_state, new,
                     vertex_parallelism=vertex_parallelism)


def begin_rollback(s: Situation, why: str) -> Step:
    """Write ROLLING_BACK and the snapshot the failed upgrade started from; deletion follows."""
    status = s.status
    restore = status.restored_from.path if status.restored_from is not None else None
    new = _rec(status, upgrade_step="DELETE_DEPLOYMENTS", upgrade_started_at=s.now, restore_path=restore,
               reason=f"{why}; rolling back to the last stable spec")
    new = replace(new, lifecycle_state="ROLLING_BACK", error=why)
    return WriteStatus(new.with_condition("Progressing", "True", "RollingBack", why, s.now))


def begin_resume(s: Situation) -> Step:
    """SUSPENDED -> running: write the target spec and the snapshot to resume from, then deploy."""
    # restorePath still holds the suspension's savepoint, if one was taken.
    status = replace(_rec(s.status, last_reconciled_spec=s.spec.to_dict(), upgrade_started_at=s.now,
                          reason="resuming the job"), lifecycle_state="UPGRADING")
    restore = choose_restore(replace(s, status=status), s.spec)
    new = replace(_rec(status, upgrade_step="DEPLOY", restore_path=restore.path), restored_from=restore)
    return WriteStatus(new.with_condition("Progressing", "True", "Resuming", "resuming the job", s.now))
