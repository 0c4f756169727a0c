"""`CheckpointCoordinator`: triggers checkpoints periodically, collects acknowledgements, completes them.

One checkpoint at a time (Flink's default max-concurrent 1): every `execution.checkpointing.interval`
the coordinator asks each source task (through its mailbox) to snapshot and emit barrier n;
every task acknowledges with the handles of its written state. When all tasks of the current
attempt acknowledged, the `_metadata` is written, the checkpoint is added to the
`CompletedCheckpointStore` (which subsumes older ones) and every task is told
`notify_checkpoint_complete(n)`. A checkpoint is aborted (its directory deleted, tasks told
`notify_checkpoint_aborted(n)`) when a task declines it, finishes before acknowledging, or when
`execution.checkpointing.timeout` passes; a checkpoint is not even triggered while some task
is not running (finished tasks cannot take part, as in Flink before 1.14).

A savepoint is a checkpoint with a `SavepointTarget`: requested with `trigger_savepoint`, it
is triggered as soon as no checkpoint is pending (ahead of the periodic schedule); on completion
its files are copied into the target (runtime/checkpoint/savepoints.py) and it never enters the
store, so retention never touches it.

The decisions (`PendingCheckpoint`, `build_metadata`) are plain code; the coordinator thread
and the storage calls are the thin part around them. The coordinator reaches tasks only through
a `TaskGateway`: `MailboxGateway` for the embedded executor's threads, an RPC gateway in the
JobMaster for tasks in slot processes (acknowledgements then arrive as messages).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from strom.common import config_options as opts
from strom.common.config_options import option, read_option
from strom.common.configuration import Configuration
from strom.common.ids import CheckpointId, JobId, OperatorUid
from strom.common.job_status import JobStatus
from strom.common.key_groups import KeyGroupRange
from strom.runtime.checkpoint.layout import checkpoint_dir
from strom.runtime.checkpoint.metadata import CheckpointMetadata, OperatorSnapshotRef, read_metadata, write_metadata
from strom.runtime.checkpoint.options import barrier_alignment
from strom.runtime.checkpoint.retention import (
    CompletedCheckpointStore,
    RetainedCheckpoint,
    num_retained_from,
    retention_from,
)
from strom.runtime.checkpoint.savepoints import SavepointTarget, finalize_savepoint
from strom.runtime.checkpoint.stats import CheckpointStatsTracker
from strom.runtime.checkpoint.storage import CheckpointStorage
from strom.runtime.checkpoint.task_snapshots import OperatorStateHandle

log = logging.getLogger(__name__)

CHECKPOINT_TIMEOUT = option(
    "execution.checkpointing.timeout",
    "duration",
    600_000,
    "A checkpoint not completed within this time is aborted.",
    minimum=1,
)

MIN_PAUSE = option(
    "execution.checkpointing.min-pause",
    "duration",
    0,
    "The least time between the end of one checkpoint and the trigger of the next.",
    minimum=0,
)
TOLERABLE_FAILED_CHECKPOINTS = option(
    "execution.checkpointing.tolerable-failed-checkpoints",
    "int",
    0,
    "Consecutive checkpoint failures (timeouts, state or metadata that could not be written) the job "
    "tolerates; one more fails the job, which then restarts by its restart strategy.",
    minimum=0,
)

TaskKey = Hashable  # identity of one subtask, e.g. (vertex id, subtask index)


class MailboxTask(Protocol):
    """What `MailboxGateway` needs of an in-process task (the embedded executor's StreamTask)."""

    @property
    def state(self) -> str:
        """Flink's ExecutionState name."""

    @property
    def gate(self) -> object | None:
        """The task's input gate; None for a source, which the coordinator asks to start a checkpoint."""

    def submit(self, action: Callable[[], None]) -> None:
        """Run `action` in the task's mailbox thread."""

    def trigger_checkpoint(
        self, checkpoint_id: CheckpointId, timestamp: int, stop: str = "", savepoint: bool = False
    ) -> None: ...

    def notify_checkpoint_complete(self, checkpoint_id: CheckpointId) -> None: ...

    def notify_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> None: ...


class TaskGateway(Protocol):
    """How the coordinator reaches the tasks of one execution attempt; calls must not block."""

    def not_running(self) -> list[TaskKey]:
        """The tasks not RUNNING now (a checkpoint is only triggered when this is empty)."""

    def trigger(self, checkpoint_id: CheckpointId, timestamp_ms: int, stop: str = "", savepoint: bool = False) -> None:
        """Make the source tasks start the checkpoint; barriers carry it to everyone else. `stop`:
        a stop-with-savepoint's mode (savepoints.STOP_SUSPEND / STOP_DRAIN), '' otherwise; a savepoint
        is always aligned."""

    def notify_complete(self, checkpoint_id: CheckpointId) -> None: ...

    def notify_aborted(self, checkpoint_id: CheckpointId) -> None: ...


class MailboxGateway:
    """In-process tasks: actions go into their mailboxes."""

    def __init__(self, tasks: Mapping[TaskKey, MailboxTask]) -> None:
        self._tasks = dict(tasks)

    def not_running(self) -> list[TaskKey]:
        return [k for k, t in self._tasks.items() if t.state != "RUNNING"]

    def trigger(self, checkpoint_id: CheckpointId, timestamp_ms: int, stop: str = "", savepoint: bool = False) -> None:
        for task in self._tasks.values():
            if task.gate is None:
                task.submit(partial(task.trigger_checkpoint, checkpoint_id, timestamp_ms, stop, savepoint))

    def notify_complete(self, checkpoint_id: CheckpointId) -> None:
        for task in self._tasks.values():
            task.submit(partial(task.notify_checkpoint_complete, checkpoint_id))

    def notify_aborted(self, checkpoint_id: CheckpointId) -> None:
        for task in self._tasks.values():
            task.submit(partial(task.notify_checkpoint_aborted, checkpoint_id))


@dataclass(slots=True)
class PendingCheckpoint:
    """A triggered checkpoint waiting for the acknowledgements of `awaiting`."""

    checkpoint_id: CheckpointId
    timestamp_ms: int
    started: float  # coordinator clock, seconds
    awaiting: set[TaskKey]
    handles: list[OperatorStateHandle] = field(default_factory=list)
    savepoint: SavepointTarget | None = None

    def acknowledge(self, task: TaskKey, handles: Iterable[OperatorStateHandle]) -> bool:
        """Record one task's state; True once every task acknowledged."""
        if task in self.awaiting:
            self.awaiting.discard(task)
            self.handles.extend(handles)
        return not self.awaiting


def build_metadata(
    job_id: JobId, checkpoint_id: CheckpointId, timestamp_ms: int, handles: Iterable[OperatorStateHandle]
) -> CheckpointMetadata:
    """The `_metadata` of a checkpoint from the state handles of all its tasks, by operator uid."""
    by_uid: dict[OperatorUid, list[OperatorStateHandle]] = {}
    for h in handles:
        by_uid.setdefault(h.operator_uid, []).append(h)
    operators = {}
    for uid, hs in by_uid.items():
        keyed: dict[KeyGroupRange, str] = {h.key_groups: h.path for h in hs if h.key_groups is not None}
        operators[uid] = OperatorSnapshotRef(
            max_parallelism=hs[0].max_parallelism,
            parallelism=hs[0].parallelism,
            keyed=keyed,
            operator_state={h.subtask_index: h.path for h in hs},
            shared_files=tuple(dict.fromkeys(f for h in hs for f in h.shared_files)),
            channel_state={h.subtask_index: h.channel_state for h in hs if h.channel_state},
        )
    return CheckpointMetadata(checkpoint_id, job_id, timestamp_ms, False, operators)


class CheckpointCoordinator:
    def __init__(
        self,
        *,
        job_id: JobId,
        config: Configuration,
        storage: CheckpointStorage,
        clock: Callable[[], float] = time.monotonic,
        on_completed: Callable[[CheckpointId, str], None] | None = None,
        on_failures_exceeded: Callable[[str], None] | None = None,
    ) -> None:
        self.job_id = job_id
        self.config = config
        self.storage = storage
        # (checkpoint id, directory) of each completed checkpoint, before it subsumes older ones and
        # before the tasks hear of it: where HA keeps its pointer; raising fails the checkpoint
        self._on_completed = on_completed
        # the job fails (restart strategy) when more consecutive checkpoints failed than tolerated
        self._on_failures_exceeded = on_failures_exceeded
        self.tolerable_failures = read_option(config, TOLERABLE_FAILED_CHECKPOINTS)
        self.consecutive_failures = 0
        self.min_pause_s = read_option(config, MIN_PAUSE) / 1000.0
        self._last_end = float("-inf")
        # <= 0: no periodic checkpoints, only the savepoints asked for
        self.interval_s = config.get(opts.CHECKPOINT_INTERVAL) / 1000.0
        self.timeout_s = read_option(config, CHECKPOINT_TIMEOUT) / 1000.0
        self.store = CompletedCheckpointStore(storage, num_retained=num_retained_from(config))
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: set[TaskKey] = set()
        self._gateway: TaskGateway | None = None
        self.stats = CheckpointStatsTracker()
        self._pending: PendingCheckpoint | None = None
        self._next_id = 1
        self._last_trigger = clock()
        self.completed_ids: list[CheckpointId] = []
        self.aborted: list[tuple[CheckpointId, str]] = []  # (checkpoint id, reason)
        self._savepoint_requests: list[SavepointTarget] = []  # waiting for the pending checkpoint to end
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"checkpoint-coordinator {job_id}", daemon=True)

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def shutdown(self, job_status: JobStatus | str) -> None:
        """The job ended: stop triggering, abort what is pending, apply the externalized retention."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            self._abort_pending(f"the job reached {job_status}")
            self._keys, self._gateway = set(), None
            requests, self._savepoint_requests = self._savepoint_requests, []
        for request in requests:
            request.on_done(None, f"the job reached {job_status} before the savepoint could be taken")
        self.store.shutdown(job_status, retention_from(self.config))

    def attach_tasks(self, tasks: Mapping[TaskKey, MailboxTask]) -> None:
        """The in-process tasks of a new execution attempt take part from now on."""
        self.attach(set(tasks), MailboxGateway(tasks))

    def attach(self, keys: set[TaskKey], gateway: TaskGateway) -> None:
        """The tasks `keys` of a new execution attempt, reached through `gateway`, take part from now on."""
        with self._lock:
            self._abort_pending("the tasks were restarted")
            self._keys, self._gateway = set(keys), gateway
            self._last_trigger = self._clock()

    def detach_tasks(self, reason: str) -> None:
        """The current tasks are going away (failure): nothing can complete until `attach_tasks`."""
        with self._lock:
            self._abort_pending(reason)
            self._keys, self._gateway = set(), None

    def recover(self, checkpoint_id: CheckpointId, directory: str) -> None:
        """Retain the completed checkpoint a previous JobManager left (high availability): it is
        what the job restores from, it is subsumed as usual, and new checkpoint ids follow it."""
        metadata = read_metadata(self.storage, directory)
        with self._lock:
            self.store.add(directory, metadata)
            self._next_id = max(self._next_id, checkpoint_id + 1)

    @property
    def latest_completed(self) -> RetainedCheckpoint | None:
        return self.store.latest

    # -- triggering --------------------------------------------------------------------------------------
    def _run(self) -> None:
        periodic = self.interval_s > 0
        tick = min(self.interval_s, 0.05) if periodic else 0.05
        while not self._stop.wait(tick):
            now = self._clock()
            with self._lock:
                pending = self._pending
                if pending is not None and now - pending.started >= self.timeout_s:
                    self._abort_pending(f"it did not complete within {self.timeout_s * 1000:.0f} ms", failure=True)
                savepoint_due = pending is None and bool(self._savepoint_requests)
                due = (
                    periodic
                    and pending is None
                    and now - self._last_trigger >= self.interval_s
                    and now - self._last_end >= self.min_pause_s
                )
            if savepoint_due:
                self._trigger(savepoint=True)
            elif due:
                self.trigger_checkpoint()

    def trigger_savepoint(self, target: SavepointTarget) -> None:
        """Take a savepoint into `target` as soon as no checkpoint is pending and every task runs;
        `target.on_done` is called with the outcome (from the coordinator's threads)."""
        with self._lock:
            self._savepoint_requests.append(target)

    def trigger_checkpoint(self) -> CheckpointId | None:
        """Start a checkpoint now; its id, or None when one is pending or some task is not running."""
        return self._trigger(savepoint=False)

    def _trigger(self, *, savepoint: bool) -> CheckpointId | None:
        with self._lock:
            self._last_trigger = self._clock()
            gateway = self._gateway
            if self._pending is not None or gateway is None or not self._keys:
                return None
            not_running = gateway.not_running()
            if not_running:
                log.debug("checkpoint not triggered: tasks %s are not running", not_running)
                return None
            cid = CheckpointId(self._next_id)
            self._next_id += 1
            timestamp_ms = int(time.time() * 1000)
            target = self._savepoint_requests.pop(0) if savepoint and self._savepoint_requests else None
            self._pending = PendingCheckpoint(cid, timestamp_ms, self._clock(), set(self._keys), savepoint=target)
            unaligned = target is None and barrier_alignment(self.config) == (True, -1)
            self.stats.triggered(cid, timestamp_ms, len(self._keys), unaligned=unaligned)
            gateway.trigger(cid, timestamp_ms, target.stop if target is not None else "", savepoint=target is not None)
            return cid

    # -- answers from the tasks ------------------------------------------------------------------------
    def acknowledge(self, checkpoint_id: CheckpointId, task: TaskKey, handles: list[OperatorStateHandle]) -> None:
        with self._lock:
            pending = self._pending
            if pending is None or pending.checkpoint_id != checkpoint_id:
                # late: the checkpoint was aborted and its directory deleted; the files just written go too
                self._delete_directory(checkpoint_id)
                return
            if task in pending.awaiting:
                self.stats.acknowledged(checkpoint_id)
            if pending.acknowledge(task, handles):
                self._complete(pending)

    def decline(self, checkpoint_id: CheckpointId, task: TaskKey, reason: str) -> None:
        with self._lock:
            if self._pending is not None and self._pending.checkpoint_id == checkpoint_id:
                self._abort_pending(f"task {task} declined it: {reason}", failure=True)

    def task_finished(self, task: TaskKey) -> None:
        """A task ended normally; a checkpoint it has not acknowledged can never complete."""
        with self._lock:
            pending = self._pending
            if pending is not None and task in pending.awaiting:
                self._abort_pending(f"task {task} finished before acknowledging it")

    # -- under the lock --------------------------------------------------------------------------------
    def _complete(self, pending: PendingCheckpoint) -> None:
        self._pending = None
        cid = pending.checkpoint_id
        directory = checkpoint_dir(self.job_id, cid)
        try:
            metadata = build_metadata(self.job_id, cid, pending.timestamp_ms, pending.handles)
            external_path = write_metadata(self.storage, directory, metadata).rsplit("/", 1)[0]
        except Exception as e:  # noqa: BLE001 - a checkpoint that cannot be finalized is aborted, not fatal
            self._aborted(cid, f"writing its metadata failed: {e}", pending.savepoint, failure=True)
            return
        if pending.savepoint is not None:
            self._complete_savepoint(cid, directory, metadata, pending.savepoint, sum(h.size for h in pending.handles))
            return
        if self._on_completed is not None:
            try:
                self._on_completed(cid, directory)
            except Exception as e:  # noqa: BLE001 - without its pointer a checkpoint must not count
                self._aborted(cid, f"recording it for high availability failed: {e}", failure=True)
                return
        self.store.add(directory, metadata)
        self.consecutive_failures = 0
        self._last_end = self._clock()
        self.completed_ids.append(cid)
        persisted = sum(h.channel_state_size for h in pending.handles)
        self.stats.completed(cid, external_path, sum(h.size for h in pending.handles), persisted)
        log.info("completed checkpoint %d of job %s", cid, self.job_id)
        if self._gateway is not None:
            self._gateway.notify_complete(cid)

    def _complete_savepoint(
        self, cid: CheckpointId, directory: str, metadata: CheckpointMetadata, target: SavepointTarget, size: int
    ) -> None:
        try:
            location = finalize_savepoint(self.storage, directory, metadata, target)
        except Exception as e:  # noqa: BLE001 - a savepoint that cannot be copied fails, the job does not
            self._aborted(cid, f"writing the savepoint to {target.location} failed: {e}", target)
            return
        # the checkpoint directory was only the staging area of the savepoint's files
        self._delete_directory(cid)
        self.stats.completed(cid, location, size)
        log.info("completed savepoint %d of job %s at %s", cid, self.job_id, location)
        # the tasks hear of it before a stop cancels them, so they commit what the savepoint prepared
        if self._gateway is not None:
            self._gateway.notify_complete(cid)
        target.on_done(location, None)

    def _abort_pending(self, reason: str, *, failure: bool = False) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self._aborted(pending.checkpoint_id, reason, pending.savepoint, failure=failure)

    def _aborted(
        self,
        checkpoint_id: CheckpointId,
        reason: str,
        savepoint: SavepointTarget | None = None,
        *,
        failure: bool = False,
    ) -> None:
        """`failure`: the checkpoint itself failed (timeout, state not written), which counts against
        tolerable-failed-checkpoints; an abort because tasks restarted or finished does not (as in Flink)."""
        log.info("checkpoint %d of job %s aborted: %s", checkpoint_id, self.job_id, reason)
        if savepoint is not None:
            savepoint.on_done(None, reason)
        self.aborted.append((checkpoint_id, reason))
        self.stats.failed(checkpoint_id, reason)
        self._delete_directory(checkpoint_id)
        if self._gateway is not None:
            self._gateway.notify_aborted(checkpoint_id)
        self._last_end = self._clock()
        if failure and savepoint is None:
            self.consecutive_failures += 1
            if self.consecutive_failures > self.tolerable_failures and self._on_failures_exceeded is not None:
                self.consecutive_failures = 0
                self._on_failures_exceeded(
                    f"checkpoint {checkpoint_id} failed ({reason}): more consecutive checkpoint failures than "
                    f"{TOLERABLE_FAILED_CHECKPOINTS.key} ({self.tolerable_failures}) tolerates"
                )

    def _delete_directory(self, checkpoint_id: CheckpointId) -> None:
        try:
            self.storage.delete_prefix(checkpoint_dir(self.job_id, checkpoint_id))
        except Exception as e:  # noqa: BLE001 - leftovers of an aborted checkpoint are garbage, not a failure
            log.warning("could not delete aborted checkpoint %d: %s", checkpoint_id, e)
