"""Heap state objects: the user's view of one state for the current key and namespace.

Each state keeps its values in a `StateTable` (namespace -> key -> value). The current
key lives on the backend; the namespace (a window, or VOID) on the state object.
TTL states are the `ttl` layer over these (they store `(value, last_access_ms)`).
Every heap state offers its namespace's live dict (`api.InMemoryNamespaces`), which the
window fast path and the rolling reduce use in their per-record loops.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from strom.datastream.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)
from strom.runtime.state.api import VOID

if TYPE_CHECKING:
    from strom.runtime.state.heap.backend import HeapKeyedStateBackend


class StateTable:
    """namespace -> {key -> value}."""

    __slots__ = ("name", "kind", "ttl", "maps", "cleanup_queue", "cleanup_pos")

    def __init__(self, name: str, kind: str, ttl: bool = False) -> None:
        self.name = name
        self.kind = kind
        # whether values are stored TTL-stamped as (value, last_access_ms); a snapshot records it
        # because a restore under a descriptor with the other setting would misread every value
        self.ttl = ttl
        self.maps: dict[Any, dict[Any, Any]] = {}
        # TTL incremental cleanup walks a snapshot of the entries, a few per state access
        self.cleanup_queue: list[tuple[Any, Any]] = []
        self.cleanup_pos = 0

    def map_for(self, namespace: Any) -> dict[Any, Any]:
        m = self.maps.get(namespace)
        if m is None:
            m = self.maps[namespace] = {}
        return m

    def drop_namespace_if_empty(self, namespace: Any) -> None:
        m = self.maps.get(namespace)
        if m is not None and not m and namespace is not VOID:
            del self.maps[namespace]

    def entries(self) -> Iterable[tuple[Any, Any, Any]]:
        for ns, m in self.maps.items():
            for k, v in m.items():
                yield k, ns, v


class _HeapState:
    __slots__ = ("backend", "table", "namespace", "_map")

    def __init__(self, backend: HeapKeyedStateBackend, table: StateTable) -> None:
        self.backend = backend
        self.table = table
        self.namespace: Any = VOID
        self._map = table.map_for(VOID)

    def set_current_namespace(self, namespace: Any) -> None:
        if namespace is not self.namespace:
            self.namespace = namespace
            self._map = self.table.map_for(namespace)

    def namespace_map(self, namespace: Any) -> dict[Any, Any]:
        """key -> stored value of `namespace`, live (api.InMemoryNamespaces)."""
        return self.table.map_for(namespace)

    def namespace_maps(self) -> list[tuple[Any, dict[Any, Any]]]:
        return list(self.table.maps.items())

    def clear(self) -> None:
        self._map.pop(self.backend.current_key, None)
        if not self._map and self.namespace is not VOID:
            self.table.drop_namespace_if_empty(self.namespace)
            self._map = self.table.map_for(self.namespace)

    # window merging: move the values of several namespaces into the current one
    def _raw_get(self, namespace: Any) -> Any:
        m = self.table.maps.get(namespace)
        return None if m is None else m.get(self.backend.current_key)

    def _raw_pop(self, namespace: Any) -> Any:
        m = self.table.maps.get(namespace)
        if m is None:
            return None
        v = m.pop(self.backend.current_key, None)
        if not m and namespace is not VOID:
            del self.table.maps[namespace]
            if namespace is self.namespace:
                self._map = self.table.map_for(namespace)
        return v


class HeapValueState(_HeapState, ValueState[Any]):
    def value(self) -> Any:
        return self._map.get(self.backend.current_key)

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._map[self.backend.current_key] = value


class HeapListState(_HeapState, ListState[Any]):
    def get(self) -> list[Any]:
        v = self._map.get(self.backend.current_key)
        return list(v) if v else []

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError(f"list state {self.table.name!r}: cannot add None")
        k = self.backend.current_key
        lst = self._map.get(k)
        if lst is None:
            self._map[k] = [value]
        else:
            lst.append(value)

    def add_all(self, values: list[Any]) -> None:
        for v in values:
            self.add(v)

    def update(self, values: list[Any]) -> None:
        if not values:
            self.clear()
        else:
            self._map[self.backend.current_key] = list(values)

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        merged: list[Any] = []
        for ns in sources:
            v = self._raw_pop(ns)
            if v:
                merged.extend(v)
        if merged:
            m = self.table.map_for(target)
            m.setdefault(self.backend.current_key, []).extend(merged)


class HeapReducingState(_HeapState, ReducingState[Any]):
    __slots__ = ("reduce_fn",)

    def __init__(self, backend: HeapKeyedStateBackend, table: StateTable, reduce_fn: Any) -> None:
        super().__init__(backend, table)
        self.reduce_fn = reduce_fn

    def get(self) -> Any:
        return self._map.get(self.backend.current_key)

    def add(self, value: Any) -> None:
        k = self.backend.current_key
        m = self._map
        if k in m:
            m[k] = self.reduce_fn(m[k], value)
        else:
            m[k] = value

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        acc = None
        for ns in sources:
            v = self._raw_pop(ns)
            if v is not None:
                acc = v if acc is None else self.reduce_fn(acc, v)
        if acc is not None:
            m = self.table.map_for(target)
            k = self.backend.current_key
            m[k] = acc if k not in m else self.reduce_fn(m[k], acc)


class HeapAggregatingState(_HeapState, AggregatingState[Any, Any]):
    __slots__ = ("agg",)

    def __init__(self, backend: HeapKeyedStateBackend, table: StateTable, agg: Any) -> None:
        super().__init__(backend, table)
        self.agg = agg

    def get(self) -> Any:
        k = self.backend.current_key
        if k not in self._map:
            return None
        return self.agg.get_result(self._map[k])

    def get_accumulator(self) -> Any:
        return self._map.get(self.backend.current_key)

    def add(self, value: Any) -> None:
        k = self.backend.current_key
        m = self._map
        acc = m.get(k)
        if acc is None and k not in m:
            acc = self.agg.create_accumulator()
        m[k] = self.agg.add(value, acc)

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        acc = None
        found = False
        for ns in sources:
            m = self.table.maps.get(ns)
            if m is None or self.backend.current_key not in m:
                continue
            v = self._raw_pop(ns)
            acc = v if not found else self.agg.merge(acc, v)
            found = True
        if found:
            m = self.table.map_for(target)
            k = self.backend.current_key
            m[k] = acc if k not in m else self.agg.merge(m[k], acc)


class HeapMapState(_HeapState, MapState[Any, Any]):
    def _user_map(self, create: bool) -> dict[Any, Any] | None:
        k = self.backend.current_key
        d = self._map.get(k)
        if d is None and create:
            d = self._map[k] = {}
        return d

    def get(self, key: Any) -> Any:
        d = self._map.get(self.backend.current_key)
        return None if d is None else d.get(key)

    def put(self, key: Any, value: Any) -> None:
        self._user_map(True)[key] = value  # type: ignore[index]

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self._user_map(True).update(dict_value)  # type: ignore[union-attr]

    def remove(self, key: Any) -> None:
        d = self._user_map(False)
        if d is not None:
            d.pop(key, None)
            if not d:
                self.clear()

    def contains(self, key: Any) -> bool:
        d = self._user_map(False)
        return d is not None and key in d

    def items(self) -> list[tuple[Any, Any]]:
        d = self._user_map(False)
        return list(d.items()) if d else []

    def keys(self) -> list[Any]:
        d = self._user_map(False)
        return list(d.keys()) if d else []

    def values(self) -> list[Any]:
        d = self._user_map(False)
        return list(d.values()) if d else []

    def is_empty(self) -> bool:
        return not self._user_map(False)
