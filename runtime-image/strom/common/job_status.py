"""`JobStatus` (`pyflink.common.JobStatus`): Flink's job states — the one table the engine uses.

The user API (`JobClient.get_job_status`), the JobManager's read model and REST API, and checkpoint
retention all take their states and the terminal rules from here. Members compare equal to their
names as strings (`JobStatus.FINISHED == "FINISHED"`), because Strom's executors and REST API speak
the names. Flink's rules: FAILED, CANCELED and FINISHED are *globally* terminal (the job is over,
its retained checkpoints follow their retention policy); SUSPENDED is terminal only for this
JobManager (another one recovers the job, so its checkpoints stay).
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
