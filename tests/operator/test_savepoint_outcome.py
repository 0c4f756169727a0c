"""One rule for what a pending savepoint's state means: the pure function, then each of its three callers.

The expected outcomes are worked by hand from the rule in savepoint_outcome's docstring (the default
savepoint timeout is 10 min = 600 s); the caller table says what a manual savepoint (lifecycle), an
upgrade's stop-with-savepoint (upgrades) and a deletion's final savepoint (deletion) do with each outcome.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from strom_operator.crd.status import PendingSavepoint
from strom_operator.lifecycle.deletion import next_deletion_step
from strom_operator.lifecycle.savepoint_history import with_pending
from strom_operator.lifecycle.savepoint_outcome import FailureKind, SavepointProgress, savepoint_outcome
from strom_operator.lifecycle.state_machine import next_step
from strom_operator.lifecycle.steps import FinishDeletion, StopWithSavepoint, TriggerSavepoint, Wait, WriteStatus
from strom_operator.observe.observed import ObservedJob, SavepointTrigger

from tests.operator.fakes import T0, deploy_stable, drive, make_spec

P = SavepointProgress
PENDING = PendingSavepoint("sp-1", "manual", T0)
LOC = "s3://bucket/sp/savepoint-1"

# (case, the JobManager's answer for the trigger (status, location, cause) or None, job state, seconds waited,
#  expected progress, expected failure kind, expected cause)
CASES = [
    ("completed", ("COMPLETED", LOC, None), "RUNNING", 5, P.COMPLETED, None, ""),
    ("completion wins over the timeout", ("COMPLETED", LOC, None), "FINISHED", 900, P.COMPLETED, None, ""),
    ("completed without a location waits", ("COMPLETED", None, None), "RUNNING", 5, P.IN_PROGRESS, None, ""),
    ("failed as reported", ("FAILED", None, "disk full"), "RUNNING", 5, P.FAILED, FailureKind.REPORTED, "disk full"),
    ("failed without a cause", ("FAILED", None, None), "RUNNING", 5, P.FAILED, FailureKind.REPORTED,
     "no cause given"),
    ("a reported failure wins over the timeout", ("FAILED", None, "disk full"), "RUNNING", 900, P.FAILED,
     FailureKind.REPORTED, "disk full"),
    ("in progress", ("IN_PROGRESS", None, None), "RUNNING", 5, P.IN_PROGRESS, None, ""),
    ("in progress at exactly the timeout still waits", ("IN_PROGRESS", None, None), "RUNNING", 600, P.IN_PROGRESS,
     None, ""),
    ("in progress past the timeout fails", ("IN_PROGRESS", None, None), "RUNNING", 601, P.FAILED,
     FailureKind.TIMED_OUT, "not completed within 10 min"),
    ("a silent JobManager is waited for", None, None, 5, P.NO_ANSWER, None, ""),
    ("a silent JobManager past the timeout fails", None, None, 601, P.FAILED, FailureKind.TIMED_OUT,
     "not completed within 10 min"),
    ("a job that is not running cannot take it", None, "FAILED", 5, P.FAILED, FailureKind.JOB_NOT_RUNNING,
     "the job is FAILED"),
    ("a running job without an answer gets the trigger", None, "RUNNING", 5, P.SEND, None, ""),
]


def _observed(answer: tuple[str, str | None, str | None] | None, job_state: str | None,
              trigger_id: str) -> ObservedJob:
    trigger = SavepointTrigger(trigger_id, *answer) if answer else None
    return ObservedJob(deployments_exist=True, job_id="job1", job_state=job_state, savepoint=trigger)


@pytest.mark.parametrize(("answer", "job_state", "waited", "progress", "kind", "cause"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_savepoint_outcome_follows_the_rule(answer, job_state, waited, progress, kind, cause):
    outcome = savepoint_outcome(PENDING, _observed(answer, job_state, "sp-1"), now=T0 + timedelta(seconds=waited),
                                timeout_s=600)
    assert (outcome.progress, outcome.failure, outcome.cause) == (progress, kind, cause)
    assert outcome.location == (LOC if progress is P.COMPLETED else None)


def test_an_answer_for_another_trigger_is_no_answer_for_this_one():
    observed = _observed(("COMPLETED", LOC, None), "RUNNING", "sp-0")
    assert savepoint_outcome(PENDING, observed, now=T0, timeout_s=600).progress is P.SEND


# One representative row per progress, by case name.
ROWS = {"completed": P.COMPLETED, "failed as reported": P.FAILED, "in progress": P.IN_PROGRESS,
        "a silent JobManager is waited for": P.NO_ANSWER, "a running job without an answer gets the trigger": P.SEND}


def _case(name: str) -> tuple:
    return next(c for c in CASES if c[0] == name)


def _manual():
    spec, status, _ = deploy_stable()
    return spec, with_pending(status, "wc", "manual", T0), lambda st, obs, now: next_step(spec, st, obs, now=now,
                                                                                           name="wc")


def _deletion():
    spec, status, _ = deploy_stable(make_spec(savepoints__onDeletion=True))
    status = with_pending(replace(status, lifecycle_state="DELETING"), "wc", "deletion", T0)
    return spec, status, lambda st, obs, now: next_deletion_step(spec, st, obs, now=now, name="wc")


def _upgrade():
    _, status, cluster = deploy_stable()
    cluster.savepoint_outcome = "IN_PROGRESS"
    new = make_spec(image="strom/runtime:2")
    status, _ = drive(new, status, cluster, T0)
    assert status.reconciliation.upgrade_step == "STOP_WITH_SAVEPOINT" and status.savepoints.pending is not None
    return new, status, lambda st, obs, now: next_step(new, st, obs, now=now, name="wc")


# What each caller does with each progress: (step type, a check of the step).
EXPECTED = {
    ("manual", P.COMPLETED): (WriteStatus, lambda s: s.status.savepoints.last.path == LOC),
    ("manual", P.FAILED): (WriteStatus, lambda s: s.status.error == "manual savepoint failed: disk full"
                           and s.status.savepoints.pending is None),
    ("manual", P.IN_PROGRESS): (Wait, lambda s: "waiting for the manual savepoint" in s.reason),
    ("manual", P.NO_ANSWER): (Wait, lambda s: "waiting for the manual savepoint" in s.reason),
    ("manual", P.SEND): (TriggerSavepoint, lambda s: s.job_id == "job1"),
    ("deletion", P.COMPLETED): (WriteStatus, lambda s: s.status.savepoints.last.path == LOC),
    ("deletion", P.FAILED): (FinishDeletion, lambda s: s.reason.startswith("deleted without a final savepoint "
                                                                           "(disk full)")),
    ("deletion", P.IN_PROGRESS): (Wait, lambda s: "before deletion" in s.reason),
    ("deletion", P.NO_ANSWER): (Wait, lambda s: "before deletion" in s.reason),
    ("deletion", P.SEND): (StopWithSavepoint, lambda s: s.job_id == "job1"),
    ("upgrade", P.COMPLETED): (WriteStatus, lambda s: s.status.reconciliation.upgrade_step == "DELETE_DEPLOYMENTS"
                               and s.status.reconciliation.restore_path == LOC),
    ("upgrade", P.FAILED): (WriteStatus, lambda s: s.status.reconciliation.upgrade_step == "SAVEPOINT_FAILED"
                            and s.status.error == "savepoint failed: disk full"),
    ("upgrade", P.IN_PROGRESS): (Wait, lambda s: "waiting for savepoint" in s.reason),
    ("upgrade", P.NO_ANSWER): (Wait, lambda s: "waiting for the JobManager to answer" in s.reason),
    ("upgrade", P.SEND): (StopWithSavepoint, lambda s: s.job_id == "job1"),
}
CALLERS = {"manual": _manual, "deletion": _deletion, "upgrade": _upgrade}


@pytest.mark.parametrize(("caller", "progress"), list(EXPECTED), ids=[f"{c}-{p.value}" for c, p in EXPECTED])
def test_each_caller_acts_on_the_outcome(caller, progress):
    name = next(n for n, p in ROWS.items() if p is progress)
    _, answer, job_state, waited, *_ = _case(name)
    _, status, decide = CALLERS[caller]()
    pending = status.savepoints.pending
    step = decide(status, _observed(answer, job_state, pending.trigger_id),
                  pending.triggered_at + timedelta(seconds=waited))
    step_type, check = EXPECTED[(caller, progress)]
    assert isinstance(step, step_type), step
    assert check(step), step


@pytest.mark.parametrize("caller", list(CALLERS))
def test_each_caller_gives_up_on_a_savepoint_that_outlives_the_timeout(caller):
    _, status, decide = CALLERS[caller]()
    pending = status.savepoints.pending
    step = decide(status, _observed(("IN_PROGRESS", None, None), "RUNNING", pending.trigger_id),
                  pending.triggered_at + timedelta(seconds=601))
    assert not isinstance(step, Wait | TriggerSavepoint | StopWithSavepoint), step
    assert "not completed within 10 min" in (getattr(step, "reason", "") + (step.status.error or "")), step
