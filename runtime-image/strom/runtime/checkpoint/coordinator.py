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

The decisions (`PendingCheckpoint`, `build_metadata`) are plain code; the coordinator thread
and the storage calls are the thin part around them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from strom.common import config_options as opts
from strom.common.config_options import option
from strom.common.key_groups import KeyGroupRange
from strom.runtime.checkpoint.layout import checkpoint_dir
from strom.runtime.checkpoint.metadata import CheckpointMetadata, OperatorSnapshotRef, write_metadata
from strom.runtime.checkpoint.options import read_option
from strom.runtime.checkpoint.retention import (
    CompletedCheckpointStore,
    RetainedCheckpoint,
    num_retained_from,
    retention_from,
)
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

TaskKey = Any  # hashable identity of one subtask, e.g. (vertex id, subtask index)


@dataclass(slots=True)
class PendingCheckpoint:
    """A triggered checkpoint waiting for the acknowledgements of `awaiting`."""

    checkpoint_id: int
    timestamp_ms: int
    started: float  # coordinator clock, seconds
    awaiting: set[TaskKey]
    handles: list[OperatorStateHandle] = field(default_factory=list)

    def acknowledge(self, task: TaskKey, handles: Iterable[OperatorStateHandle]) -> bool:
        """Record one task's state; True once every task acknowledged."""
        if task in self.awaiting:
            self.awaiting.discard(task)
            self.handles.extend(handles)
        return not self.awaiting


def build_metadata(
    job_id: str, checkpoint_id: int, timestamp_ms: int, handles: Iterable[OperatorStateHandle]
) -> CheckpointMetadata:
    """The `_metadata` of a checkpoint from the state handles of all its tasks, by operator uid."""
    by_uid: dict[str, list[OperatorStateHandle]] = {}
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
        )
    return CheckpointMetadata(checkpoint_id, job_id, timestamp_ms, False, operators)


class CheckpointCoordinator:
    def __init__(
        self,
        *,
        job_id: str,
        config: Any,
        storage: CheckpointStorage,
        clock: Any = time.monotonic,
    ) -> None:
        self.job_id = job_id
        self.config = config
        self.storage = storage
        self.interval_s = config.get(opts.CHECKPOINT_INTERVAL) / 1000.0
        if self.interval_s <= 0:
            raise ValueError("CheckpointCoordinator needs 'execution.checkpointing.interval' > 0")
        self.timeout_s = read_option(config, CHECKPOINT_TIMEOUT) / 1000.0
        self.store = CompletedCheckpointStore(storage, num_retained=num_retained_from(config))
        self._clock = clock
        self._lock = threading.Lock()
        self._tasks: dict[TaskKey, Any] = {}
        self._pending: PendingCheckpoint | None = None
        self._next_id = 1
        self._last_trigger = clock()
        self.completed_ids: list[int] = []
        self.aborted: list[tuple[int, str]] = []  # (checkpoint id, reason)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"checkpoint-coordinator {job_id}", daemon=True)

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def shutdown(self, job_status: str) -> None:
        """The job ended: stop triggering, abort what is pending, apply the externalized retention."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            self._abort_pending(f"the job reached {job_status}")
            self._tasks = {}
        self.store.shutdown(job_status, retention_from(self.config))

    def attach_tasks(self, tasks: dict[TaskKey, Any]) -> None:
        """The tasks of a new execution attempt take part from now on."""
        with self._lock:
            self._abort_pending("the tasks were restarted")
            self._tasks = dict(tasks)
            self._last_trigger = self._clock()

    def detach_tasks(self, reason: str) -> None:
        """The current tasks are going away (failure): nothing can complete until `attach_tasks`."""
        with self._lock:
            self._abort_pending(reason)
            self._tasks = {}

    @property
    def latest_completed(self) -> RetainedCheckpoint | None:
        return self.store.latest

    # -- triggering --------------------------------------------------------------------------------------
    def _run(self) -> None:
        tick = min(self.interval_s, 0.05)
        while not self._stop.wait(tick):
            now = self._clock()
            with self._lock:
                pending = self._pending
                if pending is not None and now - pending.started >= self.timeout_s:
                    self._abort_pending(f"it did not complete within {self.timeout_s * 1000:.0f} ms")
                due = pending is None and now - self._last_trigger >= self.interval_s
            if due:
                self.trigger_checkpoint()

    def trigger_checkpoint(self) -> int | None:
        """Start a checkpoint now; its id, or None when one is pending or some task is not running."""
        with self._lock:
            self._last_trigger = self._clock()
            if self._pending is not None or not self._tasks:
                return None
            not_running = [k for k, t in self._tasks.items() if t.state != "RUNNING"]
            if not_running:
                log.debug("checkpoint not triggered: tasks %s are not running", not_running)
                return None
            cid = self._next_id
            self._next_id += 1
            timestamp_ms = int(time.time() * 1000)
            self._pending = PendingCheckpoint(cid, timestamp_ms, self._clock(), set(self._tasks))
            for task in self._tasks.values():
                if task.gate is None:  # sources start it; the barriers carry it to everyone else
                    task.submit(partial(task.trigger_checkpoint, cid, timestamp_ms))
            return cid

    # -- answers from the tasks ------------------------------------------------------------------------
    def acknowledge(self, checkpoint_id: int, task: TaskKey, handles: list[OperatorStateHandle]) -> None:
        with self._lock:
            pending = self._pending
            if pending is None or pending.checkpoint_id != checkpoint_id:
                # late: the checkpoint was aborted and its directory deleted; the files just written go too
                self._delete_directory(checkpoint_id)
                return
            if pending.acknowledge(task, handles):
                self._complete(pending)

    def decline(self, checkpoint_id: int, task: TaskKey, reason: str) -> None:
        with self._lock:
            if self._pending is not None and self._pending.checkpoint_id == checkpoint_id:
                self._abort_pending(f"task {task} declined it: {reason}")

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
            write_metadata(self.storage, directory, metadata)
        except Exception as e:  # noqa: BLE001 - a checkpoint that cannot be finalized is aborted, not fatal
            self._aborted(cid, f"writing its metadata failed: {e}")
            return
        self.store.add(directory, metadata)
        self.completed_ids.append(cid)
        log.info("completed checkpoint %d of job %s", cid, self.job_id)
        for task in self._tasks.values():
            task.submit(partial(task.notify_checkpoint_complete, cid))

    def _abort_pending(self, reason: str) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self._aborted(pending.checkpoint_id, reason)

    def _aborted(self, checkpoint_id: int, reason: str) -> None:
        log.info("checkpoint %d of job %s aborted: %s", checkpoint_id, self.job_id, reason)
        self.aborted.append((checkpoint_id, reason))
        self._delete_directory(checkpoint_id)
        for task in self._tasks.values():
            task.submit(partial(task.notify_checkpoint_aborted, checkpoint_id))

    def _delete_directory(self, checkpoint_id: int) -> None:
        try:
            self.storage.delete_prefix(checkpoint_dir(self.job_id, checkpoint_id))
        except Exception as e:  # noqa: BLE001 - leftovers of an aborted checkpoint are garbage, not a failure
            log.warning("could not delete aborted checkpoint %d: %s", checkpoint_id, e)
