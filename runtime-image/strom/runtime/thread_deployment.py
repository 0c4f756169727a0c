"""The threaded task deployer: a JobMaster's subtasks as threads of this process (`strom run --threads`,
`env.execute()` without a cluster).

A `TaskDeployer` (jobmanager/task_deployment.py) like the TaskManagers' RPC one, so the embedded job
runs under the same JobMaster, failover, restart strategy and checkpoint coordinator as on a cluster;
only where the tasks run differs. The JobMaster deploys an attempt slot by slot; once every subtask
of the attempt has arrived, its tasks are built together, wired by in-process channels (records
between threads are never serialized), restored from the deployment's checkpoint and started.

As Flink's scheduler does, a new attempt starts only once every task of the attempts before it has
ended: in one process an old task still running (a sink writing, a source sleeping) would otherwise
overlap the new attempt's side effects. Task state changes and checkpoint acknowledgements go back to
the JobMaster as the messages a TaskManager would send, on the JobManager's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from strom.common import config_options as opts
from strom.graph.job_graph import JobGraph
from strom.graph.stream_graph import StreamGraph
from strom.runtime.checkpoint.channel_state import restore_channel_state
from strom.runtime.checkpoint.coordinator import TaskGateway, TaskKey
from strom.runtime.checkpoint.memory_storage import JobManagerCheckpointStorage
from strom.runtime.checkpoint.metadata import read_metadata
from strom.runtime.checkpoint.options import snapshot_staging_dir
from strom.runtime.checkpoint.storage import checkpoint_storage_for
from strom.runtime.checkpoint.task_snapshots import AsyncSnapshotWriter, OperatorStateHandle, restore_operators
from strom.runtime.execution_graph import ExecutionVertex, build_subtasks
from strom.runtime.metrics import MetricGroup, MetricRegistry
from strom.runtime.rpc import AcknowledgeCheckpoint, DeclineCheckpoint, DeploySlot, TaskStateUpdate

log = logging.getLogger("strom.runtime.threads")

_TERMINAL = ("FINISHED", "FAILED", "CANCELED")


class ThreadTaskDeployer:
    """Runs one job's attempts as task threads; reports to the JobMaster through `report`.

    `report(message)` is called on any thread and must hand the message to the JobMaster on its loop
    (a TaskStateUpdate to on_task_update, an Acknowledge/DeclineCheckpoint to on_checkpoint_message)."""

    def __init__(
        self,
        graph: StreamGraph,
        job_graph: JobGraph,
        *,
        registry: MetricRegistry,
        report: Callable[[Any], None],
        clock: Any = None,
    ) -> None:
        self._graph, self._job_graph, self._registry = graph, job_graph, registry
        self._report, self._clock = report, clock
        self._lock = threading.Lock()
        self._pending: dict[int, list[DeploySlot]] = {}  # attempt -> the slots deployed so far
        self._cancelled: set[int] = set()
        self.attempts: dict[int, list[ExecutionVertex]] = {}  # attempt -> its tasks, once built
        self._writers: dict[int, AsyncSnapshotWriter] = {}
        self._failures: dict[str, BaseException] = {}  # a task's display name -> its latest failure
        self.first_started = threading.Event()  # the first attempt's tasks started (or failed to build)
        self._starters: dict[int, threading.Thread] = {}  # attempt -> the thread that builds and starts it

    # -- TaskDeployer --------------------------------------------------------------------------------
    def job_payload(self, graph: StreamGraph) -> bytes:
        return b""  # the tasks are built from the graph itself: nothing is serialized

    def deploy(self, tm_id: str, deployment: DeploySlot) -> None:
        attempt = deployment.attempt
        with self._lock:
            slots = self._pending.setdefault(attempt, [])
            slots.append(deployment)
            deployed = {(ref.vertex_id, ref.subtask_index) for d in slots for ref in d.subtasks}
            if deployed != set(deployment.locations):
                return  # more slots of this attempt are coming
            del self._pending[attempt]
        starter = threading.Thread(
            target=self._start_attempt, args=(slots,), name=f"deploy attempt {attempt}", daemon=True
        )
        self._starters[attempt] = starter
        starter.start()

    def cancel(self, tm_ids: Iterable[str], job_id: str, attempt: int) -> None:
        with self._lock:
            self._cancelled.add(attempt)
            self._pending.pop(attempt, None)
            built = list(self.attempts.get(attempt, ()))
        for ev in built:
            ev.task.cancel()

    def checkpoint_gateway(
        self,
        *,
        job_id: str,
        attempt: int,
        source_tms: set[str],
        all_tms: set[str],
        not_running: Callable[[], list[TaskKey]],
    ) -> TaskGateway:
        return _AttemptGateway(lambda: self.attempts.get(attempt, ()), not_running)

    # -- the embedded job's view -------------------------------------------------------------------
    def tasks(self) -> list[ExecutionVertex]:
        """The tasks of the newest attempt built so far."""
        with self._lock:
            return list(self.attempts[max(self.attempts)]) if self.attempts else []

    def failure_of(self, task: str) -> BaseException | None:
        """The exception the task named `task` (its display name) failed with last, if it failed here."""
        return self._failures.get(task)

    def join(self, timeout: float | None = None) -> None:
        """Until every task thread of every attempt has ended (the job's end is the threads' end)."""
        for starter in list(self._starters.values()):
            starter.join(timeout)
        for vertices in list(self.attempts.values()):
            for ev in vertices:
                if ev.task.thread.is_alive():
                    ev.task.thread.join(timeout)

    # -- an attempt's start --------------------------------------------------------------------------
    def _start_attempt(self, slots: list[DeploySlot]) -> None:
        first = slots[0]
        attempt = first.attempt
        # Flink restarts a region only once its tasks were cancelled: the old attempt's threads end first
        for older, starter in list(self._starters.items()):
            if older < attempt:
                starter.join()
        for older, vertices in list(self.attempts.items()):
            if older < attempt:
                for ev in vertices:
                    ev.task.thread.join()
        refs = [ref for d in slots for ref in d.subtasks]
        try:
            built = build_subtasks(
                self._job_graph,
                [(ref.vertex_id, ref.subtask_index) for ref in refs],
                job_id=first.job_id,
                attempt=attempt,
                config=self._graph.config,
                channels=None,
                metrics=MetricGroup(),
                clock=self._clock,
                on_done=partial(self._task_done, first.job_id, attempt),
            )
            writer = self._writers[attempt] = self._snapshot_writer(first.job_id, attempt)
            for ev in built:
                ev.task.enable_checkpointing(writer, (ev.vertex.id, ev.subtask_index))
            if first.restore is not None:
                self._restore(first, built)
        except BaseException:  # noqa: BLE001 - an attempt that cannot be built fails its tasks
            trace = traceback.format_exc()
            self._shutdown_writer(attempt)
            for ref in refs:
                self._report(TaskStateUpdate(first.job_id, attempt, ref.vertex_id, ref.subtask_index, "FAILED", trace))
            self.first_started.set()
            return
        for ev in built:
            # registered again under the same names: the new attempt replaces the old one's figures
            self._registry.register_task(
                ev.task,
                job_id=first.job_id,
                job_name=self._graph.job_name,
                vertex_id=ev.vertex.id,
                metric_group=ev.metric_group,
                attempt=attempt,
            )
        with self._lock:
            self.attempts[attempt] = built
            cancelled = attempt in self._cancelled
        for ev in built:
            if cancelled:  # cancelled while it was being built: it ends at once, as cancelled
                ev.task.cancel()
            # RUNNING is reported before the thread starts, so it can never overtake the task's own end
            self._report(TaskStateUpdate(first.job_id, attempt, ev.vertex.id, ev.subtask_index, "RUNNING"))
            ev.task.start()
        self.first_started.set()

    def _restore(self, deployment: DeploySlot, built: list[ExecutionVertex]) -> None:
        restore = deployment.restore
        assert restore is not None
        # a savepoint names its own storage; a checkpoint lives in the job's checkpoint storage
        root = restore.storage_uri or self._graph.config.get(opts.CHECKPOINTS_DIR)
        storage = checkpoint_storage_for(root, self._graph.config)
        metadata = read_metadata(storage, restore.directory)
        restore_operators(storage, restore.directory, metadata, (op for ev in built for op in ev.task.operators))
        restore_channel_state(storage, restore.directory, metadata, (ev.task for ev in built))

    def _snapshot_writer(self, job_id: str, attempt: int) -> AsyncSnapshotWriter:
        """The attempt's snapshot writer, as a slot process has: every job can take a savepoint; without a
        checkpoint directory its state goes to the JobManager inline in the acknowledgements."""
        config = self._graph.config
        staging = snapshot_staging_dir(config)
        storage = checkpoint_storage_for(staging, config) if staging else JobManagerCheckpointStorage(job_id)

        def acknowledge(cid: int, key: tuple[str, int], handles: list[OperatorStateHandle]) -> None:
            self._report(AcknowledgeCheckpoint(job_id, attempt, cid, key[0], key[1], handles))

        def decline(cid: int, key: tuple[str, int], reason: str) -> None:
            self._report(DeclineCheckpoint(job_id, attempt, cid, key[0], key[1], reason))

        return AsyncSnapshotWriter(storage, job_id, acknowledge=acknowledge, decline=decline)

    def _task_done(self, job_id: str, attempt: int, task: Any) -> None:
        vertex_id, index = task.checkpoint_key
        if task.failure is not None:
            self._failures[task.display_name] = task.failure
        tasks = self.attempts.get(attempt, ())
        if tasks and all(ev.task.state in _TERMINAL for ev in tasks):
            # nothing of this attempt can complete a checkpoint any more; its uploads end before the JobMaster
            # hears of the end, so none lands after the job's end deleted unreferenced shared state files
            self._shutdown_writer(attempt)
        self._report(TaskStateUpdate(job_id, attempt, vertex_id, index, task.state, task.failure_trace))

    def _shutdown_writer(self, attempt: int) -> None:
        writer = self._writers.pop(attempt, None)
        if writer is not None:
            writer.shutdown()

    def shutdown(self) -> None:
        for attempt in list(self._writers):
            self._shutdown_writer(attempt)


class _AttemptGateway:
    """The coordinator's way to one attempt's task threads: actions go into their mailboxes."""

    def __init__(self, tasks: Callable[[], Iterable[ExecutionVertex]], not_running: Callable[[], list[TaskKey]]):
        self._tasks, self._not_running = tasks, not_running

    def not_running(self) -> list[TaskKey]:
        return self._not_running()

    def trigger(self, checkpoint_id: int, timestamp_ms: int, stop: str = "", savepoint: bool = False) -> None:
        for ev in self._tasks():
            task = ev.task
            if task.gate is None:  # sources start it; barriers carry it to the rest
                task.submit(partial(task.trigger_checkpoint, checkpoint_id, timestamp_ms, stop, savepoint))

    def notify_complete(self, checkpoint_id: int) -> None:
        for ev in self._tasks():
            ev.task.submit(partial(ev.task.notify_checkpoint_complete, checkpoint_id))

    def notify_aborted(self, checkpoint_id: int) -> None:
        for ev in self._tasks():
            ev.task.submit(partial(ev.task.notify_checkpoint_aborted, checkpoint_id))


def loop_reporter(loop: asyncio.AbstractEventLoop, job_master: Callable[[], Any]) -> Callable[[Any], None]:
    """`report` for a ThreadTaskDeployer: each message to the JobMaster's handler, on its loop."""

    def report(message: Any) -> None:
        jm = job_master()
        handler = jm.on_task_update if isinstance(message, TaskStateUpdate) else jm.on_checkpoint_message
        try:
            loop.call_soon_threadsafe(handler, message)
        except RuntimeError:
            pass  # the job's loop is closed: the job ended, nobody listens any more

    return report
