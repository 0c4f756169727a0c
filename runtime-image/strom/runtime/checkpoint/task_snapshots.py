"""Task-side checkpoint I/O: writing a task's operator snapshots, and reading them back to restore.

`AsyncSnapshotWriter` takes the synchronous snapshots a task made at a barrier, serializes
and writes them on a background thread (the task thread goes back to processing at once),
then acknowledges to the coordinator with `OperatorStateHandle`s: where each operator
subtask's state went. One file per operator subtask, `<job-id>/chk-<n>/<operator uid>-<subtask>`,
holding the pickled `SerializedOperatorSnapshot` (keyed state by key group, timers, operator
state, extra state). `load_operator_snapshots` reads every file of one operator uid back;
`restore_operators` puts them into the operators of a new attempt before its tasks start.

Incremental RocksDB snapshots upload their new SST files to `<job-id>/shared/` (through a
`SharedFileUploader`); the state file then names them (`../shared/<file>`), the handle lists
them as `shared_files` for the metadata (retention counts their references), and on loading
the handle is bound to the storage so that a restore can read them. `savepoint_state_file`
turns such a state file into the canonical, self-contained form a savepoint holds.
"""

from __future__ import annotations

import logging
import os
import pickle
import uuid
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from strom.common.ids import CheckpointId, JobId, OperatorUid
from strom.common.key_groups import KeyGroupRange
from strom.runtime.checkpoint.channel_state import CHANNEL_STATE_SUFFIX, ChannelState, encode_channel_state
from strom.runtime.checkpoint.layout import SHARED_STATE_DIR, checkpoint_dir, resolve_relative, shared_dir
from strom.runtime.checkpoint.metadata import CheckpointMetadata
from strom.runtime.checkpoint.state_files import read_pickled
from strom.runtime.checkpoint.storage import CheckpointStorage
from strom.runtime.state.operator_snapshots import SerializedOperatorSnapshot, restore_operator, serialize_operator

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OperatorStateHandle:
    """One operator subtask's state in a checkpoint: `path` is relative to the checkpoint directory."""

    operator_uid: OperatorUid
    subtask_index: int
    parallelism: int
    max_parallelism: int
    key_groups: KeyGroupRange | None  # None: the operator has no keyed state
    path: str
    shared_files: tuple[str, ...] = ()  # files in `<job-id>/shared/` the state references, relative like `path`
    size: int = 0  # bytes this checkpoint wrote for it: its state file and newly uploaded shared files
    # the files themselves, (path relative to the checkpoint directory, bytes), when the job stages its
    # snapshots in the JobManager (memory_storage.py); the JobManager stages and strips them on arrival
    inline: tuple[tuple[str, bytes], ...] = ()
    channel_state: str = ""  # the task's in-flight data of an unaligned checkpoint (first operator only)
    channel_state_size: int = 0  # its bytes (Flink's persisted_data), also counted in `size`


def state_file_name(operator_uid: str, subtask_index: int) -> str:
    # uids are user text ('Source: x#1', 'a/b'): quoting keeps one flat, valid file name
    return f"{quote(operator_uid, safe='')}-{subtask_index}"


class SharedFileUploader:
    """Uploads the SST files of incremental snapshots to `<job-id>/shared/` under unique names
    (every subtask and attempt numbers its SST files alike)."""

    def __init__(self, storage: CheckpointStorage, job_id: str) -> None:
        self.storage = storage
        self.job_id = job_id
        self.uploaded_bytes = 0

    def upload_shared(self, local_path: str) -> str:
        name = f"{uuid.uuid4().hex}-{os.path.basename(local_path)}"
        with open(local_path, "rb") as f:
            data = f.read()
        self.storage.write_bytes(shared_dir(self.job_id) + name, data)
        self.uploaded_bytes += len(data)
        return f"../{SHARED_STATE_DIR}/{name}"  # relative to `<job-id>/chk-<n>`


def _shared_files(keyed: Any) -> tuple[str, ...]:
    """The shared files a serialized keyed state references (an incremental RocksDB handle has some)."""
    files = getattr(keyed, "shared_files", None)
    return tuple(files()) if callable(files) else ()


TaskKey = Hashable  # identity of one subtask, as the coordinator knows it (its `TaskKey`)
Acknowledge = Callable[[CheckpointId, TaskKey, list[OperatorStateHandle]], None]  # (checkpoint id, task, handles)
Decline = Callable[[CheckpointId, TaskKey, str], None]  # (checkpoint id, task key, reason)


class AsyncSnapshotWriter:
    """The `CheckpointResponder` of in-process tasks: serialize + write on a small thread pool, then ack."""

    def __init__(
        self,
        storage: CheckpointStorage,
        job_id: JobId,
        *,
        acknowledge: Acknowledge,
        decline: Decline,
        workers: int = 2,
    ) -> None:
        self.storage = storage
        self.job_id = job_id
        self._acknowledge = acknowledge
        self._decline = decline
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="checkpoint-writer")

    def snapshot_taken(
        self,
        task_key: TaskKey,
        checkpoint_id: CheckpointId,
        items: list[Any],
        channel_state: ChannelState | None = None,
    ) -> None:
        self._pool.submit(self._write, task_key, checkpoint_id, items, channel_state)

    def _write(
        self,
        task_key: TaskKey,
        checkpoint_id: CheckpointId,
        items: list[Any],
        channel_state: ChannelState | None = None,
    ) -> None:
        try:
            directory = checkpoint_dir(self.job_id, checkpoint_id)
            uploader = SharedFileUploader(self.storage, self.job_id)
            handles = []
            for snapshot, max_parallelism, key_groups in items:
                name = state_file_name(snapshot.operator_uid, snapshot.subtask_index)
                uploaded_before = uploader.uploaded_bytes
                serialized = serialize_operator(snapshot, uploader)
                data = pickle.dumps(serialized, protocol=pickle.HIGHEST_PROTOCOL)
                self.storage.write_bytes(f"{directory}/{name}", data)
                size = len(data) + uploader.uploaded_bytes - uploaded_before
                handles.append(
                    OperatorStateHandle(
                        OperatorUid(snapshot.operator_uid),
                        snapshot.subtask_index,
                        snapshot.parallelism,
                        max_parallelism,
                        key_groups if snapshot.keyed is not None else None,
                        name,
                        _shared_files(serialized.keyed),
                        size,
                    )
                )
            if channel_state is not None and handles:
                first = handles[0]
                name = state_file_name(first.operator_uid, first.subtask_index) + CHANNEL_STATE_SUFFIX
                data = encode_channel_state(channel_state)
                self.storage.write_bytes(f"{directory}/{name}", data)
                handles[0] = replace(
                    first, channel_state=name, channel_state_size=len(data), size=first.size + len(data)
                )
            if getattr(self.storage, "ships_state_inline", False):
                handles = [inline_state_handle(self.storage, directory, h) for h in handles]
        except Exception as e:  # noqa: BLE001 - any failure declines this checkpoint, never the job
            log.warning("task %s could not write its state of checkpoint %d: %s", task_key, checkpoint_id, e)
            self._decline(checkpoint_id, task_key, f"writing the state failed: {e}")
            return
        self._acknowledge(checkpoint_id, task_key, handles)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def inline_state_handle(storage: CheckpointStorage, directory: str, handle: OperatorStateHandle) -> OperatorStateHandle:
    """The handle with its state file and new shared files moved out of `storage` into it: the
    acknowledgement carries them to the JobManager (a job without a checkpoint directory)."""
    files = []
    for relative in (handle.path, *handle.shared_files, *([handle.channel_state] if handle.channel_state else [])):
        path = resolve_relative(directory, relative)
        if storage.exists(path):  # a shared file uploaded by an earlier snapshot went with that one
            files.append((relative, storage.read_bytes(path)))
            storage.delete(path)
    return replace(handle, inline=tuple(files))


def stage_inline_state(
    storage: CheckpointStorage, directory: str, handles: Iterable[OperatorStateHandle]
) -> list[OperatorStateHandle]:
    """The JobManager's side of `inline_state_handle`: write the files a task sent into `storage` under
    the checkpoint's `directory`; the handles without them (the coordinator keeps only paths)."""
    staged = []
    for handle in handles:
        for relative, data in handle.inline:
            storage.write_bytes(resolve_relative(directory, relative), data)
        staged.append(replace(handle, inline=()) if handle.inline else handle)
    return staged


def load_operator_snapshots(
    storage: CheckpointStorage, directory: str, metadata: CheckpointMetadata, operator_uid: OperatorUid
) -> list[SerializedOperatorSnapshot]:
    """The snapshots of every subtask of `operator_uid` in the checkpoint at `directory`."""
    ref = metadata.operators.get(operator_uid)
    if ref is None:
        return []
    # the shared files are SST files an incremental state file names, not state files themselves
    return [
        read_state_file(storage, directory, relative, operator_uid)
        for relative in dict.fromkeys([*ref.keyed.values(), *ref.operator_state.values()])
    ]


def read_state_file(
    storage: CheckpointStorage, directory: str, relative: str, operator_uid: OperatorUid
) -> SerializedOperatorSnapshot:
    """One operator subtask's state file; an incremental keyed state in it can read its shared files."""
    snapshot = read_pickled(
        storage, directory, relative, SerializedOperatorSnapshot,
        operator_uid=operator_uid, what="state file", expected_as="an operator snapshot",
    )
    bind = getattr(snapshot.keyed, "bound", None)
    if bind is not None:
        snapshot = replace(snapshot, keyed=bind(lambda rel: storage.read_bytes(resolve_relative(directory, rel))))
    return snapshot


def savepoint_state_file(
    storage: CheckpointStorage, directory: str, relative: str, operator_uid: OperatorUid
) -> bytes:
    """The bytes a savepoint holds for a state file of the checkpoint in `directory`: the file itself,
    or, for incremental RocksDB state, the same state in canonical form (savepoints are full and
    self-contained, and restore into any state backend)."""
    data = storage.read_bytes(resolve_relative(directory, relative))
    if not _shared_files(_peek_keyed(data)):
        return data
    snapshot = read_state_file(storage, directory, relative, operator_uid)
    canonical = replace(snapshot, keyed=snapshot.keyed.canonical())
    return pickle.dumps(canonical, protocol=pickle.HIGHEST_PROTOCOL)


def _peek_keyed(data: bytes) -> Any:
    try:
        snapshot = pickle.loads(data)
    except Exception:  # noqa: BLE001 - not a state file this module wrote: copied as it is
        return None
    return getattr(snapshot, "keyed", None)


def restore_operators(
    storage: CheckpointStorage, directory: str, metadata: CheckpointMetadata, operators: Iterable[Any]
) -> None:
    """Restore every operator (of tasks not yet started) that has state in the checkpoint at `directory`;
    an operator missing from it was stateless then and starts fresh. Each uid's files are read once."""
    loaded: dict[str, list[SerializedOperatorSnapshot]] = {}
    for op in operators:
        uid = op.ctx.operator_uid
        if uid not in metadata.operators:
            continue
        if uid not in loaded:
            loaded[uid] = load_operator_snapshots(storage, directory, metadata, uid)
        restore_operator(op, loaded[uid])
