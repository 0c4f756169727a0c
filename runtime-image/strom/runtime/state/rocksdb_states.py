"""RocksDB state objects: the user's view of one state for the current key and namespace.

Same semantics as the heap states (`heap_states`), over serialized entries: a read returns a
fresh object, a write stores a copy. A state object builds its RocksDB key from the backend's
encoded current key and its own encoded name and namespace (`rocksdb_keys`). TTL variants
store `(value, last_access_ms)` per entry (per list element, per map entry), as the heap does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocksdict import WriteBatch

from strom.datastream.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    StateTtlConfig,
    ValueState,
)
from strom.runtime.state import rocksdb_keys as rk

if TYPE_CHECKING:
    from strom.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend, RocksDBTable

VOID = None
_dumps, _loads = rk.dumps, rk.loads
# TTL cleanup runs when this many entries are owed: one iterator per batch, not per access
CLEANUP_BATCH = 64


class _RocksDBState:
    __slots__ = ("backend", "table", "namespace", "_middle")

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable) -> None:
        self.backend = backend
        self.table = table
        self.namespace: Any = VOID
        self._middle = table.name_part + rk.namespace_part(VOID)

    def set_current_namespace(self, namespace: Any) -> None:
        if namespace is not self.namespace:
            self.namespace = namespace
            self._middle = self.table.name_part + rk.namespace_part(namespace)

    # hot path: called per state access
    def _key(self) -> bytes:
        b = self.backend
        if b.current_key is not b._cached_key:
            b.refresh_key()
        return b.kg_bytes + self._middle + b.key_bytes

    def _key_in(self, namespace: Any) -> bytes:
        b = self.backend
        if b.current_key is not b._cached_key:
            b.refresh_key()
        return b.kg_bytes + self.table.name_part + rk.namespace_part(namespace) + b.key_bytes

    def clear(self) -> None:
        self.backend.db.delete(self._key())

    # window merging: move the values of several namespaces into the current one
    def _raw_pop(self, namespace: Any) -> Any:
        k = self._key_in(namespace)
        db = self.backend.db
        v = db.get(k)
        if v is None:
            return None
        db.delete(k)
        return _loads(v)


class _Multi(_RocksDBState):
    """A state with several RocksDB entries per key (list elements, map entries)."""

    __slots__ = ()

    def clear(self) -> None:
        self.backend.delete_prefix(self._key())

    def _raw_entries(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        return list(self.backend.scan(prefix))


class RocksDBValueState(_RocksDBState, ValueState):
    __slots__ = ()

    def value(self) -> Any:
        v = self.backend.db.get(self._key())
        return None if v is None else _loads(v)

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self.backend.db.put(self._key(), _dumps(value))


class RocksDBListState(_Multi, ListState):
    __slots__ = ()

    def get(self) -> list[Any]:
        return [_loads(v) for _, v in self.backend.scan(self._key())]

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError(f"list state {self.table.name!r}: cannot add None")
        self.backend.db.put(self._key() + self.backend.take_seq(), _dumps(value))

    def add_all(self, values: list[Any]) -> None:
        for v in values:
            if v is None:
                raise ValueError(f"list state {self.table.name!r}: cannot add None")
        self._put_all(self._key(), values)

    def _put_all(self, base: bytes, values: list[Any]) -> None:
        if not values:
            return
        batch = WriteBatch(raw_mode=True)
        take = self.backend.take_seq
        for v in values:
            batch.put(base + take(), _dumps(v))
        self.backend.db.write(batch)

    def update(self, values: list[Any]) -> None:
        self.clear()
        if values:
            self.add_all(list(values))

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        merged: list[bytes] = []
        db = self.backend.db
        for ns in sources:
            for k, v in self._raw_entries(self._key_in(ns)):
                db.delete(k)
                merged.append(v)
        if merged:
            base = self._key_in(target)
            batch = WriteBatch(raw_mode=True)
            for v in merged:
                batch.put(base + self.backend.take_seq(), v)
            db.write(batch)


class RocksDBReducingState(_RocksDBState, ReducingState):
    __slots__ = ("reduce_fn",)

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, reduce_fn: Any) -> None:
        super().__init__(backend, table)
        self.reduce_fn = reduce_fn

    def get(self) -> Any:
        v = self.backend.db.get(self._key())
        return None if v is None else _loads(v)

    def add(self, value: Any) -> None:
        k = self._key()
        db = self.backend.db
        cur = db.get(k)
        db.put(k, _dumps(value if cur is None else self.reduce_fn(_loads(cur), value)))

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        acc = None
        for ns in sources:
            v = self._raw_pop(ns)
            if v is not None:
                acc = v if acc is None else self.reduce_fn(acc, v)
        if acc is not None:
            k = self._key_in(target)
            db = self.backend.db
            cur = db.get(k)
            db.put(k, _dumps(acc if cur is None else self.reduce_fn(_loads(cur), acc)))


class RocksDBAggregatingState(_RocksDBState, AggregatingState):
    __slots__ = ("agg",)

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, agg: Any) -> None:
        super().__init__(backend, table)
        self.agg = agg

    def get(self) -> Any:
        v = self.backend.db.get(self._key())
        return None if v is None else self.agg.get_result(_loads(v))

    def get_accumulator(self) -> Any:
        v = self.backend.db.get(self._key())
        return None if v is None else _loads(v)

    def add(self, value: Any) -> None:
        k = self._key()
        db = self.backend.db
        cur = db.get(k)
        acc = self.agg.create_accumulator() if cur is None else _loads(cur)
        db.put(k, _dumps(self.agg.add(value, acc)))

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        acc = None
        found = False
        for ns in sources:
            k = self._key_in(ns)
            raw = self.backend.db.get(k)
            if raw is None:
                continue
            self.backend.db.delete(k)
            v = _loads(raw)
            acc = v if not found else self.agg.merge(acc, v)
            found = True
        if found:
            k = self._key_in(target)
            db = self.backend.db
            cur = db.get(k)
            db.put(k, _dumps(acc if cur is None else self.agg.merge(_loads(cur), acc)))


class RocksDBMapState(_Multi, MapState):
    __slots__ = ()

    def get(self, key: Any) -> Any:
        v = self.backend.db.get(self._key() + _dumps(key))
        return None if v is None else _loads(v)

    def put(self, key: Any, value: Any) -> None:
        self.backend.db.put(self._key() + _dumps(key), _dumps(value))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        if not dict_value:
            return
        base = self._key()
        batch = WriteBatch(raw_mode=True)
        for k, v in dict_value.items():
            batch.put(base + _dumps(k), _dumps(v))
        self.backend.db.write(batch)

    def remove(self, key: Any) -> None:
        self.backend.db.delete(self._key() + _dumps(key))

    def contains(self, key: Any) -> bool:
        return self.backend.db.get(self._key() + _dumps(key)) is not None

    def _decoded(self) -> list[tuple[Any, bytes]]:
        base = self._key()
        n = len(base)
        return [(_loads(k[n:]), v) for k, v in self.backend.scan(base)]

    def items(self) -> list[tuple[Any, Any]]:
        return [(k, _loads(v)) for k, v in self._decoded()]

    def keys(self) -> list[Any]:
        base = self._key()
        n = len(base)
        return [_loads(k[n:]) for k, _ in self.backend.scan(base)]

    def values(self) -> list[Any]:
        return [_loads(v) for _, v in self.backend.scan(self._key())]

    def is_empty(self) -> bool:
        for _ in self.backend.scan(self._key()):
            return False
        return True


# -- TTL --------------------------------------------------------------------------------------------
class _Ttl:
    """Shared TTL logic: every stored entry is (value, last_access_ms)."""

    __slots__ = ()

    def _now(self) -> int:
        backend = self.backend  # type: ignore[attr-defined]
        now = backend.clock()
        ttl = self.ttl  # type: ignore[attr-defined]
        if ttl.background_cleanup and ttl.incremental_cleanup_size > 0:
            table = self.table  # type: ignore[attr-defined]
            table.cleanup_pending += ttl.incremental_cleanup_size
            if table.cleanup_pending >= CLEANUP_BATCH:
                budget, table.cleanup_pending = table.cleanup_pending, 0
                backend.ttl_cleanup(table, budget, now, ttl.ttl_ms)
        return now

    def _expired(self, stamped: tuple[Any, int], now: int) -> bool:
        return now - stamped[1] >= self.ttl.ttl_ms  # type: ignore[attr-defined]

    def _visible(self, stamped: tuple[Any, int] | None, now: int) -> bool:
        if stamped is None:
            return False
        if not self._expired(stamped, now):
            return True
        return self.ttl.state_visibility == StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp  # type: ignore[attr-defined]

    @property
    def _never_expired(self) -> bool:
        return self.ttl.state_visibility == StateTtlConfig.StateVisibility.NeverReturnExpired  # type: ignore[attr-defined]

    @property
    def _refresh_on_read(self) -> bool:
        return self.ttl.update_type == StateTtlConfig.UpdateType.OnReadAndWrite  # type: ignore[attr-defined]


class TtlValueState(_RocksDBState, _Ttl, ValueState):
    __slots__ = ("ttl",)

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, ttl: StateTtlConfig) -> None:
        super().__init__(backend, table)
        self.ttl = ttl

    def value(self) -> Any:
        k = self._key()
        db = self.backend.db
        raw = db.get(k)
        now = self._now()
        if raw is None:
            return None
        stamped = _loads(raw)
        if self._expired(stamped, now) and self._never_expired:
            db.delete(k)
            return None
        if self._refresh_on_read:
            db.put(k, _dumps((stamped[0], now)))
        return stamped[0]

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self.backend.db.put(self._key(), _dumps((value, self._now())))


class TtlListState(_Multi, _Ttl, ListState):
    __slots__ = ("ttl",)

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, ttl: StateTtlConfig) -> None:
        super().__init__(backend, table)
        self.ttl = ttl

    def get(self) -> list[Any]:
        entries = [(k, _loads(v)) for k, v in self.backend.scan(self._key())]
        if not entries:
            return []
        now = self._now()
        db = self.backend.db
        kept = [(k, e) for k, e in entries if self._visible(e, now)]
        if self._never_expired:
            for k, e in entries:
                if self._expired(e, now):
                    db.delete(k)
        if self._refresh_on_read:
            for k, e in kept:
                db.put(k, _dumps((e[0], now)))
        return [e[0] for _, e in kept]

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError(f"list state {self.table.name!r}: cannot add None")
        now = self._now()
        self.backend.db.put(self._key() + self.backend.take_seq(), _dumps((value, now)))

    def add_all(self, values: list[Any]) -> None:
        for v in values:
            self.add(v)

    def update(self, values: list[Any]) -> None:
        self.clear()
        if values:
            now = self._now()
            base = self._key()
            batch = WriteBatch(raw_mode=True)
            for v in values:
                batch.put(base + self.backend.take_seq(), _dumps((v, now)))
            self.backend.db.write(batch)


class TtlMapState(_Multi, _Ttl, MapState):
    __slots__ = ("ttl",)

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, ttl: StateTtlConfig) -> None:
        super().__init__(backend, table)
        self.ttl = ttl

    def _live(self) -> list[tuple[Any, Any]]:
        """(user key, value) of the visible entries, dropping or refreshing entries as configured."""
        base = self._key()
        n = len(base)
        entries = [(k, _loads(v)) for k, v in self.backend.scan(base)]
        if not entries:
            return []
        now = self._now()
        db = self.backend.db
        out = []
        for k, e in entries:
            if self._expired(e, now) and self._never_expired:
                db.delete(k)
                continue
            if self._refresh_on_read:
                db.put(k, _dumps((e[0], now)))
            out.append((_loads(k[n:]), e[0]))
        return out

    def get(self, key: Any) -> Any:
        for k, v in self._live():
            if k == key:
                return v
        return None

    def put(self, key: Any, value: Any) -> None:
        now = self._now()
        self.backend.db.put(self._key() + _dumps(key), _dumps((value, now)))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        for k, v in dict_value.items():
            self.put(k, v)

    def remove(self, key: Any) -> None:
        self.backend.db.delete(self._key() + _dumps(key))

    def contains(self, key: Any) -> bool:
        return any(k == key for k, _ in self._live())

    def items(self) -> list[tuple[Any, Any]]:
        return self._live()

    def keys(self) -> list[Any]:
        return [k for k, _ in self._live()]

    def values(self) -> list[Any]:
        return [v for _, v in self._live()]

    def is_empty(self) -> bool:
        return not self._live()


class _TtlSingle(_RocksDBState, _Ttl):
    """One stamped value per key: reducing and aggregating state."""

    __slots__ = ("ttl",)

    def _stamped_result(self) -> tuple[bytes, Any]:
        """(RocksDB key, the visible stored value or None), refreshing or dropping it as configured."""
        k = self._key()
        db = self.backend.db
        raw = db.get(k)
        now = self._now()
        stamped = None if raw is None else _loads(raw)
        if not self._visible(stamped, now):
            if stamped is not None:
                db.delete(k)
            return k, None
        if self._refresh_on_read:
            db.put(k, _dumps((stamped[0], now)))  # type: ignore[index]
        return k, stamped[0]  # type: ignore[index]


class TtlReducingState(_TtlSingle, ReducingState):
    __slots__ = ("reduce_fn",)

    def __init__(
        self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, ttl: StateTtlConfig, reduce_fn: Any
    ) -> None:
        super().__init__(backend, table)
        self.ttl = ttl
        self.reduce_fn = reduce_fn

    def get(self) -> Any:
        return self._stamped_result()[1]

    def add(self, value: Any) -> None:
        k = self._key()
        db = self.backend.db
        now = self._now()
        raw = db.get(k)
        stamped = None if raw is None else _loads(raw)
        if stamped is None or self._expired(stamped, now):
            db.put(k, _dumps((value, now)))
        else:
            db.put(k, _dumps((self.reduce_fn(stamped[0], value), now)))


class TtlAggregatingState(_TtlSingle, AggregatingState):
    __slots__ = ("agg",)

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, ttl: StateTtlConfig, agg: Any) -> None:
        super().__init__(backend, table)
        self.ttl = ttl
        self.agg = agg

    def get(self) -> Any:
        acc = self._stamped_result()[1]
        return None if acc is None else self.agg.get_result(acc)

    def add(self, value: Any) -> None:
        k = self._key()
        db = self.backend.db
        now = self._now()
        raw = db.get(k)
        stamped = None if raw is None else _loads(raw)
        acc = self.agg.create_accumulator() if stamped is None or self._expired(stamped, now) else stamped[0]
        db.put(k, _dumps((self.agg.add(value, acc), now)))
