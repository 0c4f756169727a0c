"""Operator snapshots: everything one operator subtask restores from, addressed by operator uid.

An `OperatorSnapshot` combines the subtask's keyed state (per key group, `snapshots`), its
operator (non-keyed) state (per name with its redistribution mode) and the operator's own
extra state, returned by an optional `snapshot_state()` hook. On restore every new subtask
receives the snapshots of all old subtasks of the same uid: keyed state keeps its key
groups, operator state is redistributed (even split, union, broadcast) and the hook
`restore_state(parts)` gets the extra state of every old subtask.

Phases: `snapshot_operator` on the task thread at the barrier (copies), `serialize_operator`
on any thread, `restore_operator` after the operator's setup and before its open.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import cloudpickle

from strom.datastream.functions import CheckpointedFunction
from strom.runtime.state.api import StateRestoreError
from strom.runtime.state.operator_state import BROADCAST, DefaultOperatorStateStore, redistribute
from strom.runtime.state.restore import restore_keyed
from strom.runtime.state.state_copies import frozen_copy

OperatorStateParts = dict[str, tuple[str, Any]]  # name -> (mode, values or broadcast map)


@runtime_checkable
class SnapshotStateHooks(Protocol):
    """An operator with state of its own beyond keyed and operator state (e.g. per-window timers)."""

    def snapshot_state(self) -> dict[str, Any]: ...

    def restore_state(self, parts: list[dict[str, Any]]) -> None: ...


class NoExtraState:
    """Default hooks: the operator keeps nothing outside its keyed and operator state."""

    def snapshot_state(self) -> dict[str, Any]:
        return {}

    def restore_state(self, parts: list[dict[str, Any]]) -> None:
        names = sorted({k for p in parts for k in p})
        if names:
            raise StateRestoreError(
                f"{type(self).__name__}: the snapshot holds operator-specific state {names} that this operator "
                "does not restore"
            )


@dataclass(frozen=True, slots=True)
class FunctionSnapshotContext:
    """What a CheckpointedFunction's snapshot_state(context) is told (PyFlink's FunctionSnapshotContext)."""

    checkpoint_id: int
    checkpoint_timestamp: int

    def get_checkpoint_id(self) -> int:
        return self.checkpoint_id

    def get_checkpoint_timestamp(self) -> int:
        return self.checkpoint_timestamp


@dataclass(frozen=True, slots=True)
class OperatorSnapshot:
    operator_uid: str
    subtask_index: int
    parallelism: int
    keyed: Any  # the backend's synchronous-phase snapshot (api.KeyedSnapshotPhase), or None
    operator_state: OperatorStateParts
    extra: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SerializedOperatorSnapshot:
    operator_uid: str
    subtask_index: int
    parallelism: int
    keyed: Any  # SerializedKeyedState (canonical), IncrementalKeyedStateHandle (rocksdb.snapshots), or None
    operator_state: bytes
    extra: bytes


AnyOperatorSnapshot = OperatorSnapshot | SerializedOperatorSnapshot


# -- operator state ----------------------------------------------------------------------------
def snapshot_operator_state(store: DefaultOperatorStateStore) -> OperatorStateParts:
    """A copy of every operator state; restored states not registered since are kept, as in Flink."""
    out: OperatorStateParts = {n: (mode, frozen_copy(v)) for n, (mode, v) in store.restored.items()}
    for name, s in store.list_states.items():
        out[name] = (s.mode, [frozen_copy(v) for v in s.values])
    for name, b in store.broadcast_states.items():
        out[name] = (BROADCAST, {k: frozen_copy(v) for k, v in b.map.items()})
    return out


def restore_operator_state(
    snapshots: Sequence[OperatorStateParts], *, parallelism: int, subtask_index: int
) -> DefaultOperatorStateStore:
    """The store of new subtask `subtask_index` of `parallelism`, from the states of all old subtasks."""
    if not 0 <= subtask_index < parallelism:
        raise ValueError(f"subtask index {subtask_index} is outside parallelism {parallelism}")
    parts = redistribute(list(snapshots), parallelism)[subtask_index] if snapshots else {}
    return DefaultOperatorStateStore(restored=parts)


# -- whole operators ---------------------------------------------------------------------------
def snapshot_operator(op: Any, *, checkpoint_id: int = 0, checkpoint_timestamp: int = 0) -> OperatorSnapshot:
    """Synchronous phase for one operator subtask (a StreamOperator after setup).

    A CheckpointedFunction first writes its operator state (`snapshot_state(context)`) and the
    operator's own hook runs (it may write keyed state, as Flink's snapshotState runs before the keyed
    backend's snapshot), then everything is copied."""
    ctx = op.ctx
    fn = op.function
    if isinstance(fn, CheckpointedFunction):
        fn.snapshot_state(FunctionSnapshotContext(checkpoint_id, checkpoint_timestamp))
    extra = op.snapshot_state() if isinstance(op, SnapshotStateHooks) else {}
    keyed: Any = None
    if op.backend is not None:
        keyed = op.backend.snapshot(op.timer_service, operator_uid=ctx.operator_uid)
    return OperatorSnapshot(
        ctx.operator_uid,
        ctx.subtask_index,
        ctx.parallelism,
        keyed,
        snapshot_operator_state(op.operator_state),
        # the hook may hand out its live structures; the copy is what makes it a snapshot
        {k: frozen_copy(v) for k, v in extra.items()},
    )


def serialize_operator(snapshot: OperatorSnapshot, uploader: Any = None) -> SerializedOperatorSnapshot:
    """Asynchronous phase: bytes for everything; safe on another thread. An incremental RocksDB
    snapshot uploads its new SST files through `uploader` (a `SharedStateUploader`)."""
    return SerializedOperatorSnapshot(
        snapshot.operator_uid,
        snapshot.subtask_index,
        snapshot.parallelism,
        None if snapshot.keyed is None else snapshot.keyed.materialize(uploader),
        cloudpickle.dumps(snapshot.operator_state, protocol=pickle.HIGHEST_PROTOCOL),
        cloudpickle.dumps(snapshot.extra, protocol=pickle.HIGHEST_PROTOCOL),
    )


def restore_operator(op: Any, snapshots: Sequence[AnyOperatorSnapshot]) -> None:
    """Restore an operator subtask (after setup, before open) from the snapshots of all old subtasks."""
    ctx = op.ctx
    uid = ctx.operator_uid
    for s in snapshots:
        if s.operator_uid != uid:
            raise StateRestoreError(f"operator uid {uid!r}: given the snapshot of operator uid {s.operator_uid!r}")
    keyed: list[Any] = [s.keyed for s in snapshots if s.keyed is not None]
    if keyed:
        if op.backend is None:
            raise StateRestoreError(
                f"operator uid {uid!r}: the snapshot has keyed state but the operator is not keyed (no key_by?)"
            )
        op.backend.operator_uid = uid
        # every backend restores every kind of keyed snapshot (a checkpoint taken with rocksdb restores
        # into hashmap and back): the one restore path
        restore_keyed(op.backend, op.timer_service, keyed)
    op.operator_state = restore_operator_state(
        [_loaded(uid, s.operator_state) for s in snapshots],
        parallelism=ctx.parallelism,
        subtask_index=ctx.subtask_index,
    )
    parts = [_loaded(uid, s.extra) for s in snapshots]
    if isinstance(op, SnapshotStateHooks):
        op.restore_state([{k: frozen_copy(v) for k, v in p.items()} for p in parts])
    elif any(parts):
        raise StateRestoreError(
            f"operator uid {uid!r}: the snapshot holds operator-specific state {sorted({k for p in parts for k in p})} "
            f"that {type(op).__name__} does not restore"
        )


def _loaded(uid: str, data: Any) -> Any:
    if not isinstance(data, bytes):
        return data
    try:
        return pickle.loads(data)
    except Exception as e:  # a truncated or foreign blob fails in many ways; all mean "corrupt"
        raise StateRestoreError(f"operator uid {uid!r}: the operator's snapshot is corrupt: {e}") from e
