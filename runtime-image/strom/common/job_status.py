"""`JobStatus` (`pyflink.common.JobStatus`): Flink's job states.

Members compare equal to their names as strings (`JobStatus.FINISHED == "FINISHED"`), because
Strom's executors and REST API speak the names.
"""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    def is_globally_terminal_state(self) -> bool:
        """Terminal for the whole job (no restart follows): FAILED, CANCELED, FINISHED."""
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    def is_terminal_state(self) -> bool:
        """Terminal for this JobManager: the globally terminal states and SUSPENDED."""
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED

    def __str__(self) -> str:
        return self.value
