"""What the REST API shows: the read model the JobManager fills and the REST layer serializes.

The JobManager implements `JobManagerView`; `rest_api` calls only these methods and turns the
frozen records below into Flink's JSON. The records use Python names; the Flink field names
live in one place, the serializer in `rest_api`. Errors a view raises (`NotFoundError`,
`BadRequestError`, `ConflictError`) carry the HTTP status Flink answers with.

All times are epoch milliseconds; `-1` means "not yet" (Flink's convention for end times).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from strom import __version__

# the ids and the job status live in strom.common (one definition for the engine); re-exported for the REST layer
from strom.common.ids import JobId as JobId
from strom.common.ids import TaskManagerId as TaskManagerId
from strom.common.ids import VertexId as VertexId
from strom.common.ids import is_flink_id as is_flink_id
from strom.common.ids import new_job_id as new_job_id
from strom.common.job_status import JobStatus as JobStatus

if TYPE_CHECKING:
    from strom.graph.job_graph import JobGraph


class ExecutionState(StrEnum):
    """Flink's ExecutionState: the state of one subtask attempt."""

    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"
    RECONCILING = "RECONCILING"
    INITIALIZING = "INITIALIZING"


# -- cluster --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterOverview:
    taskmanagers: int
    slots_total: int
    slots_available: int
    jobs_running: int
    jobs_finished: int
    jobs_cancelled: int
    jobs_failed: int
    flink_version: str = __version__  # Strom's version stands where Flink's would
    flink_commit: str = "unknown"


@dataclass(frozen=True, slots=True)
class Hardware:
    cpu_cores: int
    physical_memory: int  # bytes
    free_memory: int  # bytes
    managed_memory: int = 0  # bytes


@dataclass(frozen=True, slots=True)
class TaskManagerInfo:
    id: TaskManagerId
    path: str  # the TaskManager's RPC address, e.g. "tcp://127.0.0.1:6122"
    data_port: int
    slots_number: int
    free_slots: int
    # Flink's "timeSinceLastHeartbeat" holds, despite its name, the epoch ms of the last heartbeat.
    last_heartbeat: int
    hardware: Hardware
    memory_configuration: Mapping[str, int] = field(default_factory=dict)  # Flink's memoryConfiguration keys


# -- jobs -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubtaskDetails:
    """One parallel subtask of a vertex, in its current attempt."""

    index: int
    state: ExecutionState
    host: str  # "host:dataPort" of the TaskManager running it; "(unassigned)" before deployment
    taskmanager_id: TaskManagerId | None
    start_time: int  # -1 before it was deployed
    end_time: int = -1
    attempt: int = 0


@dataclass(frozen=True, slots=True)
class VertexDetails:
    """A JobVertex (an operator chain) and its subtasks."""

    id: VertexId
    name: str
    parallelism: int
    max_parallelism: int
    status: ExecutionState  # Flink aggregates subtask states into the vertex state
    start_time: int
    end_time: int
    subtasks: tuple[SubtaskDetails, ...]

    def task_counts(self) -> dict[str, int]:
        """Subtasks per ExecutionState, every state present (Flink's "tasks" map)."""
        counts = {s.value: 0 for s in ExecutionState}
        for st in self.subtasks:
            counts[st.state.value] += 1
        return counts


@dataclass(frozen=True, slots=True)
class JobSummary:
    """A row of /jobs/overview."""

    jid: JobId
    name: str
    state: JobStatus
    start_time: int
    end_time: int  # -1 while not terminal
    last_modification: int
    task_counts: Mapping[str, int]  # ExecutionState name -> number of subtasks


@dataclass(frozen=True, slots=True)
class JobConfig:
    """/jobs/:jobid/config and /jobs/:jobid/jobmanager/config: what the job runs with."""

    jid: JobId
    name: str
    execution_mode: str  # Flink's ExecutionConfig execution mode: PIPELINED
    restart_strategy: str  # a sentence describing the effective restart strategy, as Flink's
    parallelism: int  # the job's highest vertex parallelism
    configuration: Mapping[str, str]  # the effective configuration (cluster < job), secrets masked


@dataclass(frozen=True, slots=True)
class JobDetails:
    """/jobs/:jobid: the job, the time it entered each state, and its vertices."""

    jid: JobId
    name: str
    state: JobStatus
    start_time: int
    end_time: int
    max_parallelism: int
    timestamps: Mapping[str, int]  # JobStatus name -> epoch ms it was entered (0 = never)
    vertices: tuple[VertexDetails, ...]
    num_restarts: int = 0
    is_stoppable: bool = False

    def summary(self, last_modification: int | None = None) -> JobSummary:
        counts = {s.value: 0 for s in ExecutionState}
        for v in self.vertices:
            for state, n in v.task_counts().items():
                counts[state] += n
        last = last_modification if last_modification is not None else max(self.timestamps.values(), default=0)
        return JobSummary(self.jid, self.name, self.state, self.start_time, self.end_time, last, counts)

    def vertex(self, vid: str) -> VertexDetails | None:
        return next((v for v in self.vertices if v.id == vid), None)


# -- plan -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlanInput:
    num: int  # the input's position
    id: VertexId  # the producing vertex
    ship_strategy: str  # FORWARD | REBALANCE | HASH | BROADCAST | ...
    exchange: str = "pipelined_bounded"


@dataclass(frozen=True, slots=True)
class PlanNode:
    id: VertexId
    parallelism: int
    operator: str
    operator_strategy: str
    description: str
    inputs: tuple[PlanInput, ...] = ()


@dataclass(frozen=True, slots=True)
class JobPlan:
    jid: JobId
    name: str
    nodes: tuple[PlanNode, ...]
    type: str = "STREAMING"


def plan_from_job_graph(jid: JobId, job_graph: JobGraph) -> JobPlan:
    """Flink's JSON plan of a JobGraph: one node per vertex, inputs by producing vertex."""
    nodes = []
    for v in job_graph.vertices:
        inputs = tuple(
            PlanInput(num=i, id=VertexId(e.source_vertex.id), ship_strategy=e.stream_edge.partitioner.ship_strategy)
            for i, e in enumerate(v.inputs)
        )
        # Flink's description lists the chained operators; the vertex name already does.
        nodes.append(PlanNode(VertexId(v.id), v.parallelism, "", "", v.name, inputs))
    return JobPlan(jid=jid, name=job_graph.job_name, nodes=tuple(nodes))


# -- exceptions -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExceptionEntry:
    """One failure of the job, as in Flink's exception history (newest first in JobExceptions)."""

    exception_name: str  # the exception's class name, e.g. "ConnectionResetError"
    stacktrace: str
    timestamp: int
    task_name: str | None = None  # "<vertex name> (2/4)#1" when a task failed
    location: str | None = None  # "host:port" of the TaskManager
    taskmanager_id: TaskManagerId | None = None
    failure_labels: Mapping[str, str] = field(default_factory=dict)
    concurrent: tuple[ExceptionEntry, ...] = ()  # failures of the same restart, after the root one


@dataclass(frozen=True, slots=True)
class JobExceptions:
    history: tuple[ExceptionEntry, ...] = ()  # newest first
    truncated: bool = False

    @property
    def root(self) -> ExceptionEntry | None:
        return self.history[0] if self.history else None


# -- checkpoints ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointEntry:
    """One checkpoint in /jobs/:jobid/checkpoints; `status` is IN_PROGRESS, COMPLETED or FAILED."""

    id: int
    status: str
    trigger_timestamp: int
    latest_ack_timestamp: int  # -1: no acknowledgement yet
    end_to_end_duration: int  # ms
    num_subtasks: int
    num_acknowledged_subtasks: int
    external_path: str | None = None  # completed ones
    failure_timestamp: int = -1  # failed ones
    failure_message: str | None = None
    state_size: int = 0  # bytes the checkpoint wrote: state files and newly uploaded shared (incremental) files
    is_savepoint: bool = False
    persisted_data: int = 0  # in-flight data an unaligned checkpoint stored (channel state), bytes
    unaligned: bool = False


@dataclass(frozen=True, slots=True)
class RestoredCheckpointEntry:
    id: int
    restore_timestamp: int
    external_path: str
    is_savepoint: bool = False


@dataclass(frozen=True, slots=True)
class JobCheckpoints:
    """Flink's CheckpointingStatistics of one job."""

    restored: int = 0
    completed: int = 0
    failed: int = 0
    in_progress: int = 0
    latest_completed: CheckpointEntry | None = None
    latest_failed: CheckpointEntry | None = None
    latest_restored: RestoredCheckpointEntry | None = None
    history: tuple[CheckpointEntry, ...] = ()  # newest first

    @property
    def total(self) -> int:
        return self.completed + self.failed + self.in_progress


# -- errors a view raises -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SavepointStatus:
    """One savepoint operation: IN_PROGRESS, or COMPLETED with a location or a failure message."""

    status: str
    location: str | None = None
    failure: str | None = None


class RestHandlerError(Exception):
    """An error with the HTTP status Flink answers it with; the message goes to {"errors": [...]}."""

    status = 500


class NotFoundError(RestHandlerError):
    status = 404


class BadRequestError(RestHandlerError):
    status = 400


class ForbiddenError(RestHandlerError):
    """A request the cluster is configured to refuse (e.g. job submission with web.submit.enable: false)."""

    status = 403


class ConflictError(RestHandlerError):
    """E.g. cancelling a job that already reached a terminal state (Flink answers 409)."""

    status = 409


# -- the contract ---------------------------------------------------------------------------------

SubtaskMetrics = Mapping[int, Mapping[str, float]]  # subtask index -> metric name -> value


class JobManagerView(Protocol):
    """What the REST handlers ask the JobManager. Calls run on the JobManager's event loop, so
    the read methods must not block. Unknown ids raise `NotFoundError`."""

    def overview(self) -> ClusterOverview: ...

    def config(self) -> Mapping[str, str]:
        """The JobManager's effective configuration (Flink keys -> values as text)."""

    def jobs(self) -> list[JobSummary]: ...

    def job(self, jid: JobId) -> JobDetails: ...

    def plan(self, jid: JobId) -> JobPlan: ...

    def job_config(self, jid: JobId) -> JobConfig:
        """The job's effective configuration: the cluster's with the job's own settings over it."""

    def exceptions(self, jid: JobId) -> JobExceptions: ...

    def cancel(self, jid: JobId) -> None:
        """Start cancelling; returns at once. `ConflictError` when the job is already terminal.
        An implementation may also be a coroutine function: the handler awaits the result."""

    def vertex(self, jid: JobId, vid: VertexId) -> VertexDetails: ...

    def checkpoints(self, jid: JobId) -> JobCheckpoints:
        """Checkpoint counts, latest ones and history (all zero/empty when checkpointing is off)."""

    def subtask_metrics(self, jid: JobId, vid: VertexId) -> SubtaskMetrics:
        """Latest metrics of each subtask of the vertex: Flink's task metric names
        (numRecordsInPerSecond, busyTimeMsPerSecond, backPressuredTimeMsPerSecond, ...)."""

    def job_metrics(self, jid: JobId) -> Mapping[str, float]:
        """Job-scope metrics (uptime, numRestarts, checkpoint figures) by Flink name."""

    def trigger_savepoint(
        self,
        jid: JobId,
        target_directory: str | None,
        *,
        then: str | None,
        drain: bool = False,
        trigger_id: str | None = None,
    ) -> str:
        """Start a savepoint and return its trigger id; `then` ('FINISHED' = stop, 'CANCELED' =
        cancel-job) ends the job after it, `drain` (with stop) emits the maximum watermark before
        it; a client's `trigger_id` names the operation (repeating it returns the same one).
        `ConflictError` when the job cannot take one now,
        `BadRequestError` when no target directory is known."""

    def savepoint_status(self, jid: JobId, trigger_id: str) -> SavepointStatus:
        """The operation of `trigger_id`; `NotFoundError` for an unknown trigger id."""

    def taskmanagers(self) -> list[TaskManagerInfo]: ...

    def taskmanager_metrics(self, tmid: TaskManagerId) -> Mapping[str, float]: ...

    async def submit(self, payload: bytes, content_type: str) -> JobId:
        """Accept a job payload (strom.common.job_payload) and return its job id; a payload that
        does not decode raises `BadRequestError`."""

    def rest_address(self) -> str:
        """ "host:port" the REST endpoint is bound to (the real port when configured as 0)."""
