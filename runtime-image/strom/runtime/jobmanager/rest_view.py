"""The JobManager as the REST layer sees it: `JobManagerView` over the dispatcher, the
resource manager and the job masters (read model records built on request)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from strom.common.config_options import ConfigError
from strom.common.job_payload import decode_job
from strom.runtime.checkpoint.stats import CheckpointStats
from strom.runtime.jobmanager.dispatcher import JobManager
from strom.runtime.jobmanager.job_configuration import shown_configuration
from strom.runtime.jobmanager.job_master import TERMINAL_JOB_STATES, FailureRecord, JobMaster
from strom.runtime.jobmanager.read_model import (
    BadRequestError,
    CheckpointEntry,
    ClusterOverview,
    ConflictError,
    ExceptionEntry,
    ExecutionState,
    Hardware,
    JobCheckpoints,
    JobConfig,
    JobDetails,
    JobExceptions,
    JobId,
    JobPlan,
    JobStatus,
    JobSummary,
    NotFoundError,
    RestoredCheckpointEntry,
    SavepointStatus,
    SubtaskDetails,
    SubtaskMetrics,
    TaskManagerId,
    TaskManagerInfo,
    VertexDetails,
    VertexId,
    plan_from_job_graph,
)
from strom.runtime.jobmanager.savepoint_operations import SavepointRefused


def _ms(t: float) -> int:
    return int(t * 1000) if t else -1


def _vertex_state(states: list[str]) -> ExecutionState:
    """Flink's aggregation: any FAILED > CANCELING > CANCELED > RUNNING > DEPLOYING > ... > FINISHED all."""
    for s in ("FAILED", "CANCELING", "CANCELED", "RUNNING", "DEPLOYING", "SCHEDULED", "CREATED"):
        if s in states:
            return ExecutionState(s)
    return ExecutionState.FINISHED


class DispatcherView:
    def __init__(self, jm: JobManager) -> None:
        self.jm = jm

    def _job(self, jid: str) -> JobMaster:
        job = self.jm.jobs.get(jid)
        if job is None:
            raise NotFoundError(f"Job {jid} not found")
        return job

    def overview(self) -> ClusterOverview:
        states = [j.state for j in self.jm.jobs.values()]
        return ClusterOverview(
            taskmanagers=len(self.jm.rm.taskmanagers),
            slots_total=self.jm.rm.total_slots(),
            slots_available=self.jm.rm.free_slot_count(),
            jobs_running=sum(s not in TERMINAL_JOB_STATES for s in states),
            jobs_finished=states.count("FINISHED"),
            jobs_cancelled=states.count("CANCELED"),
            jobs_failed=states.count("FAILED"),
        )

    def config(self) -> Mapping[str, str]:
        """The cluster's configuration in clear (the REST layer masks secrets before answering;
        savepoint disposal needs the storage credentials)."""
        return {k: str(v) for k, v in self.jm.config.to_dict().items()}

    def jobs(self) -> list[JobSummary]:
        return [self.job(JobId(jid)).summary() for jid in self.jm.jobs]

    def job(self, jid: JobId) -> JobDetails:
        job = self._job(jid)
        vertices = []
        for v in job.job_graph.vertices:
            subtasks = []
            for i in range(v.parallelism):
                st = job.subtasks[(v.id, i)]
                port = (
                    self.jm.rm.taskmanagers[st.tm_id].slots.get(st.slot, 0)
                    if st.tm_id in self.jm.rm.taskmanagers
                    else 0
                )
                subtasks.append(
                    SubtaskDetails(
                        index=i,
                        state=ExecutionState(st.state),
                        host=f"{st.host}:{port}" if st.host else "(unassigned)",
                        taskmanager_id=TaskManagerId(st.tm_id) if st.tm_id else None,
                        start_time=_ms(st.start_time),
                        end_time=_ms(st.end_time),
                        attempt=job.attempt,
                    )
                )
            starts = [s.start_time for s in subtasks if s.start_time > 0]
            ends = [s.end_time for s in subtasks]
            vertices.append(
                VertexDetails(
                    id=VertexId(v.id),
                    name=v.name,
                    parallelism=v.parallelism,
                    max_parallelism=v.max_parallelism,
                    status=_vertex_state([s.state.value for s in subtasks]),
                    start_time=min(starts) if starts else -1,
                    end_time=max(ends) if ends and all(e > 0 for e in ends) else -1,
                    subtasks=tuple(subtasks),
                )
            )
        return JobDetails(
            jid=JobId(job.job_id),
            name=job.name,
            state=JobStatus(job.state),
            start_time=_ms(job.start_time),
            end_time=_ms(job.end_time),
            max_parallelism=job.graph.max_parallelism,
            timestamps={s: _ms(t) for s, t in job.state_times.items()},
            vertices=tuple(vertices),
            num_restarts=job.num_restarts,
            is_stoppable=False,
        )

    def plan(self, jid: JobId) -> JobPlan:
        return plan_from_job_graph(jid, self._job(jid).job_graph)

    def job_config(self, jid: JobId) -> JobConfig:
        job = self._job(jid)
        return JobConfig(
            jid=jid,
            name=job.name,
            execution_mode="PIPELINED",
            restart_strategy=job.restart.describe(),
            parallelism=max((v.parallelism for v in job.job_graph.vertices), default=1),
            configuration=shown_configuration(job.graph.config),
        )

    def exceptions(self, jid: JobId) -> JobExceptions:
        job = self._job(jid)

        def entry(f: FailureRecord) -> ExceptionEntry:
            return ExceptionEntry(
                exception_name=_exception_name(f.trace),
                stacktrace=f.trace,
                timestamp=f.timestamp_ms,
                task_name=f.task,
                concurrent=tuple(entry(c) for c in f.concurrent),
            )

        history = tuple(entry(f) for f in reversed(job.failures))
        return JobExceptions(history=history, truncated=job.failures_dropped > 0)

    def cancel(self, jid: JobId) -> None:
        job = self._job(jid)
        if job.state in TERMINAL_JOB_STATES:
            raise ConflictError(f"Job {jid} is already in terminal state {job.state}")
        job.cancel()

    def vertex(self, jid: JobId, vid: VertexId) -> VertexDetails:
        details = self.job(jid).vertex(vid)
        if details is None:
            raise NotFoundError(f"Vertex {vid} not found in job {jid}")
        return details

    def subtask_metrics(self, jid: JobId, vid: VertexId) -> SubtaskMetrics:
        vertex = self.vertex(jid, vid)
        return self.jm.subtask_metrics(jid, vertex.name, vertex.parallelism)

    def checkpoints(self, jid: JobId) -> JobCheckpoints:
        job = self._job(jid)
        if job.checkpointing is None:
            return JobCheckpoints()
        s = job.checkpointing.coordinator.stats.snapshot()
        r = s.latest_restored
        return JobCheckpoints(
            restored=s.num_restored,
            completed=s.num_completed,
            failed=s.num_failed,
            in_progress=s.num_in_progress,
            latest_completed=_checkpoint_entry(s.latest_completed),
            latest_failed=_checkpoint_entry(s.latest_failed),
            latest_restored=None
            if r is None
            else RestoredCheckpointEntry(r.checkpoint_id, r.restore_timestamp, r.external_path, r.is_savepoint),
            history=tuple(e for c in s.history if (e := _checkpoint_entry(c)) is not None),
        )

    def trigger_savepoint(
        self,
        jid: JobId,
        target_directory: str | None,
        *,
        then: str | None,
        drain: bool = False,
        trigger_id: str | None = None,
    ) -> str:
        job = self._job(jid)
        try:
            return job.trigger_savepoint(target_directory, then=then, drain=drain, trigger_id=trigger_id)
        except SavepointRefused as e:
            raise ConflictError(str(e)) from None
        except ConfigError as e:  # no target directory, or one that is not a storage URI
            raise BadRequestError(f"Bad request: {e}") from None

    def savepoint_status(self, jid: JobId, trigger_id: str) -> SavepointStatus:
        op = self._job(jid).savepoints.get(trigger_id)
        if op is None:
            raise NotFoundError(f"Savepoint operation {trigger_id} not found for job {jid}")
        return SavepointStatus(op.status, op.location, op.failure)

    def job_metrics(self, jid: JobId) -> Mapping[str, float]:
        job = self._job(jid)
        end = job.end_time or time.time()
        stats = job.checkpointing.coordinator.stats if job.checkpointing is not None else None
        return {
            "uptime": float(int((end - job.start_time) * 1000)) if job.state == "RUNNING" else 0.0,
            "numRestarts": float(job.num_restarts),
            "lastCheckpointDuration": float(stats.last_duration_ms()) if stats is not None else 0.0,
            "numberOfCompletedCheckpoints": float(stats.completed_count()) if stats is not None else 0.0,
            "numberOfFailedCheckpoints": float(stats.failed_count()) if stats is not None else 0.0,
            "lastCheckpointSize": float(stats.last_size()) if stats is not None else 0.0,
        }

    def taskmanagers(self) -> list[TaskManagerInfo]:
        cores = os.cpu_count() or 1
        out = []
        for tm in self.jm.rm.taskmanagers.values():
            out.append(
                TaskManagerInfo(
                    id=TaskManagerId(tm.tm_id),
                    path=f"tcp://{tm.host}",
                    data_port=min(tm.slots.values(), default=0),
                    slots_number=len(tm.slots),
                    free_slots=len(tm.free_slots),
                    last_heartbeat=int((time.time() - (time.monotonic() - tm.last_heartbeat)) * 1000),
                    hardware=Hardware(cpu_cores=cores, physical_memory=_physical_memory(), free_memory=0),
                )
            )
        return out

    def taskmanager_metrics(self, tmid: TaskManagerId) -> Mapping[str, float]:
        tm = self.jm.rm.taskmanagers.get(tmid)
        if tm is None:
            raise NotFoundError(f"TaskManager {tmid} not found")
        reported = getattr(tm.metrics, "taskmanagers", {}).get(tm.tm_id, {})
        return {
            "Status.TaskSlots.Total": float(len(tm.slots)),
            "Status.TaskSlots.Free": float(len(tm.free_slots)),
            **{k: float(v) for k, v in reported.items()},
        }

    async def submit(self, payload: bytes, content_type: str) -> JobId:
        try:
            graph = decode_job(payload)
        except Exception as e:  # noqa: BLE001 - any undecodable payload is the client's error
            raise BadRequestError(f"cannot decode the submitted job: {e}") from e
        try:
            return JobId(await self.jm.submit(graph))
        except ValueError as e:  # a job the cluster cannot run as configured (e.g. checkpoint storage)
            raise BadRequestError(f"Bad request: {e}") from e

    def rest_address(self) -> str:
        from strom.common import config_options as opts

        return f"{self.jm.config.get(opts.REST_ADDRESS)}:{self.jm.rest_port}"


def _checkpoint_entry(c: CheckpointStats | None) -> CheckpointEntry | None:
    if c is None:
        return None
    return CheckpointEntry(
        id=c.checkpoint_id,
        status=c.status,
        trigger_timestamp=c.trigger_timestamp,
        latest_ack_timestamp=c.latest_ack_timestamp,
        end_to_end_duration=c.end_to_end_duration,
        num_subtasks=c.num_subtasks,
        num_acknowledged_subtasks=c.num_acknowledged,
        external_path=c.external_path or None,
        failure_timestamp=c.end_timestamp if c.status == "FAILED" else -1,
        failure_message=c.failure_message or None,
        state_size=c.state_size,
        persisted_data=c.persisted_data,
        unaligned=c.unaligned,
    )


def _exception_name(trace: str) -> str:
    last = trace.strip().splitlines()[-1] if trace.strip() else "Exception"
    return last.split(":", 1)[0].strip() or "Exception"


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0
