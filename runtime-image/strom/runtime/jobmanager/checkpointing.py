"""Checkpointing of a job on the cluster: the JobMaster's side of the `CheckpointCoordinator`.

The coordinator (runtime/checkpoint/coordinator.py) is shared with the embedded executor; here
it reaches the tasks of one attempt through `RpcTaskGateway`, which turns triggers and
notifications into RPC messages to the attempt's TaskManagers. Acknowledgements arrive as
messages and are handed to the coordinator on `JobCheckpointing`'s single worker thread, so
storage I/O (metadata writes, deletes) never blocks the JobManager's event loop and every
coordinator call keeps its arrival order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from strom.common import config_options as opts
from strom.runtime.checkpoint.coordinator import CheckpointCoordinator, TaskGateway, TaskKey
from strom.runtime.checkpoint.layout import checkpoint_dir
from strom.runtime.checkpoint.memory_storage import JobManagerCheckpointStorage
from strom.runtime.checkpoint.options import snapshot_staging_dir
from strom.runtime.checkpoint.retention import RetainedCheckpoint
from strom.runtime.checkpoint.savepoints import SavepointTarget
from strom.runtime.checkpoint.storage import checkpoint_storage_for
from strom.runtime.checkpoint.task_snapshots import stage_inline_state
from strom.runtime.rpc import (
    AcknowledgeCheckpoint,
    DeclineCheckpoint,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    RestoreCheckpoint,
    TriggerCheckpoint,
    encode_message,
)


def validate_cluster_checkpointing(config: Any) -> str | None:
    """Why a job's checkpoint configuration cannot run on a cluster, or None."""
    if config.get(opts.CHECKPOINT_INTERVAL) > 0 and not config.get(opts.CHECKPOINTS_DIR):
        return (
            f"checkpointing is enabled ('{opts.CHECKPOINT_INTERVAL.key}' > 0) but '{opts.CHECKPOINTS_DIR.key}' "
            "is not set: on a cluster every TaskManager writes its state there, so it must be a location "
            "all of them reach (file:// on shared storage, or s3://)"
        )
    return None


class RpcTaskGateway:
    """The tasks of one attempt, in slot processes of `all_tms`; sources run on `source_tms`."""

    def __init__(
        self,
        *,
        job_id: str,
        attempt: int,
        loop: asyncio.AbstractEventLoop,
        send_raw: Callable[[str, bytes], None],
        source_tms: set[str],
        all_tms: set[str],
        not_running: Callable[[], list[TaskKey]],
    ) -> None:
        self._job_id, self._attempt, self._loop, self._send_raw = job_id, attempt, loop, send_raw
        self._source_tms, self._all_tms = frozenset(source_tms), frozenset(all_tms)
        self._not_running = not_running

    def not_running(self) -> list[TaskKey]:
        return self._not_running()

    def trigger(self, checkpoint_id: int, timestamp_ms: int, stop: str = "", savepoint: bool = False) -> None:
        msg = TriggerCheckpoint(self._job_id, self._attempt, checkpoint_id, timestamp_ms, stop, savepoint)
        self._send(self._source_tms, encode_message(msg))

    def notify_complete(self, checkpoint_id: int) -> None:
        msg = NotifyCheckpointComplete(self._job_id, self._attempt, checkpoint_id)
        self._send(self._all_tms, encode_message(msg))

    def notify_aborted(self, checkpoint_id: int) -> None:
        msg = NotifyCheckpointAborted(self._job_id, self._attempt, checkpoint_id)
        self._send(self._all_tms, encode_message(msg))

    def _send(self, tms: frozenset[str], frame: bytes) -> None:
        # called from the coordinator's threads; the TaskManager connections belong to the loop
        for tm_id in tms:
            self._loop.call_soon_threadsafe(self._send_raw, tm_id, frame)


class JobCheckpointing:
    """One job's coordinator, fed in order on one worker thread."""

    def __init__(
        self,
        job_id: str,
        config: Any,
        *,
        on_completed: Callable[[int, str], None] | None = None,
        on_failures_exceeded: Callable[[str], None] | None = None,
        recovered: tuple[int, str] | None = None,
    ) -> None:
        staging = snapshot_staging_dir(config)
        # no directory: the JobManager stages savepoints in memory, as Flink's JobManagerCheckpointStorage
        self.storage = checkpoint_storage_for(staging, config) if staging else JobManagerCheckpointStorage(job_id)
        self.job_id = job_id
        self.coordinator = CheckpointCoordinator(
            job_id=job_id,
            config=config,
            storage=self.storage,
            on_completed=on_completed,
            on_failures_exceeded=on_failures_exceeded,
        )
        if recovered is not None:
            self.coordinator.recover(*recovered)
            self.coordinator.stats.restored(recovered[0], self.storage.uri_of(recovered[1]))
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"checkpoints {job_id[:8]}")
        self.coordinator.start()

    def attach(self, keys: set[TaskKey], gateway: TaskGateway) -> None:
        self._worker.submit(self.coordinator.attach, keys, gateway)

    def detach(self, reason: str) -> None:
        self._worker.submit(self.coordinator.detach_tasks, reason)

    def trigger_savepoint(self, target: SavepointTarget) -> None:
        self._worker.submit(self.coordinator.trigger_savepoint, target)

    def task_finished(self, key: TaskKey) -> None:
        self._worker.submit(self.coordinator.task_finished, key)

    def on_message(self, msg: AcknowledgeCheckpoint | DeclineCheckpoint) -> None:
        key = (msg.vertex_id, msg.subtask_index)
        if isinstance(msg, AcknowledgeCheckpoint):
            self._worker.submit(self._acknowledge, msg.checkpoint_id, key, msg.handles)
        else:
            self._worker.submit(self.coordinator.decline, msg.checkpoint_id, key, msg.reason)

    def _acknowledge(self, checkpoint_id: int, key: TaskKey, handles: list[Any]) -> None:
        if any(h.inline for h in handles):  # state sent along: staged here first (memory_storage.py)
            try:
                handles = stage_inline_state(self.storage, checkpoint_dir(self.job_id, checkpoint_id), handles)
            except Exception as e:  # noqa: BLE001 - a snapshot that cannot be staged declines its checkpoint
                self.coordinator.decline(checkpoint_id, key, f"staging its state in the JobManager failed: {e}")
                return
        self.coordinator.acknowledge(checkpoint_id, key, handles)

    async def restore_point(self) -> RestoreCheckpoint | None:
        """The latest completed checkpoint, after every acknowledgement received so far was handled."""
        latest: RetainedCheckpoint | None = await asyncio.get_running_loop().run_in_executor(
            self._worker, lambda: self.coordinator.latest_completed
        )
        if latest is None:
            return None
        self.coordinator.stats.restored(latest.checkpoint_id, self.storage.uri_of(latest.directory))
        return RestoreCheckpoint(latest.checkpoint_id, latest.directory)

    def shutdown(self, job_status: str) -> None:
        self._worker.submit(self.coordinator.shutdown, job_status)
        self._worker.shutdown(wait=False)

    def await_shutdown(self) -> None:
        """After `shutdown`, until the coordinator has ended: the retention has been applied (an embedded
        job's end is reported once its checkpoints are what they will stay)."""
        self._worker.shutdown(wait=True)
