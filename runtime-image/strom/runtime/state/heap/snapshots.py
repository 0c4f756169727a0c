"""Heap keyed state in and out of the canonical snapshot form (`state.snapshots`).

Synchronous phase (`snapshot_tables`, on the task thread at the barrier): an O(n) copy of every
state table and timer, sharing only immutable values (`state_copies`), so processing may
continue at once; grouping by key group and serializing happen later on any thread. Restore
(`write_entries`) puts a key group's canonical entries back into the tables; the checks and the
key-group walk are the one restore path of `state.restore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strom.runtime.state.api import Entry, TimerRegistry
from strom.runtime.state.heap.states import StateTable
from strom.runtime.state.snapshots import KeyedStateSnapshot, StateMeta
from strom.runtime.state.state_copies import copier_for

if TYPE_CHECKING:
    from strom.runtime.state.heap.backend import HeapKeyedStateBackend


def snapshot_tables(
    backend: HeapKeyedStateBackend,
    timer_service: TimerRegistry | None,
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


def write_entries(tables: dict[str, StateTable], entries: dict[str, list[Entry]], *, copy: bool) -> None:
    """Put one key group's canonical entries into the (declared) tables. Values from bytes are new
    objects; values of an in-memory snapshot (`copy`) are copied so that the live state never shares
    a mutable value with the snapshot."""
    for name, items in entries.items():
        table = tables[name]
        copy_value = copier_for(table.kind) if copy else None
        maps = table.maps
        for key, ns, value in items:
            m = maps.get(ns)
            if m is None:
                m = maps[ns] = {}
            m[key] = value if copy_value is None else copy_value(value)
