"""State time-to-live: one layer over any backend's states (Flink's TtlStateFactory and Ttl*State).

A TTL state wraps a state of the same backend that stores every entry stamped as
`(value, last_access_ms)`: a value, each list element, each map entry, a reducing or aggregating
state's accumulator (kept by a value state of the same table). The wrapper decides, by the
backend's clock and the `StateTtlConfig`, what is visible (`NeverReturnExpired` drops an expired
entry on the read that finds it, `ReturnExpiredIfNotCleanedUp` still returns it), when a read
refreshes the stamp (`OnReadAndWrite`), and asks the backend for incremental cleanup
(`ttl_cleanup_on_access`), the one part that depends on how a backend stores entries.
"""

from __future__ import annotations

from typing import Any

from strom.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)


class _TtlState:
    """Shared by the TTL states: the wrapped state, the stamping clock and the configuration."""

    __slots__ = ("backend", "table", "inner", "ttl", "ttl_ms", "never_expired", "refresh_on_read", "cleanup")

    def __init__(self, backend: Any, table: Any, inner: Any, ttl: StateTtlConfig) -> None:
        self.backend = backend
        self.table = table
        self.inner = inner  # the backend's state over stamped entries
        self.ttl = ttl
        self.ttl_ms = ttl.ttl_ms
        self.never_expired = ttl.state_visibility == StateTtlConfig.StateVisibility.NeverReturnExpired
        self.refresh_on_read = ttl.update_type == StateTtlConfig.UpdateType.OnReadAndWrite
        self.cleanup = ttl.background_cleanup and ttl.incremental_cleanup_size > 0

    @property
    def namespace(self) -> Any:
        return self.inner.namespace

    def set_current_namespace(self, namespace: Any) -> None:
        self.inner.set_current_namespace(namespace)

    def clear(self) -> None:
        self.inner.clear()

    def _now(self) -> int:
        """The access time; also where incremental cleanup runs, as in Flink (on state access)."""
        now: int = self.backend.clock()
        if self.cleanup:
            self.backend.ttl_cleanup_on_access(self.table, self.ttl, now)
        return now

    def _single(self) -> tuple[Any, int] | None:
        """A single-valued state's visible stamped entry, dropped or refreshed as configured."""
        inner = self.inner
        stamped = inner.value()
        now = self._now()
        if stamped is None:
            return None
        if self.never_expired and now - stamped[1] >= self.ttl_ms:
            inner.clear()
            return None
        if self.refresh_on_read:
            inner.update((stamped[0], now))
        return stamped  # type: ignore[no-any-return]


class TtlValueState(_TtlState, ValueState[Any]):
    __slots__ = ()

    def value(self) -> Any:
        stamped = self._single()
        return None if stamped is None else stamped[0]

    def update(self, value: Any) -> None:
        if value is None:
            self.inner.clear()
        else:
            self.inner.update((value, self._now()))


class TtlReducingState(_TtlState, ReducingState[Any]):
    __slots__ = ("reduce_fn",)

    def __init__(self, backend: Any, table: Any, inner: Any, ttl: StateTtlConfig, reduce_fn: Any) -> None:
        super().__init__(backend, table, inner, ttl)
        self.reduce_fn = reduce_fn

    def get(self) -> Any:
        stamped = self._single()
        return None if stamped is None else stamped[0]

    def add(self, value: Any) -> None:
        now = self._now()
        stamped = self.inner.value()
        if stamped is None or now - stamped[1] >= self.ttl_ms:
            self.inner.update((value, now))
        else:
            self.inner.update((self.reduce_fn(stamped[0], value), now))


class TtlAggregatingState(_TtlState, AggregatingState[Any, Any]):
    __slots__ = ("agg",)

    def __init__(self, backend: Any, table: Any, inner: Any, ttl: StateTtlConfig, agg: Any) -> None:
        super().__init__(backend, table, inner, ttl)
        self.agg = agg

    def get(self) -> Any:
        stamped = self._single()
        return None if stamped is None else self.agg.get_result(stamped[0])

    def add(self, value: Any) -> None:
        now = self._now()
        stamped = self.inner.value()
        expired = stamped is None or now - stamped[1] >= self.ttl_ms
        acc = self.agg.create_accumulator() if expired else stamped[0]
        self.inner.update((self.agg.add(value, acc), now))


class TtlListState(_TtlState, ListState[Any]):
    __slots__ = ()

    def get(self) -> list[Any]:
        inner = self.inner
        stamped = inner.get()
        if not stamped:
            return []
        now = self._now()
        kept = stamped
        if self.never_expired:
            ttl_ms = self.ttl_ms
            kept = [e for e in stamped if now - e[1] < ttl_ms]
        if self.refresh_on_read and kept:
            inner.update([(e[0], now) for e in kept])
        elif len(kept) != len(stamped):
            inner.update(kept)  # drops the expired elements (all of them: clears)
        return [e[0] for e in kept]

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError(f"list state {self.table.name!r}: cannot add None")
        self.inner.add((value, self._now()))

    def add_all(self, values: list[Any]) -> None:
        for v in values:
            self.add(v)

    def update(self, values: list[Any]) -> None:
        if not values:
            self.inner.clear()
        else:
            now = self._now()
            self.inner.update([(v, now) for v in values])


class TtlMapState(_TtlState, MapState[Any, Any]):
    __slots__ = ()

    def _live(self) -> list[tuple[Any, Any]]:
        """(user key, value) of the visible entries, dropping or refreshing entries as configured."""
        inner = self.inner
        entries = inner.items()
        if not entries:
            return []
        now = self._now()
        if self.never_expired:
            ttl_ms = self.ttl_ms
            live = [(uk, e) for uk, e in entries if now - e[1] < ttl_ms]
            for uk, e in entries:
                if now - e[1] >= ttl_ms:
                    inner.remove(uk)
        else:
            live = entries
        if self.refresh_on_read and live:
            inner.put_all({uk: (e[0], now) for uk, e in live})
        return [(uk, e[0]) for uk, e in live]

    def get(self, key: Any) -> Any:
        for uk, v in self._live():
            if uk == key:
                return v
        return None

    def put(self, key: Any, value: Any) -> None:
        self.inner.put(key, (value, self._now()))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        for k, v in dict_value.items():
            self.put(k, v)

    def remove(self, key: Any) -> None:
        self.inner.remove(key)

    def contains(self, key: Any) -> bool:
        return any(uk == key for uk, _ in self._live())

    def items(self) -> list[tuple[Any, Any]]:
        return self._live()

    def keys(self) -> list[Any]:
        return [uk for uk, _ in self._live()]

    def values(self) -> list[Any]:
        return [v for _, v in self._live()]

    def is_empty(self) -> bool:
        return not self._live()


def ttl_state(descriptor: StateDescriptor, backend: Any, table: Any, inner: Any, ttl: StateTtlConfig) -> Any:
    """The TTL state for `descriptor` over `inner`, a state of the backend over stamped entries
    (a value state for reducing and aggregating descriptors)."""
    if isinstance(descriptor, ValueStateDescriptor):
        return TtlValueState(backend, table, inner, ttl)
    if isinstance(descriptor, ListStateDescriptor):
        return TtlListState(backend, table, inner, ttl)
    if isinstance(descriptor, MapStateDescriptor):
        return TtlMapState(backend, table, inner, ttl)
    if isinstance(descriptor, ReducingStateDescriptor):
        return TtlReducingState(backend, table, inner, ttl, descriptor.reduce_function.reduce)
    if isinstance(descriptor, AggregatingStateDescriptor):
        return TtlAggregatingState(backend, table, inner, ttl, descriptor.agg_function)
    raise TypeError(f"no TTL state for descriptor {descriptor!r}")
