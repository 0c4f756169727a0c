"""The FlinkJob lifecycle state machine: `next_step(spec, status, observed, now=...) -> Step`.

A pure function of the desired spec, the status (the operator's write-ahead log) and what was
observed of the job; time is passed in. One step per reconciliation; the handler performs it,
writes `step.status`, and calls again. States (status.lifecycleState):

    (none) -> CREATED -> DEPLOYED -> STABLE                     first deployment
    STABLE/ROLLED_BACK/FAILED/DEPLOYED -> UPGRADING -> DEPLOYED  spec change (upgrades.py)
    STABLE -> UPGRADING -> SUSPENDED -> UPGRADING -> DEPLOYED   suspend and resume
    DEPLOYED -> ROLLING_BACK -> ROLLED_BACK                     upgraded job not RUNNING in time
    DEPLOYED/STABLE/ROLLED_BACK -> FAILED                       the job failed
    any -> DELETING                                             deletion.py

While running: manual savepoints (savepointTriggerNonce), periodic savepoints, history pruning,
and the Degraded condition for pods stuck past a deadline. The JobManagerReady condition follows
the JobManager Service's endpoint on every step (jobmanager_readiness.py). An invalid spec is
reported and the last valid spec keeps running.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from strom_operator.crd.spec import FlinkJobSpec, deployment_relevant, duration_seconds, needs_upgrade
from strom_operator.crd.status import FlinkJobStatus, JobStatus, Reconciliation, RestoredFrom
from strom_operator.lifecycle.savepoint_history import (
    clear_pending,
    format_age,
    prune_savepoint_history,
    record_completed,
    with_pending,
)
from strom_operator.lifecycle.savepoint_outcome import SavepointProgress, savepoint_outcome
from strom_operator.lifecycle.sql_admission import (
    INCOMPATIBLE_UPGRADE,
    SqlVerdict,
    admission_error,
    upgrade_refusal,
)
from strom_operator.lifecycle.steps import (
    IDLE,
    SOON,
    DeployJob,
    DisposeSavepoints,
    MarkDegraded,
    Step,
    TriggerSavepoint,
    Wait,
    WriteStatus,
)
from strom_operator.lifecycle.upgrades import (
    Situation,
    begin_resume,
    begin_rollback,
    begin_upgrade,
    continue_upgrade,
)
from strom_operator.lifecycle.validation import validate_flinkjob_spec, validate_spec_change
from strom_operator.observe.jobmanager_readiness import with_jobmanager_condition
from strom_operator.observe.observed import POD_PROBLEM_REASONS, ObservedJob

INVALID_SPEC = "invalid spec: "


def next_step(spec: FlinkJobSpec, status: FlinkJobStatus, observed: ObservedJob, *, now: datetime,
              name: str = "", generation: int | None = None, sql: SqlVerdict | None = None) -> Step:
    """The one thing to do next for this FlinkJob. `sql` is the engine's verdict on a SQL FlinkJob's
    script (sql_admission.py): an error in it is an invalid spec, and an upgrade whose plan cannot take
    the running job's state is refused the same way, before anything is stopped."""
    reconciled = status.reconciliation.last_reconciled_spec
    error = validate_flinkjob_spec(spec)
    reason = "InvalidSpec"
    if error is None:
        error = admission_error(spec, sql)
    if error is None and reconciled is not None:
        error = validate_spec_change(spec, FlinkJobSpec.from_dict(reconciled))
    if error is None and reconciled is not None:
        error = upgrade_refusal(spec, FlinkJobSpec.from_dict(reconciled), status, sql)
        reason = INCOMPATIBLE_UPGRADE
    status = with_jobmanager_condition(observe(status, observed), observed.jobmanager_endpoint, now)
    if error is not None:
        if generation is not None:
            # seen and judged: kstatus readers (Flux) compare generations before reading Stalled
            status = replace(status, observed_generation=generation)
        if status.error != INVALID_SPEC + error:
            new = replace(status, error=INVALID_SPEC + error)
            return WriteStatus(new.with_condition("Degraded", "True", reason, error, now))
        if reconciled is None:
            return Wait(INVALID_SPEC + error, status, IDLE)
        spec = FlinkJobSpec.from_dict(reconciled)  # the last valid spec keeps running
    else:
        if status.error is not None and status.error.startswith(INVALID_SPEC):
            new = replace(status, error=None)
            return WriteStatus(new.with_condition("Degraded", "False", "SpecValid", "the spec is valid", now))
        if generation is not None:
            status = replace(status, observed_generation=generation)
    step = _decide(Situation(spec, status, observed, now, name))
    if error is None and sql is not None and sql.ok and isinstance(step, DeployJob):
        # the plan that will run is the one the next upgrade must restore: recorded with the deployment. A
        # rollback deploys another spec, whose plan was not judged here: then none is known (the engine's
        # own restore still refuses state without a home, unless allowNonRestoredState)
        plan = sql.plan_status() if step.spec == spec else None
        step = replace(step, status=replace(step.status, sql=plan))
    return step


def observe(status: FlinkJobStatus, observed: ObservedJob) -> FlinkJobStatus:
    """Fold what the JobManager reported into status.jobStatus (no answer changes nothing)."""
    js = status.job_status
    if observed.job_state is not None:
        js = JobStatus(observed.job_id or js.job_id, observed.job_state, observed.start_time or js.start_time,
                       observed.last_checkpoint or js.last_checkpoint)
    elif observed.last_checkpoint:
        js = replace(js, last_checkpoint=observed.last_checkpoint)
    return replace(status, job_status=js)


def _decide(s: Situation) -> Step:
    status = s.status
    state, rec = status.lifecycle_state, status.reconciliation
    if state is None:
        return _initial(s)
    if state == "DELETING":
        return Wait("the FlinkJob is being deleted", status, SOON)
    if rec.upgrade_step == "SAVEPOINT_FAILED":
        return _savepoint_failed_wait(s)
    if rec.upgrade_step is not None:
        return continue_upgrade(s)
    stuck = _pod_problems(s)
    if stuck is not None:
        return stuck
    if state == "DEPLOYED":
        return _deployed(s)
    if state in ("STABLE", "ROLLED_BACK"):
        return _running(s)
    if state == "FAILED":
        return _failed(s)
    if state == "SUSPENDED":
        return _suspended(s)
    return Wait(f"lifecycle state {state!r} has no step; waiting for a spec change", status, IDLE)


def _changed(s: Situation, against: Mapping[str, Any] | None = None) -> bool:
    """Whether the desired spec asks for a redeployment or a change of job.state."""
    reconciled = s.status.reconciliation.last_reconciled_spec if against is None else against
    if reconciled is None:
        return True
    return needs_upgrade(s.spec, reconciled) or s.spec.job.state != FlinkJobSpec.from_dict(reconciled).job.state


def _initial(s: Situation) -> Step:
    spec, now = s.spec, s.now
    status = replace(s.status, savepoints=replace(s.status.savepoints,
                                                  last_trigger_nonce=spec.job.savepoint_trigger_nonce))
    if spec.job.state == "suspended":
        new = replace(status, lifecycle_state="SUSPENDED", reconciliation=Reconciliation(spec.to_dict()),
                      job_status=JobStatus(state="SUSPENDED"))
        return WriteStatus(new.with_condition("Ready", "False", "Suspended", "created suspended", now))
    path = spec.job.initial_savepoint_path
    restore = (RestoredFrom("savepoint", path, "", "spec.job.initialSavepointPath") if path
               else RestoredFrom("none", None, "", "first deployment"))
    new = replace(status, lifecycle_state="CREATED", restored_from=restore, reconciliation=Reconciliation(
        spec.to_dict(), upgrade_step="DEPLOY", upgrade_started_at=now, restore_path=path))
    return WriteStatus(new.with_condition("Progressing", "True", "Deploying", "first deployment", now))


def _savepoint_failed_wait(s: Situation) -> Step:
    """The old job still runs. A new spec retries; the last stable spec cancels the upgrade."""
    status, rec = s.status, s.status.reconciliation
    if rec.last_stable_spec is not None and not _changed(s, rec.last_stable_spec) and s.observed.running:
        new = replace(status, lifecycle_state="STABLE", error=None, reconciliation=replace(
            rec, last_reconciled_spec=s.spec.to_dict(), upgrade_step=None, upgrade_started_at=None, reason=None))
        return WriteStatus(new.with_condition("Progressing", "False", "UpgradeCancelled",
                                              "the spec is back to the running one", s.now))
    if _changed(s):
        return begin_upgrade(s)
    return Wait(rec.reason or "the upgrade savepoint failed", status, IDLE)


def _pod_problems(s: Situation) -> Step | None:
    status, now = s.status, s.now
    deadline = s.options.pod_problem_deadline_s
    stuck = [p for p in s.observed.pod_problems if (now - p.since).total_seconds() > deadline]
    degraded = status.condition("Degraded")
    if stuck:
        p = stuck[0]
        if degraded is not None and degraded.status == "True" and degraded.reason in (p.reason, "InvalidSpec"):
            return None
        message = f"pod {p.pod} in {p.reason} for {format_age((now - p.since).total_seconds())}"
        message += f": {p.message}" if p.message else ""
        return MarkDegraded(p.reason, message, status.with_condition("Degraded", "True", p.reason, message, now))
    if degraded is not None and degraded.status == "True" and degraded.reason in POD_PROBLEM_REASONS:
        return WriteStatus(status.with_condition("Degraded", "False", "PodsHealthy", "no pod problems", now))
    return None


def _deployed(s: Situation) -> Step:
    status, observed, now = s.status, s.observed, s.now
    rec = status.reconciliation
    if observed.running:
        new = replace(status, lifecycle_state="STABLE", error=None,
                      reconciliation=replace(rec, last_stable_spec=rec.last_reconciled_spec, reason=None,
                                             stable_vertex_parallelism=rec.vertex_parallelism))
        new = new.with_condition("Ready", "True", "JobRunning", "the job is RUNNING", now)
        return WriteStatus(new.with_condition("Progressing", "False", "Stable", "the job is RUNNING", now))
    if _changed(s):
        return begin_upgrade(s)
    opts = s.options
    # An upgrade of a stable deployment: another spec, or the autoscaler's other per-vertex parallelism.
    is_upgrade = rec.last_stable_spec is not None and rec.last_reconciled_spec is not None and (
        deployment_relevant(rec.last_stable_spec) != deployment_relevant(rec.last_reconciled_spec)
        or dict(rec.vertex_parallelism) != dict(rec.stable_vertex_parallelism))
    waited = (now - rec.deployed_at).total_seconds() if rec.deployed_at else 0.0
    failed = observed.job_state == "FAILED"
    if failed or waited > opts.readiness_timeout_s:
        why = ("the job FAILED after deployment" if failed else
               f"the job was not RUNNING within {format_age(opts.readiness_timeout_s)} "
               f"(state {observed.job_state or 'unknown'})")
        if is_upgrade and opts.rollback_enabled:
            return begin_rollback(s, why)
        if failed:
            new = replace(status, lifecycle_state="FAILED", error=why)
            return WriteStatus(new.with_condition("Ready", "False", "JobFailed", why, now))
        progressing = status.condition("Progressing")
        if progressing is None or progressing.reason != "DeploymentTimeout":
            new = replace(status, error=why).with_condition("Progressing", "False", "DeploymentTimeout", why, now)
            return WriteStatus(new)
        return Wait(why, status, IDLE)
    return Wait(f"waiting for the job to reach RUNNING ({format_age(waited)} so far)", status, SOON)


def _running(s: Situation) -> Step:
    """STABLE or ROLLED_BACK: the job runs. Savepoints first (one at a time), then spec changes."""
    status, observed, spec, now = s.status, s.observed, s.spec, s.now
    rec = status.reconciliation
    if observed.job_state == "FAILED":
        new = replace(status, lifecycle_state="FAILED", error="the job FAILED")
        return WriteStatus(new.with_condition("Ready", "False", "JobFailed", "the job FAILED", now))
    if status.savepoints.pending is not None:
        return _pending_savepoint(s)
    if _changed(s):
        return begin_upgrade(s)
    if spec.to_dict() != rec.last_reconciled_spec:  # operator-only fields: no redeployment
        stable = spec.to_dict() if status.lifecycle_state == "STABLE" else rec.last_stable_spec
        return WriteStatus(replace(status, reconciliation=replace(rec, last_reconciled_spec=spec.to_dict(),
                                                                  last_stable_spec=stable)))
    nonce = spec.job.savepoint_trigger_nonce
    if observed.running and nonce is not None and nonce != status.savepoints.last_trigger_nonce:
        return WriteStatus(with_pending(status, s.name, "manual", now, nonce))
    # Pruning before the next periodic savepoint: with an interval shorter than a pass, a savepoint
    # is due again on every pass and the history would never be pruned.
    protected = {p for p in (rec.restore_path, status.restored_from.path if status.restored_from else None) if p}
    kept, disposed = prune_savepoint_history(status.savepoints.history, max_history=spec.savepoints.max_history,
                                             max_age_s=duration_seconds(spec.savepoints.max_age), now=now,
                                             protected=protected)
    if disposed:
        new = replace(status, savepoints=replace(status.savepoints, history=kept))
        return DisposeSavepoints(tuple(sp.path for sp in disposed), new)
    interval = duration_seconds(spec.savepoints.periodic_interval)
    due_in = IDLE
    if interval > 0 and observed.running:
        marks = [t for t in (status.savepoints.last_triggered_at, rec.deployed_at,
                             status.savepoints.last.timestamp if status.savepoints.last else None) if t]
        since = (now - max(marks)).total_seconds() if marks else interval
        if since >= interval:
            return WriteStatus(with_pending(status, s.name, "periodic", now))
        due_in = min(IDLE, interval - since)
    if observed.running:
        status = status.with_condition("Ready", "True", "JobRunning", "the job is RUNNING", now)
        progressing = status.condition("Progressing")
        if status.lifecycle_state == "ROLLED_BACK" and progressing is not None and progressing.status == "True":
            # the rollback's deployment runs: nothing is in progress any more (the new spec waits for the user)
            status = status.with_condition("Progressing", "False", "RolledBack",
                                           "rolled back to the last stable spec; the job is RUNNING", now)
    elif observed.job_state is not None:
        status = status.with_condition("Ready", "False", "JobNotRunning", f"the job is {observed.job_state}", now)
    return Wait("the job is running", status, due_in)


def _pending_savepoint(s: Situation) -> Step:
    """A manual or periodic savepoint in flight: send it (again), wait, or record its outcome."""
    status, observed, now = s.status, s.observed, s.now
    pending = status.savepoints.pending
    assert pending is not None
    outcome = savepoint_outcome(pending, observed, now=now, timeout_s=s.options.savepoint_timeout_s)
    match outcome.progress:
        case SavepointProgress.COMPLETED:
            return WriteStatus(record_completed(status, outcome.location or "", now))
        case SavepointProgress.FAILED:
            error = f"{pending.kind} savepoint failed: {outcome.cause}"
            return WriteStatus(replace(clear_pending(status), error=error))
        case SavepointProgress.IN_PROGRESS | SavepointProgress.NO_ANSWER:
            return Wait(f"waiting for the {pending.kind} savepoint {pending.trigger_id}", status, SOON)
    job_id = observed.job_id or status.job_status.job_id or ""
    return TriggerSavepoint(job_id, s.spec.savepoints.dir or "", pending.trigger_id, status)


def _failed(s: Situation) -> Step:
    status, now = s.status, s.now
    if s.observed.running:  # recovered by itself (a restarted JobManager resumed from a checkpoint)
        new = replace(status, lifecycle_state="STABLE", error=None)
        return WriteStatus(new.with_condition("Ready", "True", "JobRunning", "the job is RUNNING again", now))
    if _changed(s):
        return begin_upgrade(s)
    return Wait(f"{status.error or 'the job failed'}; change the spec or its restartNonce to redeploy", status, IDLE)


def _suspended(s: Situation) -> Step:
    status, spec = s.status, s.spec
    if spec.job.state == "running":
        return begin_resume(s)
    if spec.to_dict() != status.reconciliation.last_reconciled_spec:
        return WriteStatus(replace(status, reconciliation=replace(status.reconciliation,
                                                                  last_reconciled_spec=spec.to_dict())))
    return Wait("the job is suspended", status, IDLE)
