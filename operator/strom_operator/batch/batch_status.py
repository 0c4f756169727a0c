"""status.batch typed: where a batch job's run is, kept in FlinkJobStatus.batch as its dict form.

The status is the write-ahead log here too: a driver pod's name, submission and attempt are
written with the step that creates it, and a retry's time before it is due, so an operator that
restarts continues the same run instead of starting another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from strom_operator.crd.status import format_time, parse_time

SUBMITTED, RUNNING, PENDING_RERUN, COMPLETED, FAILED = "SUBMITTED", "RUNNING", "PENDING_RERUN", "COMPLETED", "FAILED"
TERMINAL = (COMPLETED, FAILED)


def _t(value: Any) -> datetime | None:
    return parse_time(value) if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class BatchStatus:
    state: str | None = None
    driver_pod: str | None = None
    submission: int = 0
    attempt: int = 0
    submitted_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    next_attempt_at: datetime | None = None
    exit_code: int | None = None
    reason: str | None = None
    executors: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> BatchStatus:
        d = d or {}
        return cls(d.get("state"), d.get("driverPod"), int(d.get("submission") or 0), int(d.get("attempt") or 0),
                   _t(d.get("submittedAt")), _t(d.get("startedAt")), _t(d.get("finishedAt")),
                   _t(d.get("nextAttemptAt")), d.get("exitCode"), d.get("reason"), d.get("executors"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"submission": self.submission, "attempt": self.attempt}
        for key, value in (("state", self.state), ("driverPod", self.driver_pod), ("submittedAt", self.submitted_at),
                           ("startedAt", self.started_at), ("finishedAt", self.finished_at),
                           ("nextAttemptAt", self.next_attempt_at), ("exitCode", self.exit_code),
                           ("reason", self.reason), ("executors", self.executors)):
            if value is not None:
                out[key] = format_time(value) if isinstance(value, datetime) else value
        return out
