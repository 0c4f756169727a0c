"""The heap keyed state backend (HASHMAP, the default): all keyed state of one subtask in dicts.

Each state is a `StateTable` (namespace -> key -> value) read and written in place by the
state objects of `heap.states`; snapshots copy the tables (`heap.snapshots`).
"""

from __future__ import annotations

from typing import Any

from strom.datastream.state import StateTtlConfig
from strom.runtime.state import api
from strom.runtime.state.abstract_backend import AbstractKeyedStateBackend
from strom.runtime.state.api import VOID, Entry, StateAccessError, Timer, TimerRegistry
from strom.runtime.state.heap import snapshots as heap_snapshots
from strom.runtime.state.heap import states as hs
from strom.runtime.state.snapshots import KeyedStateSnapshot

_STATE_CLASSES = {
    "value": hs.HeapValueState,
    "list": hs.HeapListState,
    "map": hs.HeapMapState,
    "reducing": hs.HeapReducingState,
    "aggregating": hs.HeapAggregatingState,
}


class HeapKeyedStateBackend(AbstractKeyedStateBackend):
    tables: dict[str, hs.StateTable]

    def new_table(self, name: str, kind: str, ttl: bool) -> hs.StateTable:
        return hs.StateTable(name, kind, ttl)

    def state_class(self, kind: str) -> Any:
        return _STATE_CLASSES[kind]

    # -- key groups -----------------------------------------------------------------------------
    def entries_by_key_group(self) -> dict[int, dict[str, list[Entry]]]:
        """{key_group: {state name: [(key, namespace, value), ...]}} for every entry."""
        out: dict[int, dict[str, list[Entry]]] = {}
        kg = self.key_groups.key_group
        for name, table in self.tables.items():
            for key, ns, value in table.entries():
                group = kg(key)
                if group not in self.key_group_range:
                    raise StateAccessError(
                        f"operator {self.operator_name!r}: key {key!r} of key group {group} is outside this "
                        f"subtask's range {self.key_group_range}"
                    )
                out.setdefault(group, {}).setdefault(name, []).append((key, ns, value))
        return out

    def keys(self, state_name: str, namespace: Any = VOID) -> list[Any]:
        table = self.tables.get(state_name)
        if table is None:
            return []
        return list(table.maps.get(namespace, {}).keys())

    def num_entries(self) -> int:
        return sum(len(m) for t in self.tables.values() for m in t.maps.values())

    # -- TTL ------------------------------------------------------------------------------------
    def ttl_cleanup_on_access(self, table: hs.StateTable, ttl: StateTtlConfig, now: int) -> None:
        """Flink's incremental cleanup: every access also checks `incremental_cleanup_size` entries of
        the table and drops expired ones, so state that is never read again does not live forever.
        It walks a snapshot of the table's entries, a few per access."""
        queue = table.cleanup_queue
        if table.cleanup_pos >= len(queue):
            queue = table.cleanup_queue = [(ns, k) for ns, m in table.maps.items() for k in m]
            table.cleanup_pos = 0
            if not queue:
                return
        ttl_ms = ttl.ttl_ms
        kind = table.kind
        end = min(len(queue), table.cleanup_pos + ttl.incremental_cleanup_size)
        current = self.current_key
        for ns, key in queue[table.cleanup_pos : end]:
            m = table.maps.get(ns)
            if m is None or key not in m or key == current:
                continue  # the access in progress handles the current key's entry itself
            stored = m[key]
            if kind == "list":
                live = [e for e in stored if now - e[1] < ttl_ms]
                if live:
                    m[key] = live
                else:
                    del m[key]
            elif kind == "map":
                for uk in [uk for uk, e in stored.items() if now - e[1] >= ttl_ms]:
                    del stored[uk]
                if not stored:
                    del m[key]
            elif now - stored[1] >= ttl_ms:
                del m[key]
        table.cleanup_pos = end

    # -- snapshots ------------------------------------------------------------------------------
    def snapshot(self, timer_service: TimerRegistry | None, *, operator_uid: str | None = None) -> KeyedStateSnapshot:
        return heap_snapshots.snapshot_tables(self, timer_service, operator_uid=operator_uid)

    def restore_native(self, snapshot: Any, *, whole: bool) -> tuple[list[Timer], list[Timer]] | None:
        """Nothing of its own: the heap restores from the canonical form."""
        return None

    def write_key_group(self, key_group: int, entries: dict[str, list[Entry]], *, copy: bool) -> None:
        heap_snapshots.write_entries(self.tables, entries, copy=copy)

    def close(self) -> None:
        """Nothing to release: the dicts go with the backend."""


# the heap backend is a KeyedStateBackend (checked by mypy, no cost at run time)
_: type[api.KeyedStateBackend] = HeapKeyedStateBackend
