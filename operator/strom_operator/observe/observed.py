"""What the operator observed of a FlinkJob's running job: the input of the lifecycle decision.

Filled by the observer from the JobManager REST API (`/jobs/:jobid`, `/jobs/:jobid/checkpoints`,
`/jobs/:jobid/savepoints/:triggerid`) and from the Deployments' and pods' states; the lifecycle state machine
reads only this and the status, so it is tested without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# Flink's JobStatus values in which the job is alive and can take a savepoint.
RUNNING = "RUNNING"
TERMINAL_FAILURE = "FAILED"
POD_PROBLEM_REASONS = ("ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff", "Unschedulable",
                       "CreateContainerConfigError", "InvalidImageName")


@dataclass(frozen=True, slots=True)
class SavepointTrigger:
    """A savepoint trigger's result as `GET /jobs/:jobid/savepoints/:triggerid` reports it."""

    trigger_id: str
    status: str  # IN_PROGRESS | COMPLETED | FAILED
    location: str | None = None
    failure_cause: str | None = None


@dataclass(frozen=True, slots=True)
class PodProblem:
    """A pod of the job stuck for a reason it will not leave by itself."""

    pod: str
    reason: str  # one of POD_PROBLEM_REASONS
    since: datetime
    message: str = ""


@dataclass(frozen=True, slots=True)
class JobManagerEndpoint:
    """Whether the JobManager Service that TaskManagers dial has a ready endpoint (jobmanager_readiness.py)."""

    service: str  # <namespace>/<name>-jobmanager
    state: str  # Ready | Starting (too early to say) | NotReady
    cause: str = ""  # what the JobManager pod is doing, in words, when not Ready
    stuck: bool = False  # a state the pod will not leave by itself (one of POD_PROBLEM_REASONS)


@dataclass(frozen=True, slots=True)
class ObservedJob:
    """`job_state` None means no answer: the JobManager is unreachable or has no job yet."""

    deployments_exist: bool = False
    job_id: str | None = None
    job_state: str | None = None
    start_time: datetime | None = None
    last_checkpoint: str | None = None
    savepoint: SavepointTrigger | None = None
    pod_problems: tuple[PodProblem, ...] = ()
    jobmanager_endpoint: JobManagerEndpoint | None = None  # None: no JobManager Deployment

    @property
    def running(self) -> bool:
        return self.job_state == RUNNING

    def savepoint_result(self, trigger_id: str) -> SavepointTrigger | None:
        """The result of this trigger, if the JobManager knows it."""
        if self.savepoint is not None and self.savepoint.trigger_id == trigger_id:
            return self.savepoint
        return None
