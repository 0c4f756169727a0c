"""The embedded executor: runs a StreamGraph's subtasks as threads of this process.

This is what `env.execute()` uses when no cluster client is installed (tests,
`python job.py`). With checkpointing on (`execution.checkpointing.interval` > 0) a
`CheckpointCoordinator` snapshots the job periodically to `state.checkpoints.dir` (a
temporary directory, removed at the end, when unset). On a task failure every task is
cancelled and the restart strategy (`restart-strategy.*`; with checkpointing, fixed-delay
without limit as in Flink) decides: restart all tasks as a new attempt, restored from the
latest completed checkpoint (or from scratch without one), or fail the job with
`JobExecutionError` carrying the failing task's name and the user's traceback.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
import traceback
import uuid
from functools import partial
from typing import Any

from strom.common import config_options as opts
from strom.common.job_status import JobStatus
from strom.datastream.stream_execution_environment import JobExecutionResult
from strom.graph.job_graph import create_job_graph
from strom.graph.stream_graph import StreamGraph
from strom.runtime.checkpoint.channel_state import restore_channel_state
from strom.runtime.checkpoint.coordinator import CheckpointCoordinator
from strom.runtime.checkpoint.errors import CheckpointFailuresExceeded, CheckpointStorageError
from strom.runtime.checkpoint.retention import RetainedCheckpoint
from strom.runtime.checkpoint.savepoints import check_savepoint_restore
from strom.runtime.checkpoint.storage import checkpoint_storage_for
from strom.runtime.checkpoint.task_snapshots import AsyncSnapshotWriter, restore_operators
from strom.runtime.execution_graph import ExecutionVertex, build_tasks
from strom.runtime.jobmanager.restart_strategies import restart_strategy_from
from strom.runtime.metrics import MetricRegistry, MetricsSnapshot
from strom.runtime.tasks.stream_task import FAILED, FINISHED

log = logging.getLogger("strom.runtime.local")

# Flink's JobStatus.isGloballyTerminalState (FINISHED, FAILED, CANCELED), from the one table in strom.common
_TERMINAL = tuple(s for s in JobStatus if s.is_globally_terminal_state())


class JobExecutionError(RuntimeError):
    """The job failed; the message carries the failing task and the user's traceback."""

    def __init__(self, message: str, *, job_id: str, task: str | None = None, trace: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.task = task
        self.trace = trace


class LocalJob:
    def __init__(self, graph: StreamGraph, *, clock: Any = None) -> None:
        self.graph = graph
        self.job_id = uuid.uuid4().hex
        self.job_graph = create_job_graph(graph)
        self._clock = clock
        self._done = threading.Event()
        self._cancel_requested = threading.Event()
        self._lock = threading.Lock()
        self._remaining = 0
        self.status = "CREATED"
        self.start_time = 0.0
        self.end_time = 0.0
        self.failed_task: Any = None
        self.restore_failure: BaseException | None = None
        self.attempt = 0
        self.restarts = 0
        self.restored_checkpoint_id: int | None = None  # of the latest restart, None: from scratch
        self.restart_strategy = restart_strategy_from(graph.config)
        # The job's own registry (not the process one): its figures stay readable after it ends.
        self.metric_registry = MetricRegistry(config=graph.config)
        self.checkpoint_coordinator: CheckpointCoordinator | None = None
        self._snapshot_writer: AsyncSnapshotWriter | None = None
        self._temp_checkpoint_dir: str | None = None
        if graph.config.get(opts.CHECKPOINT_INTERVAL) > 0:
            self._setup_checkpointing()
        self._savepoint = self._savepoint_to_restore()
        self.vertices = self._build(0)
        self._restore(self.vertices)
        self.metric_registry.register_job_gauges(
            self.job_id, graph.job_name, uptime_ms=self._uptime_ms, num_restarts=lambda: self.restarts
        )

    def _setup_checkpointing(self) -> None:
        config = self.graph.config
        uri = config.get(opts.CHECKPOINTS_DIR)
        if not uri:
            # Flink would keep the state in the JobManager's memory; a private directory does the same job
            uri = self._temp_checkpoint_dir = tempfile.mkdtemp(prefix="strom-checkpoints-")
        storage = checkpoint_storage_for(uri, config)
        coordinator = self.checkpoint_coordinator = CheckpointCoordinator(
            job_id=self.job_id, config=config, storage=storage, on_failures_exceeded=self._fail_on_checkpoints
        )
        self._snapshot_writer = AsyncSnapshotWriter(
            storage, self.job_id, acknowledge=coordinator.acknowledge, decline=coordinator.decline
        )

    def _build(self, attempt: int) -> list[ExecutionVertex]:
        vertices = build_tasks(
            self.job_graph,
            config=self.graph.config,
            attempt=attempt,
            clock=self._clock,
            on_done=partial(self._task_done, attempt),
        )
        for ev in vertices:
            # registered again under the same names: the new attempt replaces the old one's figures
            self.metric_registry.register_task(
                ev.task,
                job_id=self.job_id,
                job_name=self.graph.job_name,
                vertex_id=ev.vertex.id,
                metric_group=ev.metric_group,
                attempt=attempt,
            )
            if self._snapshot_writer is not None:
                ev.task.enable_checkpointing(self._snapshot_writer, (ev.vertex.id, ev.subtask_index))
        return vertices

    def _uptime_ms(self) -> float:
        # Flink's uptime gauge: 0 before running, -1 once the job reached a terminal state.
        if self.status in _TERMINAL:
            return -1
        return (time.time() - self.start_time) * 1000 if self.start_time else 0

    def metrics_snapshot(self) -> MetricsSnapshot:
        """Task I/O metrics, user metrics and job gauges of this job, read now."""
        return self.metric_registry.snapshot()

    def _fail_on_checkpoints(self, reason: str) -> None:
        """Too many checkpoints failed: fail a task of the current attempt (its failover restarts the job).

        Called under the coordinator's lock, so it must not take the job's lock (a task ending takes the
        job's lock, then the coordinator's): the vertex list is read as it is, and the task fails itself."""

        def fail() -> None:
            raise CheckpointFailuresExceeded(reason)

        running = [ev.task for ev in list(self.vertices) if ev.task.state == "RUNNING"]
        if running:
            running[0].submit(fail)

    # -- task ends, failover ----------------------------------------------------------------------------
    def _task_done(self, attempt: int, task: Any) -> None:
        with self._lock:
            if attempt != self.attempt:
                return  # a task of an attempt already replaced
            self._remaining -= 1
            coordinator = self.checkpoint_coordinator
            if coordinator is not None and task.state == FINISHED:
                coordinator.task_finished(task.checkpoint_key)
            if task.state == FAILED and self.failed_task is None:
                self.failed_task = task
                if self.status != "CANCELLING":
                    self.status = "FAILING"
                if coordinator is not None:
                    coordinator.detach_tasks(f"task {task.display_name} failed")
                for ev in self.vertices:
                    if ev.task is not task:
                        ev.task.cancel()
            if self._remaining > 0:
                return
            if self.failed_task is not None and self.status == "FAILING":
                delay_ms = self.restart_strategy.next_restart_delay(int(time.time() * 1000))
                if delay_ms is not None:
                    self.status = "RESTARTING"
                    threading.Thread(
                        target=self._restart, args=(delay_ms,), name=f"restart {self.job_id}", daemon=True
                    ).start()
                    return
            if self.failed_task is not None and self.status == "FAILING":
                self._finish("FAILED")
            elif all(ev.task.state == FINISHED for ev in self.vertices):
                self._finish("FINISHED")
            else:
                self._finish("CANCELED")

    def _restart(self, delay_ms: int) -> None:
        """A new attempt of every task, restored from the latest completed checkpoint."""
        if self._cancel_requested.wait(delay_ms / 1000.0):
            with self._lock:
                self._finish("CANCELED")
            return
        with self._lock:
            if self._cancel_requested.is_set():
                self._finish("CANCELED")
                return
            failed = self.failed_task
            self.attempt += 1
            self.restarts += 1
            self.failed_task = None
            try:
                vertices = self._build(self.attempt)
                self._restore(vertices)
            except Exception as e:  # noqa: BLE001 - a restore that fails ends the job, with its reason
                log.error("job %s cannot restart: %s", self.job_id, e)
                self.failed_task = failed
                self.restore_failure = e
                self._finish("FAILED")
                return
            self.vertices = vertices
            self._remaining = len(vertices)
            self.status = "RUNNING"
            if self.checkpoint_coordinator is not None:
                self.checkpoint_coordinator.attach_tasks({ev.task.checkpoint_key: ev.task for ev in vertices})
            log.info(
                "job %s restarted (attempt %d) from checkpoint %s",
                self.job_id,
                self.attempt,
                self.restored_checkpoint_id,
            )
            for ev in vertices:
                ev.task.start()

    def _savepoint_to_restore(self) -> tuple[Any, Any] | None:
        """`execution.savepoint.path` (`strom run --threads --from-savepoint`): its storage and metadata,
        checked against the job's operator uids; a `ValueError` naming the problem otherwise."""
        path = str(self.graph.config.get(opts.SAVEPOINT_PATH) or "").rstrip("/").removesuffix("/_metadata")
        if not path:
            return None
        allow = bool(self.graph.config.get(opts.SAVEPOINT_IGNORE_UNCLAIMED_STATE))
        uids = [n.uid for n in self.graph.nodes.values()]
        try:
            metadata = check_savepoint_restore(path, uids, allow_non_restored=allow, config=self.graph.config)
        except CheckpointStorageError as e:
            raise ValueError(f"cannot restore from savepoint {path}: {e}") from None
        return checkpoint_storage_for(path, self.graph.config), metadata

    def _restore(self, vertices: list[ExecutionVertex]) -> None:
        """The latest completed checkpoint, else the savepoint the job started from, else nothing."""
        coordinator = self.checkpoint_coordinator
        latest: RetainedCheckpoint | None = coordinator.latest_completed if coordinator is not None else None
        self.restored_checkpoint_id = None
        if latest is None and self._savepoint is not None:
            storage, metadata = self._savepoint
            restore_operators(storage, "", metadata, (op for ev in vertices for op in ev.task.operators))
            restore_channel_state(storage, "", metadata, (ev.task for ev in vertices))
            self.restored_checkpoint_id = metadata.checkpoint_id
            return
        if coordinator is None or latest is None:
            return
        restore_operators(
            coordinator.storage, latest.directory, latest.metadata, (op for ev in vertices for op in ev.task.operators)
        )
        restore_channel_state(coordinator.storage, latest.directory, latest.metadata, (ev.task for ev in vertices))
        coordinator.stats.restored(latest.checkpoint_id, coordinator.storage.uri_of(latest.directory))
        self.restored_checkpoint_id = latest.checkpoint_id

    def _finish(self, status: str) -> None:
        """Under the lock: the job reached a terminal `status`."""
        self.end_time = time.time()
        self.status = status
        if self._snapshot_writer is not None:
            # first, so no write lands after the retention below (writers never take this job's lock)
            self._snapshot_writer.shutdown()
        if self.checkpoint_coordinator is not None:
            self.checkpoint_coordinator.shutdown(status)
        if self._temp_checkpoint_dir is not None:
            shutil.rmtree(self._temp_checkpoint_dir, ignore_errors=True)
        self._done.set()

    # -- public ------------------------------------------------------------------------------------------
    def start(self) -> None:
        self.start_time = time.time()
        self.status = "RUNNING"
        self._remaining = len(self.vertices)
        if self.checkpoint_coordinator is not None:
            self.checkpoint_coordinator.attach_tasks({ev.task.checkpoint_key: ev.task for ev in self.vertices})
            self.checkpoint_coordinator.start()
        for ev in self.vertices:
            ev.task.start()

    def cancel(self) -> None:
        with self._lock:
            if self.status in _TERMINAL:
                return
            self.status = "CANCELLING"
            self._cancel_requested.set()
            vertices = self.vertices
        for ev in vertices:
            ev.task.cancel()

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"job {self.job_id} still running after {timeout} s")
        if self.status == "FAILED":
            t = self.failed_task
            if self.restore_failure is not None:
                e = self.restore_failure
                trace = "".join(traceback.format_exception(e))
                raise JobExecutionError(
                    f"Job '{self.graph.job_name}' ({self.job_id}) failed: restoring the latest checkpoint after "
                    f"task {t.display_name} failed did not succeed: {e}\n{trace}",
                    job_id=self.job_id,
                    task=t.display_name,
                    trace=trace,
                ) from e
            raise JobExecutionError(
                f"Job '{self.graph.job_name}' ({self.job_id}) failed: task {t.display_name} failed.\n{t.failure_trace}",
                job_id=self.job_id,
                task=t.display_name,
                trace=t.failure_trace,
            ) from t.failure
        if self.status == "CANCELED":
            raise JobExecutionError(f"Job '{self.graph.job_name}' ({self.job_id}) was cancelled", job_id=self.job_id)
        return JobExecutionResult(self.job_id, int((self.end_time - self.start_time) * 1000))


class LocalJobClient:
    """PyFlink's JobClient for a job started with execute_async."""

    def __init__(self, job: LocalJob) -> None:
        self._job = job

    def get_job_id(self) -> str:
        return self._job.job_id

    def get_job_status(self) -> str:
        return self._job.status

    def cancel(self) -> None:
        self._job.cancel()

    def get_job_execution_result(self, timeout: float | None = None) -> JobExecutionResult:
        return self._job.wait(timeout)

    wait = get_job_execution_result


class LocalExecutor:
    """The embedded executor: every subtask a thread of this process."""

    def __call__(self, graph: StreamGraph) -> JobExecutionResult:
        return execute_locally(graph)

    def start_job(self, graph: StreamGraph) -> LocalJobClient:
        return submit_locally(graph)


def execute_locally(graph: StreamGraph) -> JobExecutionResult:
    job = LocalJob(graph)
    job.start()
    try:
        return job.wait()
    except KeyboardInterrupt:
        job.cancel()
        try:
            job.wait(10)
        except Exception:  # noqa: BLE001, S110 - "was cancelled" is the expected end; the interrupt is the news
            pass
        raise


def submit_locally(graph: StreamGraph) -> LocalJobClient:
    job = LocalJob(graph)
    job.start()
    return LocalJobClient(job)
