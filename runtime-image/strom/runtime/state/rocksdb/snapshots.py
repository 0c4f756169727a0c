"""RocksDB keyed state snapshots: full (canonical) or incremental (SST files), and their restore.

Synchronous phase (`snapshot_rocksdb`, on the task thread at the barrier), like Flink's:
flush the memtable, create a RocksDB checkpoint (hard links of the live SST files) in the
working directory, and copy the heap timers. (A full snapshot cannot use a RocksDB snapshot
as its consistent view: rocksdict's snapshot iterators read the live database.)

Asynchronous phase (`materialize`, on the checkpoint writer's thread):
- full: read the checkpoint by key group into the canonical blobs of `snapshots` (the heap
  backend's format, so full snapshots restore into either backend at any parallelism);
- incremental: upload only the SST files not uploaded by an earlier checkpoint to the job's
  `shared/` directory (through a `SharedStateUploader`), keep the few small files (MANIFEST,
  CURRENT, OPTIONS) inline, and return an `IncrementalKeyedStateHandle` that names every SST
  file it needs. Retention counts references to the shared files (checkpoint/retention.py).

Restore goes through the one restore path (`state.restore.restore_keyed`), which offers each
snapshot to `restore_native` first: a single incremental handle of exactly this subtask's key
groups is downloaded and opened as the database (and its SST files count as uploaded already);
other incremental handles (rescaling) have the raw entries of the key groups in range copied in
(the key-group prefix clips them). Everything else arrives in canonical form. A snapshot's
`canonical()` (`to_canonical` for an incremental handle) is what savepoints hold and what the
heap backend restores from.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import cloudpickle
from rocksdict import Checkpoint, WriteBatch

from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.runtime.state.api import StateRestoreError, Timer, TimerRegistry
from strom.runtime.state.rocksdb import canonical
from strom.runtime.state.rocksdb.db import open_db
from strom.runtime.state.snapshots import KeyGroupState, SerializedKeyedState, StateMeta, key_group_blob

if TYPE_CHECKING:
    from strom.runtime.state.rocksdb.backend import RocksDBKeyedStateBackend

SST_SUFFIX = ".sst"
_COPY_BATCH = 10_000


class SharedStateUploader(Protocol):
    """Where an incremental snapshot's new SST files go (implemented by the checkpoint writer)."""

    def upload_shared(self, local_path: str) -> str:
        """Upload the file; returns its path relative to the checkpoint directory ('../shared/...')."""


Fetch = Callable[[str], bytes]  # a path relative to the checkpoint directory -> the file's bytes


@dataclass(frozen=True, slots=True, weakref_slot=True)
class RocksDBFullSnapshot:
    """Synchronous phase of a full snapshot: a local RocksDB checkpoint, read in canonical form later."""

    operator_uid: str
    max_parallelism: int
    key_group_range: KeyGroupRange
    states: tuple[StateMeta, ...]
    local_dir: str
    event_timers: list[Timer]
    processing_timers: list[Timer]

    def materialize(self, uploader: SharedStateUploader | None = None) -> SerializedKeyedState:
        return _serialize_full(self)

    def canonical(self) -> SerializedKeyedState:
        return _serialize_full(self)


@dataclass(frozen=True, slots=True, weakref_slot=True)
class RocksDBIncrementalSnapshot:
    """Synchronous phase of an incremental snapshot: a local RocksDB checkpoint of hard links."""

    operator_uid: str
    max_parallelism: int
    key_group_range: KeyGroupRange
    states: tuple[StateMeta, ...]
    local_dir: str
    previous: dict[str, str]  # SST files uploaded by earlier checkpoints: local name -> shared path
    backend: RocksDBKeyedStateBackend  # told which SST files are uploaded once this one is
    event_timers: list[Timer]
    processing_timers: list[Timer]
    next_seq: int

    def materialize(self, uploader: SharedStateUploader | None) -> IncrementalKeyedStateHandle:
        if uploader is None:
            raise StateRestoreError(
                f"operator uid {self.operator_uid!r}: an incremental RocksDB snapshot needs checkpoint storage to "
                "upload its files to"
            )
        return _upload_incremental(self, uploader)

    def canonical(self) -> SerializedKeyedState:
        raise StateRestoreError(
            f"operator uid {self.operator_uid!r}: an incremental RocksDB snapshot restores only once uploaded"
        )


@dataclass(frozen=True, slots=True)
class IncrementalKeyedStateHandle:
    """One subtask's RocksDB state in a checkpoint: SST files in `shared/`, small files inline."""

    operator_uid: str
    max_parallelism: int
    key_group_range: KeyGroupRange
    states: tuple[StateMeta, ...]
    shared: dict[str, str]  # local SST file name -> path relative to the checkpoint directory
    private: dict[str, bytes]  # MANIFEST, CURRENT, OPTIONS, ... of the RocksDB checkpoint
    timers: bytes  # cloudpickled (event-time timers, processing-time timers)
    next_seq: int
    uploaded_bytes: int = 0  # bytes of SST files this checkpoint uploaded (the rest were re-used)
    source: Fetch | None = field(default=None, compare=False)  # set when loaded from a checkpoint

    def shared_files(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.shared.values())))

    def canonical(self) -> SerializedKeyedState:
        """This handle's state in canonical form (savepoints, restoring into the heap backend)."""
        return to_canonical(self)

    def bound(self, fetch: Fetch) -> IncrementalKeyedStateHandle:
        """This handle, able to read its shared files through `fetch`."""
        return replace(self, source=fetch)

    def __getstate__(self) -> Any:
        # never pickle the (storage-bound) source: a handle on disk is always unbound
        return tuple(getattr(self, f) if f != "source" else None for f in self.__slots__)

    def __setstate__(self, state: Any) -> None:
        for f, v in zip(self.__slots__, state, strict=True):
            object.__setattr__(self, f, v)


# -- synchronous phase -------------------------------------------------------------------------
def snapshot_rocksdb(
    backend: RocksDBKeyedStateBackend,
    timer_service: TimerRegistry | None,
    *,
    operator_uid: str | None = None,
) -> RocksDBFullSnapshot | RocksDBIncrementalSnapshot:
    backend.write_through_caches()  # a snapshot sees every write (the caches' pending ones too)
    uid = backend.operator_uid if operator_uid is None else operator_uid
    event, processing = timer_service.timer_entries() if timer_service is not None else ([], [])
    states = tuple(StateMeta(t.name, t.kind, t.ttl) for t in backend.tables.values())
    backend.db.flush()  # the write-ahead log is off: only flushed data is in the checkpoint
    # Beside the working directory, not in it: the task may end (and close the backend, which removes its
    # working directory) while this snapshot's asynchronous phase still reads the files. Same file system,
    # so RocksDB's checkpoint is hard links. Removed by the asynchronous phase, or when the snapshot is
    # dropped without one.
    local_dir = tempfile.mkdtemp(prefix=os.path.basename(backend.workdir) + "-chk-",
                                 dir=os.path.dirname(backend.workdir))
    os.rmdir(local_dir)  # RocksDB creates the checkpoint directory itself
    Checkpoint(backend.db).create_checkpoint(local_dir)
    snapshot: RocksDBFullSnapshot | RocksDBIncrementalSnapshot
    if not backend.incremental:
        snapshot = RocksDBFullSnapshot(
            uid, backend.max_parallelism, backend.key_group_range, states, local_dir, event, processing
        )
        weakref.finalize(snapshot, shutil.rmtree, local_dir, True)
        return snapshot
    snapshot = RocksDBIncrementalSnapshot(
        uid,
        backend.max_parallelism,
        backend.key_group_range,
        states,
        local_dir,
        dict(backend.uploaded_sst),
        backend,
        event,
        processing,
        backend.next_seq,
    )
    weakref.finalize(snapshot, shutil.rmtree, local_dir, True)
    return snapshot


# -- asynchronous phase ------------------------------------------------------------------------
def materialize(
    snapshot: RocksDBFullSnapshot | RocksDBIncrementalSnapshot, uploader: SharedStateUploader | None
) -> SerializedKeyedState | IncrementalKeyedStateHandle:
    return snapshot.materialize(uploader)


def _serialize_full(snapshot: RocksDBFullSnapshot) -> SerializedKeyedState:
    kinds = {m.name: m.kind for m in snapshot.states}
    rng = snapshot.key_group_range
    try:
        db = open_db(snapshot.local_dir)
        try:
            entries = canonical.read_entries(db, rng, kinds, operator_uid=snapshot.operator_uid)
        finally:
            db.close()
    finally:
        shutil.rmtree(snapshot.local_dir, ignore_errors=True)
    return _serialized(
        snapshot.operator_uid,
        snapshot.max_parallelism,
        rng,
        snapshot.states,
        entries,
        snapshot.event_timers,
        snapshot.processing_timers,
    )


def _serialized(
    uid: str,
    max_parallelism: int,
    rng: KeyGroupRange,
    states: tuple[StateMeta, ...],
    entries: dict[int, dict[str, list[Any]]],
    event_timers: list[Timer],
    processing_timers: list[Timer],
) -> SerializedKeyedState:
    """Canonical blobs: the entries (already by key group) and the timers, grouped by key group."""
    groups = {g: KeyGroupState(e, [], []) for g, e in entries.items()}
    for timers, pick in ((event_timers, 0), (processing_timers, 1)):
        for timer in timers:
            g = assign_to_key_group(timer[1], max_parallelism)
            if g not in rng:
                raise StateRestoreError(
                    f"operator uid {uid!r}: timer key {timer[1]!r} of key group {g} is outside the range {rng}"
                )
            state = groups.get(g)
            if state is None:
                state = groups[g] = KeyGroupState({}, [], [])
            (state.event_timers if pick == 0 else state.processing_timers).append(timer)
    return SerializedKeyedState(uid, max_parallelism, rng, states, {g: key_group_blob(s) for g, s in groups.items()})


def _upload_incremental(
    snapshot: RocksDBIncrementalSnapshot, uploader: SharedStateUploader
) -> IncrementalKeyedStateHandle:
    shared: dict[str, str] = {}
    private: dict[str, bytes] = {}
    uploaded = 0
    try:
        for name in sorted(os.listdir(snapshot.local_dir)):
            path = os.path.join(snapshot.local_dir, name)
            if name.endswith(SST_SUFFIX):
                previous = snapshot.previous.get(name)
                if previous is None:
                    previous = uploader.upload_shared(path)
                    uploaded += os.path.getsize(path)
                shared[name] = previous
            else:
                with open(path, "rb") as f:
                    private[name] = f.read()
    finally:
        shutil.rmtree(snapshot.local_dir, ignore_errors=True)
    # the next checkpoint re-uses exactly what this one references (files compacted away drop out)
    snapshot.backend.uploaded_sst = dict(shared)
    timers = cloudpickle.dumps((snapshot.event_timers, snapshot.processing_timers), protocol=pickle.HIGHEST_PROTOCOL)
    return IncrementalKeyedStateHandle(
        snapshot.operator_uid,
        snapshot.max_parallelism,
        snapshot.key_group_range,
        snapshot.states,
        shared,
        private,
        timers,
        snapshot.next_seq,
        uploaded,
    )


# -- reading incremental handles -----------------------------------------------------------------
def download(handle: IncrementalKeyedStateHandle, directory: str) -> None:
    """Write the handle's RocksDB checkpoint into `directory` (created), ready to be opened."""
    if handle.source is None:
        raise StateRestoreError(
            f"operator uid {handle.operator_uid!r}: the incremental RocksDB handle is not bound to its checkpoint "
            "storage, so its SST files cannot be read"
        )
    os.makedirs(directory, exist_ok=True)
    for name, relative in handle.shared.items():
        try:
            data = handle.source(relative)
        except Exception as e:  # a missing or unreadable shared file makes the checkpoint unusable
            raise StateRestoreError(
                f"operator uid {handle.operator_uid!r}: cannot read the shared state file {relative!r}: {e}"
            ) from e
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    for name, data in handle.private.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


def handle_timers(handle: IncrementalKeyedStateHandle) -> tuple[list[Timer], list[Timer]]:
    try:
        event, processing = pickle.loads(handle.timers)
    except Exception as e:  # a truncated or foreign blob fails in many ways; all mean "corrupt"
        raise StateRestoreError(f"operator uid {handle.operator_uid!r}: the snapshot's timers are corrupt: {e}") from e
    return event, processing


def to_canonical(handle: IncrementalKeyedStateHandle, *, work_dir: str | None = None) -> SerializedKeyedState:
    """The handle's state in canonical form (for savepoints and for restoring into the heap backend)."""
    directory = tempfile.mkdtemp(prefix="strom-rocksdb-read-", dir=work_dir)
    try:
        download(handle, directory)
        db = open_db(directory)
        try:
            kinds = {m.name: m.kind for m in handle.states}
            entries = canonical.read_entries(db, handle.key_group_range, kinds, operator_uid=handle.operator_uid)
        finally:
            db.close()
        event, processing = handle_timers(handle)
        return _serialized(
            handle.operator_uid,
            handle.max_parallelism,
            handle.key_group_range,
            handle.states,
            entries,
            event,
            processing,
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# -- restore (the steps of `state.restore.restore_keyed` that read RocksDB's own files) --------------
def restore_native(
    backend: RocksDBKeyedStateBackend, snapshot: Any, *, whole: bool
) -> tuple[list[Timer], list[Timer]] | None:
    """Take an incremental handle directly, returning its timers; None for every other snapshot."""
    if not isinstance(snapshot, IncrementalKeyedStateHandle):
        return None
    if whole:
        # the same key groups: the checkpoint's files become the database, and count as uploaded
        backend.reopen(lambda path: download(snapshot, path))
        backend.uploaded_sst = dict(snapshot.shared)
        backend.next_seq = max(backend.next_seq, snapshot.next_seq)
    else:
        _copy_key_groups(backend, snapshot, backend.key_group_range)
    return handle_timers(snapshot)


def _copy_key_groups(
    backend: RocksDBKeyedStateBackend, handle: IncrementalKeyedStateHandle, rng: KeyGroupRange
) -> None:
    """Copy the raw entries of the key groups both ranges share (Flink's key-group clipping)."""
    start = max(rng.start, handle.key_group_range.start)
    end = min(rng.end, handle.key_group_range.end)
    backend.next_seq = max(backend.next_seq, handle.next_seq)
    if start > end:
        return
    directory = tempfile.mkdtemp(prefix="restore-", dir=backend.workdir)
    try:
        download(handle, directory)
        source = open_db(directory)
        try:
            batch = WriteBatch(raw_mode=True)
            n = 0
            for k, v in canonical.scan_range(source, KeyGroupRange(start, end)):
                batch.put(k, v)
                n += 1
                if n >= _COPY_BATCH:
                    backend.db.write(batch)
                    batch = WriteBatch(raw_mode=True)
                    n = 0
            if n:
                backend.db.write(batch)
        finally:
            source.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
