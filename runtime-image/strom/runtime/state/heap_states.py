"""Heap state objects: the user's view of one state for the current key and namespace.

Each state keeps its values in a `StateTable` (namespace -> key -> value). The current
key lives on the backend; the namespace (a window, or VOID) on the state object.
TTL variants store `(value, last_access_ms)` and filter by the backend's clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from strom.datastream.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    StateTtlConfig,
    ValueState,
)

if TYPE_CHECKING:
    from strom.runtime.state.keyed_backend import HeapKeyedStateBackend

VOID = None  # the namespace of state outside windows


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


class HeapValueState(_HeapState, ValueState):
    def value(self) -> Any:
        return self._map.get(self.backend.current_key)

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._map[self.backend.current_key] = value


class HeapListState(_HeapState, ListState):
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


class HeapReducingState(_HeapState, ReducingState):
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


class HeapAggregatingState(_HeapState, AggregatingState):
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


class HeapMapState(_HeapState, MapState):
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


# -- TTL --------------------------------------------------------------------------------------------
class _Ttl:
    """Shared TTL logic: entries are (value, last_access_ms)."""

    __slots__ = ()

    def _now(self) -> int:
        now = self.backend.clock()  # type: ignore[attr-defined]
        ttl = self.ttl  # type: ignore[attr-defined]
        if ttl.background_cleanup and ttl.incremental_cleanup_size > 0:
            self._cleanup_incrementally(now, ttl.incremental_cleanup_size)
        return now

    def _cleanup_incrementally(self, now: int, budget: int) -> None:
        """Flink's incremental cleanup: every access also checks `budget` entries of the table
        and drops expired ones, so state that is never read again does not live forever."""
        table: StateTable = self.table  # type: ignore[attr-defined]
        queue = table.cleanup_queue
        if table.cleanup_pos >= len(queue):
            queue = table.cleanup_queue = [(ns, k) for ns, m in table.maps.items() for k in m]
            table.cleanup_pos = 0
            if not queue:
                return
        ttl_ms = self.ttl.ttl_ms  # type: ignore[attr-defined]
        kind = table.kind
        end = min(len(queue), table.cleanup_pos + budget)
        current = self.backend.current_key  # type: ignore[attr-defined]
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

    def _expired(self, stamped: tuple[Any, int], now: int) -> bool:
        return now - stamped[1] >= self.ttl.ttl_ms  # type: ignore[attr-defined]

    def _visible(self, stamped: tuple[Any, int] | None, now: int) -> bool:
        if stamped is None:
            return False
        if not self._expired(stamped, now):
            return True
        return self.ttl.state_visibility == StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp  # type: ignore[attr-defined]

    @property
    def _refresh_on_read(self) -> bool:
        return self.ttl.update_type == StateTtlConfig.UpdateType.OnReadAndWrite  # type: ignore[attr-defined]


class TtlValueState(_HeapState, _Ttl, ValueState):
    __slots__ = ("ttl",)

    def __init__(self, backend: HeapKeyedStateBackend, table: StateTable, ttl: StateTtlConfig) -> None:
        super().__init__(backend, table)
        self.ttl = ttl

    def value(self) -> Any:
        k = self.backend.current_key
        stamped = self._map.get(k)
        now = self._now()
        if stamped is None:
            return None
        if (
            self._expired(stamped, now)
            and self.ttl.state_visibility == StateTtlConfig.StateVisibility.NeverReturnExpired
        ):
            del self._map[k]
            return None
        if self._refresh_on_read:
            self._map[k] = (stamped[0], now)
        return stamped[0]

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._map[self.backend.current_key] = (value, self._now())


class TtlListState(_HeapState, _Ttl, ListState):
    __slots__ = ("ttl",)

    def __init__(self, backend: HeapKeyedStateBackend, table: StateTable, ttl: StateTtlConfig) -> None:
        super().__init__(backend, table)
        self.ttl = ttl

    def get(self) -> list[Any]:
        k = self.backend.current_key
        lst = self._map.get(k)
        if not lst:
            return []
        now = self._now()
        kept = [e for e in lst if self._visible(e, now)]
        if self.ttl.state_visibility == StateTtlConfig.StateVisibility.NeverReturnExpired:
            live = [e for e in lst if not self._expired(e, now)]
            if len(live) != len(lst):
                if live:
                    self._map[k] = live
                else:
                    del self._map[k]
        if self._refresh_on_read and kept:
            self._map[k] = [(e[0], now) for e in kept]
        return [e[0] for e in kept]

    def add(self, value: Any) -> None:
        self._map.setdefault(self.backend.current_key, []).append((value, self._now()))

    def add_all(self, values: list[Any]) -> None:
        for v in values:
            self.add(v)

    def update(self, values: list[Any]) -> None:
        if not values:
            self.clear()
        else:
            now = self._now()
            self._map[self.backend.current_key] = [(v, now) for v in values]


class TtlMapState(_HeapState, _Ttl, MapState):
    __slots__ = ("ttl",)

    def __init__(self, backend: HeapKeyedStateBackend, table: StateTable, ttl: StateTtlConfig) -> None:
        super().__init__(backend, table)
        self.ttl = ttl

    def _live(self) -> dict[Any, Any]:
        d = self._map.get(self.backend.current_key)
        if not d:
            return {}
        now = self._now()
        if self.ttl.state_visibility == StateTtlConfig.StateVisibility.NeverReturnExpired:
            for uk in [uk for uk, e in d.items() if self._expired(e, now)]:
                del d[uk]
            if not d:
                self.clear()
                return {}
        if self._refresh_on_read:
            for uk in d:
                d[uk] = (d[uk][0], now)
        return d

    def get(self, key: Any) -> Any:
        e = self._live().get(key)
        return None if e is None else e[0]

    def put(self, key: Any, value: Any) -> None:
        self._map.setdefault(self.backend.current_key, {})[key] = (value, self._now())

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        for k, v in dict_value.items():
            self.put(k, v)

    def remove(self, key: Any) -> None:
        d = self._map.get(self.backend.current_key)
        if d is not None:
            d.pop(key, None)
            if not d:
                self.clear()

    def contains(self, key: Any) -> bool:
        return key in self._live()

    def items(self) -> list[tuple[Any, Any]]:
        return [(k, e[0]) for k, e in self._live().items()]

    def keys(self) -> list[Any]:
        return list(self._live().keys())

    def values(self) -> list[Any]:
        return [e[0] for e in self._live().values()]

    def is_empty(self) -> bool:
        return not self._live()


class TtlReducingState(_HeapState, _Ttl, ReducingState):
    __slots__ = ("ttl", "reduce_fn")

    def __init__(self, backend: HeapKeyedStateBackend, table: StateTable, ttl: StateTtlConfig, reduce_fn: Any) -> None:
        super().__init__(backend, table)
        self.ttl = ttl
        self.reduce_fn = reduce_fn

    def get(self) -> Any:
        k = self.backend.current_key
        stamped = self._map.get(k)
        now = self._now()
        if not self._visible(stamped, now):
            if stamped is not None:
                del self._map[k]
            return None
        if self._refresh_on_read:
            self._map[k] = (stamped[0], now)  # type: ignore[index]
        return stamped[0]  # type: ignore[index]

    def add(self, value: Any) -> None:
        k = self.backend.current_key
        now = self._now()
        stamped = self._map.get(k)
        if stamped is None or self._expired(stamped, now):
            self._map[k] = (value, now)
        else:
            self._map[k] = (self.reduce_fn(stamped[0], value), now)


class TtlAggregatingState(_HeapState, _Ttl, AggregatingState):
    __slots__ = ("ttl", "agg")

    def __init__(self, backend: HeapKeyedStateBackend, table: StateTable, ttl: StateTtlConfig, agg: Any) -> None:
        super().__init__(backend, table)
        self.ttl = ttl
        self.agg = agg

    def get(self) -> Any:
        k = self.backend.current_key
        stamped = self._map.get(k)
        now = self._now()
        if not self._visible(stamped, now):
            if stamped is not None:
                del self._map[k]
            return None
        if self._refresh_on_read:
            self._map[k] = (stamped[0], now)  # type: ignore[index]
        return self.agg.get_result(stamped[0])  # type: ignore[index]

    def add(self, value: Any) -> None:
        k = self.backend.current_key
        now = self._now()
        stamped = self._map.get(k)
        acc = self.agg.create_accumulator() if stamped is None or self._expired(stamped, now) else stamped[0]
        self._map[k] = (self.agg.add(value, acc), now)
