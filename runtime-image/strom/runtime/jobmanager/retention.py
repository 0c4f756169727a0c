"""Retention: how much of the past the JobManager keeps, decided without I/O or clocks of its own.

Flink's keys bound it: `web.exception-history-size` (failures per job, newest kept),
`jobstore.expiration-time` and `jobstore.max-capacity` (finished jobs in the dispatcher's job store),
`rest.async.store-duration` (results of completed savepoint and disposal operations). The callers pass
"now" from their clock, so unit tests drive time by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FinishedJob:
    """A job of the job store in a globally terminal state, and when it got there (seconds)."""

    job_id: str
    end_time: float


def jobs_to_drop(
    finished: Iterable[FinishedJob], *, now: float, expiration_s: float, max_capacity: int
) -> list[str]:
    """The finished jobs to drop from the job store, oldest first: every job that ended at least
    `expiration_s` ago, then the oldest of the rest while more than `max_capacity` remain.
    Ties in end time are broken by job id so the choice does not depend on the store's order."""
    ordered = sorted(finished, key=lambda j: (j.end_time, j.job_id))
    expired = [j.job_id for j in ordered if now - j.end_time >= expiration_s]
    kept = len(ordered) - len(expired)
    over = max(0, kept - max(0, max_capacity))
    return expired + [j.job_id for j in ordered[len(expired) : len(expired) + over]]


def operations_to_drop(completed_at: Mapping[str, float], *, now: float, store_duration_s: float) -> list[str]:
    """The trigger ids of completed operations whose results have been kept `store_duration_s` or
    longer (Flink's CompletedOperationCache); operations still in progress are not in `completed_at`."""
    return [trigger_id for trigger_id, t in completed_at.items() if now - t >= store_duration_s]


def exceptions_to_keep(count: int, history_size: int) -> slice:
    """Which of a job's `count` failures (oldest first) its exception history keeps: the newest
    `history_size`, as Flink's bounded exception history."""
    return slice(max(0, count - max(1, history_size)), count)
