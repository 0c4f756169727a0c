"""Keyed state snapshots: one operator subtask's keyed state and timers, addressed by key group.

A checkpoint takes a snapshot in two phases, as Flink's heap backend does:
- synchronous (`snapshot_keyed`, on the task thread at the barrier): an O(n) copy of every
  state table and timer, sharing only immutable values (see `state_copies`), so processing
  may continue at once;
- asynchronous (`serialize_keyed`, on any thread): grouping by key group (hashing every key
  is as costly as the copy, so it stays off the task thread) and one blob per key group.

`restore_keyed` takes the snapshots of ALL old subtasks and keeps the key groups of the
backend's own range, so state restores at any parallelism (rescaling). The max parallelism
must not change: it fixes which key group a key belongs to. Each table's kind and TTL flag
travel with the snapshot, so a state redeclared as another kind is an error naming the
operator uid and the state name rather than a misread value.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cloudpickle

from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.runtime.state.heap_states import StateTable
from strom.runtime.state.keyed_backend import HeapKeyedStateBackend, StateAccessError
from strom.runtime.state.state_copies import copier_for
from strom.runtime.state.timers import InternalTimerService

# The layout of one key group's blob; bump it when the tuple below changes.
KEY_GROUP_FORMAT = 1

Timer = tuple[int, Any, Any]  # (timestamp, key, namespace)
Entry = tuple[Any, Any, Any]  # (key, namespace, value); TTL values are (value, last_access_ms)


class StateRestoreError(StateAccessError):
    """A snapshot that cannot be restored into this operator: incompatible, mismatched or corrupt."""


@dataclass(frozen=True, slots=True)
class StateMeta:
    """What a restore must know of a state table before it reads a value."""

    name: str
    kind: str  # value | list | map | reducing | aggregating
    ttl: bool  # values stored as (value, last_access_ms)


@dataclass(frozen=True, slots=True)
class KeyGroupState:
    """The state of the keys of one key group: table entries and timers."""

    entries: dict[str, list[Entry]]
    event_timers: list[Timer]
    processing_timers: list[Timer]


@dataclass(frozen=True, slots=True)
class KeyedStateSnapshot:
    """One subtask's keyed state as the synchronous phase copied it, not yet grouped by key group."""

    operator_uid: str
    max_parallelism: int
    key_group_range: KeyGroupRange
    states: tuple[StateMeta, ...]
    tables: dict[str, dict[Any, dict[Any, Any]]]  # state name -> namespace -> key -> value
    event_timers: list[Timer]
    processing_timers: list[Timer]


@dataclass(frozen=True, slots=True)
class SerializedKeyedState:
    """A `KeyedStateSnapshot` with each key group as bytes, so a restore reads only its own groups."""

    operator_uid: str
    max_parallelism: int
    key_group_range: KeyGroupRange
    states: tuple[StateMeta, ...]
    key_groups: dict[int, bytes]


AnyKeyedSnapshot = KeyedStateSnapshot | SerializedKeyedState


# -- synchronous phase -------------------------------------------------------------------------
def snapshot_keyed(
    backend: HeapKeyedStateBackend,
    timer_service: InternalTimerService | None,
    *,
    operator_uid: str | None = None,
) -> KeyedStateSnapshot:
    """Copy the backend's tables and the timer service's timers (the synchronous phase)."""
    tables: dict[str, dict[Any, dict[Any, Any]]] = {}
    for name, table in backend.tables.items():
        copy_value = copier_for(table.kind)
        tables[name] = {
            ns: {key: copy_value(value) for key, value in values.items()} for ns, values in table.maps.items() if values
        }
    event, processing = timer_service.timer_entries() if timer_service is not None else ([], [])
    return KeyedStateSnapshot(
        backend.operator_uid if operator_uid is None else operator_uid,
        backend.max_parallelism,
        backend.key_group_range,
        tuple(StateMeta(t.name, t.kind, t.ttl) for t in backend.tables.values()),
        tables,
        event,
        processing,
    )


# -- asynchronous phase ------------------------------------------------------------------------
def key_groups_of(snapshot: KeyedStateSnapshot) -> dict[int, KeyGroupState]:
    """The snapshot's entries and timers by key group (non-empty groups only)."""
    uid, rng, max_p = snapshot.operator_uid, snapshot.key_group_range, snapshot.max_parallelism
    start, end = rng.start, rng.end
    # a private cache: keys repeat across tables and namespaces, and this may run on another thread
    cache: dict[Any, int] = {}
    groups: dict[int, KeyGroupState] = {}

    def group_of(key: Any) -> KeyGroupState:
        g = cache.get(key)
        if g is None:
            g = cache[key] = assign_to_key_group(key, max_p)
        state = groups.get(g)
        if state is None:
            if not start <= g <= end:
                raise StateAccessError(
                    f"operator uid {uid!r}: key {key!r} of key group {g} is outside this subtask's range {rng}"
                )
            state = groups[g] = KeyGroupState({}, [], [])
        return state

    for name, namespaces in snapshot.tables.items():
        for ns, values in namespaces.items():
            for key, value in values.items():
                entries = group_of(key).entries
                lst = entries.get(name)
                if lst is None:
                    lst = entries[name] = []
                lst.append((key, ns, value))
    for timer in snapshot.event_timers:
        group_of(timer[1]).event_timers.append(timer)
    for timer in snapshot.processing_timers:
        group_of(timer[1]).processing_timers.append(timer)
    return groups


def key_group_blob(state: KeyGroupState) -> bytes:
    """The canonical bytes of one key group, whichever backend the state comes from."""
    doc = (KEY_GROUP_FORMAT, state.entries, state.event_timers, state.processing_timers)
    # C pickle first (several times faster than cloudpickle's Python-level pickler); cloudpickle when
    # values are instances of classes defined in the user's job script (by value, readable elsewhere)
    try:
        data = pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return cloudpickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL)
    return cloudpickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL) if b"__main__" in data else data


def serialize_key_groups(snapshot: KeyedStateSnapshot) -> dict[int, bytes]:
    """One blob per non-empty key group. Safe on another thread: the snapshot is a private copy."""
    return {g: key_group_blob(s) for g, s in key_groups_of(snapshot).items()}


def serialize_keyed(snapshot: KeyedStateSnapshot) -> SerializedKeyedState:
    return SerializedKeyedState(
        snapshot.operator_uid,
        snapshot.max_parallelism,
        snapshot.key_group_range,
        snapshot.states,
        serialize_key_groups(snapshot),
    )


def deserialize_key_group(blob: bytes, *, operator_uid: str = "", key_group: int = -1) -> KeyGroupState:
    try:
        data = pickle.loads(blob)
    except Exception as e:  # a truncated or foreign blob fails in many ways; all mean "corrupt"
        raise StateRestoreError(
            f"operator uid {operator_uid!r}: key group {key_group} of the snapshot is corrupt: {e}"
        ) from e
    if not isinstance(data, tuple) or len(data) != 4 or data[0] != KEY_GROUP_FORMAT:
        raise StateRestoreError(
            f"operator uid {operator_uid!r}: key group {key_group} has an unknown format "
            f"(expected format {KEY_GROUP_FORMAT})"
        )
    return KeyGroupState(data[1], data[2], data[3])


# -- restore -----------------------------------------------------------------------------------
def restore_keyed(
    backend: HeapKeyedStateBackend,
    timer_service: InternalTimerService | None,
    snapshots: Sequence[AnyKeyedSnapshot],
) -> None:
    """Restore the key groups of `backend.key_group_range` from the snapshots of all old subtasks.

    Call it before the operator opens (as Flink's initializeState), on an empty backend.
    Restored processing-time timers are scheduled as usual, so overdue ones fire at the
    next run of the processing-time service."""
    if not snapshots:
        return
    uid = _common_uid(snapshots)
    _check_max_parallelism(uid, backend.max_parallelism, snapshots)
    _check_coverage(uid, backend.key_group_range, snapshots)
    if not backend.operator_uid:
        backend.operator_uid = uid
    tables = _restore_tables(uid, backend, snapshots)

    rng = backend.key_group_range
    saved_key = backend.current_key
    try:
        for snap in snapshots:
            serialized = isinstance(snap, SerializedKeyedState)
            parts = snap.key_groups if isinstance(snap, SerializedKeyedState) else key_groups_of(snap)
            for g, part in parts.items():
                if g not in rng:
                    continue
                if g not in snap.key_group_range:
                    raise StateRestoreError(
                        f"operator uid {uid!r}: a snapshot of key groups {snap.key_group_range} holds key group {g}"
                    )
                state = deserialize_key_group(part, operator_uid=uid, key_group=g) if serialized else part
                _restore_group(uid, tables, timer_service, state, fresh=serialized)  # type: ignore[arg-type]
    finally:
        backend.current_key = saved_key


def _restore_group(
    uid: str,
    tables: dict[str, StateTable],
    timer_service: InternalTimerService | None,
    state: KeyGroupState,
    *,
    fresh: bool,
) -> None:
    for name, entries in state.entries.items():
        table = tables.get(name)
        if table is None:
            raise StateRestoreError(f"operator uid {uid!r}: the snapshot has entries of undeclared state {name!r}")
        # values from bytes are new objects; values of an in-memory snapshot are copied so that
        # the live state never shares a mutable value with the snapshot
        copy_value = None if fresh else copier_for(table.kind)
        maps = table.maps
        for key, ns, value in entries:
            m = maps.get(ns)
            if m is None:
                m = maps[ns] = {}
            m[key] = value if copy_value is None else copy_value(value)
    if not (state.event_timers or state.processing_timers):
        return
    if timer_service is None:
        raise StateRestoreError(f"operator uid {uid!r}: the snapshot has timers but the operator has no timer service")
    backend = timer_service.backend
    for ts, key, ns in state.event_timers:
        backend.current_key = key
        timer_service.register_event_time_timer(ns, ts)
    for ts, key, ns in state.processing_timers:
        backend.current_key = key
        timer_service.register_processing_time_timer(ns, ts)


def _common_uid(snapshots: Sequence[AnyKeyedSnapshot]) -> str:
    uids = sorted({s.operator_uid for s in snapshots})
    if len(uids) != 1:
        raise StateRestoreError(f"keyed snapshots of different operators restored together: uids {uids}")
    return uids[0]


def _check_max_parallelism(uid: str, max_parallelism: int, snapshots: Sequence[AnyKeyedSnapshot]) -> None:
    for s in snapshots:
        if s.max_parallelism != max_parallelism:
            raise StateRestoreError(
                f"operator uid {uid!r}: the snapshot was taken with max parallelism {s.max_parallelism}, but the "
                f"operator now has max parallelism {max_parallelism}; the max parallelism of an operator with keyed "
                f"state cannot change (set it to {s.max_parallelism})"
            )


def _check_coverage(uid: str, rng: KeyGroupRange, snapshots: Sequence[AnyKeyedSnapshot]) -> None:
    """The old subtasks' ranges must not overlap and must cover the new range: else state is lost or doubled."""
    ranges = sorted((s.key_group_range for s in snapshots), key=lambda r: r.start)
    for a, b in zip(ranges, ranges[1:], strict=False):
        if b.start <= a.end:
            raise StateRestoreError(
                f"operator uid {uid!r}: snapshots of overlapping key groups {a} and {b}; "
                "were snapshots of different checkpoints mixed?"
            )
    covered = sum(len(KeyGroupRange(max(r.start, rng.start), min(r.end, rng.end))) for r in ranges)
    if covered != len(rng):
        raise StateRestoreError(
            f"operator uid {uid!r}: key groups {rng} are not all in the given snapshots "
            f"(they hold {[(r.start, r.end) for r in ranges]}); is a subtask's snapshot missing?"
        )


def _restore_tables(
    uid: str, backend: HeapKeyedStateBackend, snapshots: Sequence[AnyKeyedSnapshot]
) -> dict[str, StateTable]:
    """Every state of the snapshots as a table of the backend, checked against tables already declared."""
    return restore_state_tables(uid, backend.tables, snapshots, StateTable)


def restore_state_tables(uid: str, tables: dict[str, Any], snapshots: Sequence[Any], make_table: Any) -> dict[str, Any]:
    """Declare the states of `snapshots` in a backend's `tables` (by name; `make_table(name, kind, ttl)`
    for new ones), refusing a state whose kind or TTL setting differs between snapshots or from the one
    already declared. Shared by the heap and the RocksDB backend."""
    metas: dict[str, StateMeta] = {}
    for s in snapshots:
        for meta in s.states:
            seen = metas.setdefault(meta.name, meta)
            if seen != meta:
                raise StateRestoreError(
                    f"operator uid {uid!r}: state {meta.name!r} is {_describe(seen)} in one subtask's snapshot and "
                    f"{_describe(meta)} in another"
                )
    for meta in metas.values():
        table = tables.get(meta.name)
        if table is None:
            tables[meta.name] = make_table(meta.name, meta.kind, meta.ttl)
        elif table.kind != meta.kind or table.ttl != meta.ttl:
            raise StateRestoreError(
                f"operator uid {uid!r}: state {meta.name!r} was snapshotted as {_describe(meta)} state but is "
                f"declared as {_describe(StateMeta(table.name, table.kind, table.ttl))} state; a state's kind and "
                "TTL setting cannot change for the same name (use a new state name)"
            )
    return tables


def _describe(meta: StateMeta) -> str:
    return f"{meta.kind} (TTL)" if meta.ttl else meta.kind
