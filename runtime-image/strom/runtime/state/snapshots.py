"""Keyed state snapshots in canonical form: one subtask's keyed state and timers, addressed by key group.

The canonical form is what every full snapshot and savepoint holds, whichever backend took it:
per state, namespace -> key -> value (a list state's value is its list, a map state's a dict;
TTL values stamped `(value, last_access_ms)`), so it restores into either backend at any
parallelism. A checkpoint takes it in two phases, as Flink's heap backend does:
- synchronous (`snapshot_keyed` -> the backend's `snapshot`, on the task thread at the barrier):
  the heap copies its tables (`heap.snapshots`), RocksDB makes a local checkpoint (`rocksdb.snapshots`);
- asynchronous (`serialize_keyed` / a snapshot's `materialize`, on any thread): grouping by key
  group (hashing every key is as costly as the copy, so it stays off the task thread) and one blob
  per key group.

Restoring is `restore.restore_keyed`, the one restore path for every backend. Each table's kind
and TTL flag travel with the snapshot, so a state redeclared as another kind is an error naming
the operator uid and the state name rather than a misread value.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, cast

import cloudpickle

from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.runtime.state.api import Entry, StateAccessError, StateRestoreError, Timer, TimerRegistry

# The layout of one key group's blob; bump it when the tuple below changes.
KEY_GROUP_FORMAT = 1


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

    def materialize(self, uploader: Any = None) -> SerializedKeyedState:
        """The asynchronous phase: one blob per key group."""
        return serialize_keyed(self)

    def canonical(self) -> KeyedStateSnapshot:
        return self


@dataclass(frozen=True, slots=True)
class SerializedKeyedState:
    """A `KeyedStateSnapshot` with each key group as bytes, so a restore reads only its own groups."""

    operator_uid: str
    max_parallelism: int
    key_group_range: KeyGroupRange
    states: tuple[StateMeta, ...]
    key_groups: dict[int, bytes]

    def canonical(self) -> SerializedKeyedState:
        return self


AnyKeyedSnapshot = KeyedStateSnapshot | SerializedKeyedState


# -- synchronous phase -------------------------------------------------------------------------
def snapshot_keyed(backend: Any, timer_service: TimerRegistry | None, *, operator_uid: str | None = None) -> Any:
    """The synchronous phase of a checkpoint of any backend (a `KeyedSnapshotPhase`)."""
    return backend.snapshot(timer_service, operator_uid=operator_uid)


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
        return cast(bytes, cloudpickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL))
    if b"__main__" in data:
        return cast(bytes, cloudpickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL))
    return data


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
