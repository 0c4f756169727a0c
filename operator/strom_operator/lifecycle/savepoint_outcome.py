"""What a pending savepoint's state means for the next step: one pure rule for every caller.

A manual or periodic savepoint (state_machine.py), an upgrade's or suspension's stop-with-savepoint
(upgrades.py) and a deletion's final savepoint (deletion.py) all ask the same question of the
JobManager's answer: has it completed, has it failed, is it still running, or must the request be
sent (again)? The callers differ only in what they do with the answer (record it and go on, mark
the upgrade SAVEPOINT_FAILED, delete without it), never in how the answer is read, so the order of
the checks lives here once:

1. COMPLETED with a location           -> COMPLETED (a COMPLETED answer without a location waits:
                                          the JobManager has not reported where it went yet)
2. FAILED                              -> FAILED, cause as reported
3. pending longer than the timeout     -> FAILED, "not completed within ..." (before waiting, so an
                                          IN_PROGRESS that never ends cannot block forever)
4. any other answer (IN_PROGRESS)      -> IN_PROGRESS
5. no answer at all (JobManager silent)-> NO_ANSWER: wait, the request cannot be sent yet
6. the job is known and not RUNNING    -> FAILED, "the job is <state>": it cannot take a savepoint
7. otherwise                           -> SEND: (re)send the trigger; the trigger id makes it idempotent
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from strom_operator.crd.status import PendingSavepoint
from strom_operator.lifecycle.savepoint_history import format_age
from strom_operator.observe.observed import ObservedJob


class SavepointProgress(enum.Enum):
    COMPLETED = "completed"
    FAILED = "failed"
    IN_PROGRESS = "in-progress"
    NO_ANSWER = "no-answer"
    SEND = "send"


class FailureKind(enum.Enum):
    REPORTED = "reported"  # the JobManager reported FAILED
    TIMED_OUT = "timed-out"  # pending longer than the savepoint timeout (operator_options.SAVEPOINT_TIMEOUT)
    JOB_NOT_RUNNING = "job-not-running"  # the job ended or failed before the savepoint was sent


@dataclass(frozen=True, slots=True)
class SavepointOutcome:
    progress: SavepointProgress
    location: str | None = None  # COMPLETED: where the savepoint is
    failure: FailureKind | None = None  # FAILED: which kind
    cause: str = ""  # FAILED: in words, without the word "savepoint" (callers frame it)
    waited_s: float = 0.0  # seconds since the trigger was written to status


def savepoint_outcome(pending: PendingSavepoint, observed: ObservedJob, *, now: datetime,
                      timeout_s: float) -> SavepointOutcome:
    """The outcome of `pending` given what was observed of the job at `now` (order in the module docstring)."""
    result = observed.savepoint_result(pending.trigger_id)
    waited = (now - pending.triggered_at).total_seconds()
    if result is not None and result.status == "COMPLETED" and result.location:
        return SavepointOutcome(SavepointProgress.COMPLETED, location=result.location, waited_s=waited)
    if result is not None and result.status == "FAILED":
        return SavepointOutcome(SavepointProgress.FAILED, failure=FailureKind.REPORTED,
                                cause=result.failure_cause or "no cause given", waited_s=waited)
    if waited > timeout_s:
        return SavepointOutcome(SavepointProgress.FAILED, failure=FailureKind.TIMED_OUT,
                                cause=f"not completed within {format_age(timeout_s)}", waited_s=waited)
    if result is not None:
        return SavepointOutcome(SavepointProgress.IN_PROGRESS, waited_s=waited)
    if observed.job_state is None:
        return SavepointOutcome(SavepointProgress.NO_ANSWER, waited_s=waited)
    if not observed.running:
        return SavepointOutcome(SavepointProgress.FAILED, failure=FailureKind.JOB_NOT_RUNNING,
                                cause=f"the job is {observed.job_state}", waited_s=waited)
    return SavepointOutcome(SavepointProgress.SEND, waited_s=waited)
