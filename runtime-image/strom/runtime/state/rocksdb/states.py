"""RocksDB state objects: the user's view of one state for the current key and namespace.

Same semantics as the heap states (`heap.states`), over serialized entries: a read returns a
fresh object, a write stores a copy. A state object builds its RocksDB key from the backend's
encoded current key and its own encoded name and namespace (`rocksdb.keys`). TTL states are
the `ttl` layer over these: they store `(value, last_access_ms)` per entry (per list element,
per map entry), as the heap does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocksdict import WriteBatch

from strom.datastream.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)
from strom.datastream.windowing.windows import TimeWindow
from strom.runtime.state.api import VOID, NamespaceCache
from strom.runtime.state.rocksdb import keys as rk

if TYPE_CHECKING:
    from strom.runtime.state.rocksdb.backend import RocksDBKeyedStateBackend, RocksDBTable

_dumps, _loads = rk.dumps, rk.loads

# Value-state cache: a value state reads the same key's value again and again (q4 reads an auction per bid:
# 35% of its CPU went to RocksDB gets and unpickling) and often rewrites it before any snapshot. The table keeps,
# per RocksDB key, the object last written or read (None: no value) if immutable: returning the cached object is
# then the same as returning a fresh copy, as RocksDB reads must; a mutable value is kept as a copy that a shallow
# copy copies in full (`Flat`: a list of tuples), else as its pickle (`Pickled`), and every read copies it. Writes
# stay in the cache (`table.dirty`) until the backend writes them through: before every snapshot and every read
# that scans RocksDB (`backend.write_through_caches`), before another writer of the table's keys (restore, TTL
# cleanup, a namespace cache: `backend.forget_values`), and when the cache passes its bound: as many entries as the
# state's share of `state.backend.rocksdb.value-cache.size` holds by their measured size (`value_cache_size`).
_SCALARS = frozenset({int, float, str, bytes, bool, type(None), complex})
_immutable_tuple_types: dict[type, bool] = {tuple: True, TimeWindow: True}  # TimeWindow: a tuple, no attributes


class Pickled:
    """A mutable value in the value cache, as its pickle: each read unpickles a fresh copy (RocksDB's semantics: a
    change to the object read is not stored until update()), and neither a read nor a write asks RocksDB (q19 keeps a
    list per auction, read per bid: a get, a put and their pickling were half its samples). Written through as is."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Flat:
    """A list, set or dict of immutable objects in the value cache, as a copy: a shallow copy of it is a full copy
    (q19 keeps 10 (price, time, Bid) per auction, read per bid: unpickling them cost as much as the get)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj


_FLAT_TYPES = (list, set, frozenset, dict)


def _held(value: Any, raw: bytes | None, old: Any = None) -> Flat | Pickled:
    """How the value cache holds a mutable value: a copy that a shallow copy copies in full, else its pickle
    (`raw`, when read from RocksDB). An element of `old` (the key's cached value), the same object, is known
    immutable: old keeps it alive, so no other object has its id (q19 changes one of 10 elements per update)."""
    t = type(value)
    if t is dict:
        if all(map(is_immutable, value)) and all(map(is_immutable, value.values())):
            return Flat(value.copy())
    elif t in _FLAT_TYPES:
        items = value
        if type(old) is Flat:
            known = set(map(id, old.obj))
            items = [x for x in value if id(x) not in known]
        if all(map(is_immutable, items)):
            return Flat(value.copy())
    return Pickled(_dumps(value) if raw is None else raw)


def is_immutable(value: Any) -> bool:
    """int/float/str/bytes/bool/None, or a tuple or NamedTuple (no instance attributes) of such, nested."""
    t = type(value)
    if t in _SCALARS:
        return True
    plain = _immutable_tuple_types.get(t)
    if plain is None:
        # a NamedTuple: a direct tuple subclass with `_fields` and empty __slots__ (no attribute can change)
        plain = _immutable_tuple_types[t] = (
            t.__bases__ == (tuple,) and hasattr(t, "_fields") and t.__dict__.get("__slots__", None) == ()
        )
    if not plain:
        return False
    for x in value:
        if type(x) not in _SCALARS and not is_immutable(x):
            return False
    return True


def _same_window(a: Any, b: Any) -> bool:
    """Two TimeWindows that encode to the same bytes: equal, with bounds of the same types (0 and 0.0 are equal
    but pickle differently)."""
    return (
        type(a) is TimeWindow
        and type(b) is TimeWindow
        and a == b
        and type(a[0]) is type(b[0])
        and type(a[1]) is type(b[1])
    )


class _RocksDBState:
    __slots__ = ("backend", "table", "namespace", "_middle")

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable) -> None:
        self.backend = backend
        self.table = table
        self.namespace: Any = VOID
        self._middle = table.name_part + rk.namespace_part(VOID)

    # hot path: called per record by window operators, with a new but mostly equal window object each time
    def set_current_namespace(self, namespace: Any) -> None:
        current = self.namespace
        if namespace is not current:
            self.namespace = namespace
            if not _same_window(namespace, current):
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
        self._delete(self._key())

    # single-entry kinds (value, reducing, aggregating) read and write through the table's value cache
    def _read(self, k: bytes) -> Any:
        """The object stored under `k`, or None."""
        table = self.table
        v = table.values.get(k, _MISSING)
        if v is not _MISSING:
            t = type(v)
            if t is Flat:
                return v.obj.copy()
            return _loads(v.data) if t is Pickled else v
        if table.complete:
            return None
        raw = self.backend.db.get(k)
        if raw is None:
            _remember(self.backend, table, k, None)  # absent: the next read of this key asks RocksDB no more
            return None
        v = _loads(raw)
        _remember(self.backend, table, k, v if is_immutable(v) else _held(v, raw))
        return v

    def _write(self, k: bytes, value: Any) -> None:
        table = self.table
        _remember(self.backend, table, k, value if is_immutable(value) else _held(value, None, table.values.get(k)))
        table.dirty.add(k)

    def _delete(self, k: bytes) -> None:
        _remember(self.backend, self.table, k, None)
        self.table.dirty.add(k)

    def open_namespace_cache(self, *, fetches: bool = False) -> NamespaceCache | None:
        """api.CachingNamespaces: a bounded in-memory cache of this state's namespaces (see namespace_cache)."""
        return self.backend.open_namespace_cache(self.table, fetches=fetches)

    # window merging: move the values of several namespaces into the current one
    def _raw_pop(self, namespace: Any) -> Any:
        k = self._key_in(namespace)
        v = self._read(k)
        if v is not None:
            self._delete(k)
        return v


class _Multi(_RocksDBState):
    """A state with several RocksDB entries per key (list elements, map entries)."""

    __slots__ = ()

    def clear(self) -> None:
        self.backend.delete_prefix(self._key())

    def _raw_entries(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        return list(self.backend.scan(prefix))


class RocksDBValueState(_RocksDBState, ValueState[Any]):
    __slots__ = ()

    def value(self) -> Any:
        return self._read(self._key())

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._write(self._key(), value)


_MISSING = object()


def _remember(backend: RocksDBKeyedStateBackend, table: RocksDBTable, k: bytes, v: Any) -> None:
    values = table.values
    if len(values) >= table.bound and k not in values and not backend.value_cache_may_grow(table):
        backend.write_values(table)
        values.clear()
        table.complete = False
    values[k] = v


# List appends are written behind, as value writes are: an immutable element waits in the table's value cache
# under its final RocksDB key (the list's key + a sequence number taken at the append, so the order is kept whatever
# is written when) and is marked dirty; the backend writes every dirty entry of the table through in one write batch
# before a snapshot or a scanning read (`backend.write_values`), and the list state itself past LIST_PENDING_MAX.
# A window pane that fires and is cleared before then (q8: most of them) never reaches RocksDB: no pickling, no put,
# no scan. `_ListIndex` finds a list's pending elements, and knows which lists may have elements in RocksDB.
LIST_PENDING_MAX = 50_000  # pending list elements per table
LIST_ON_DISK_MAX = 200_000  # lists remembered as having elements in RocksDB; past it, every read scans
_INDEX = b""  # the index's place in the table's value cache: never a RocksDB key (every key starts with its key group)


class _ListIndex:
    """A list table's pending appends (list key -> element keys, in order) and, when `known`, the list keys that
    may have elements in RocksDB (`on_disk`); a list key outside it has none there, so reading or clearing it needs
    no scan. Kept in the table's value cache under `_INDEX`: the backend drops the cache (`forget_values`) before it
    writes RocksDB itself (restore, TTL cleanup), and the index goes with it; a new one starts not `known`."""

    __slots__ = ("pending", "count", "known", "on_disk")

    def __init__(self, known: bool) -> None:
        self.pending: dict[bytes, list[bytes]] = {}
        self.count = 0  # elements in `pending`: all of them are in the table's dirty set until it is written through
        self.known = known
        self.on_disk: set[bytes] = set()

    def written_through(self, values: dict[bytes, Any]) -> None:
        """The backend wrote the table's dirty entries to RocksDB: every pending list now has elements there."""
        for eks in self.pending.values():
            for ek in eks:
                values.pop(ek, None)
        if self.known:
            self.on_disk.update(self.pending)
            self._bound()
        self.pending.clear()
        self.count = 0

    def written(self, k: bytes) -> None:
        """An element of list `k` went to RocksDB at once."""
        if self.known:
            self.on_disk.add(k)
            self._bound()

    def _bound(self) -> None:
        if len(self.on_disk) > LIST_ON_DISK_MAX:
            self.known = False  # from now on every read and clear of this table scans RocksDB
            self.on_disk.clear()

    def may_be_on_disk(self, k: bytes) -> bool:
        return not self.known or k in self.on_disk


def _entry_key(entry: tuple[bytes, Any]) -> bytes:
    return entry[0]


def _table_is_empty(backend: RocksDBKeyedStateBackend, table: RocksDBTable) -> bool:
    """True when RocksDB holds no entry of `table` in this subtask's key groups (one bounded seek per key group)."""
    name = table.name_part
    for kg in backend.key_group_range:
        for _ in backend.scan(rk.key_group_prefix(kg) + name):
            return False
    return True


class RocksDBListState(_Multi, ListState[Any]):
    __slots__ = ()

    def _index(self) -> _ListIndex:
        table = self.table
        index = table.values.get(_INDEX)
        if index is None:
            index = _ListIndex(known=not table.ttl and _table_is_empty(self.backend, table))
            table.values[_INDEX] = index
        elif index.count != len(table.dirty):  # the backend wrote the table through (only our appends are dirty)
            index.written_through(table.values)
        return index

    def get(self) -> list[Any]:
        k = self._key()
        index = self._index()
        disk = list(self.backend.scan(k)) if index.may_be_on_disk(k) else []
        eks = index.pending.get(k)
        if not eks:
            return [_loads(v) for _, v in disk]
        values = self.table.values
        if disk and disk[-1][0] > eks[0]:
            # a mutable element went to RocksDB after a pending one: the sequence numbers give the order
            entries = sorted([*disk, *((ek, None) for ek in eks)], key=_entry_key)
            return [_loads(v) if v is not None else values[ek] for ek, v in entries]
        # immutable pending elements: the object is as good as a fresh copy
        return [_loads(v) for _, v in disk] + [values[ek] for ek in eks]

    # hot path: called per record (window panes)
    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError(f"list state {self.table.name!r}: cannot add None")
        k = self._key()
        index = self._index()
        ek = k + self.backend.take_seq()
        if not is_immutable(value):
            self.backend.db.put(ek, _dumps(value))  # a copy now: the caller may change the object later
            index.written(k)
            return
        table = self.table
        table.values[ek] = value
        table.dirty.add(ek)
        eks = index.pending.get(k)
        if eks is None:
            index.pending[k] = [ek]
        else:
            eks.append(ek)
        index.count += 1
        if index.count >= LIST_PENDING_MAX:
            self.backend.write_values(table)
            index.written_through(table.values)

    def add_all(self, values: list[Any]) -> None:
        for v in values:
            if v is None:
                raise ValueError(f"list state {self.table.name!r}: cannot add None")
        for v in values:
            self.add(v)

    def clear(self) -> None:
        k = self._key()
        index = self._index()
        eks = index.pending.pop(k, None)
        if eks:
            table = self.table
            values, dirty = table.values, table.dirty
            for ek in eks:
                del values[ek]
                dirty.discard(ek)
            index.count -= len(eks)
        if index.may_be_on_disk(k):
            self.backend.delete_prefix(k)
            index.on_disk.discard(k)

    def update(self, values: list[Any]) -> None:
        values = list(values)
        for v in values:
            if v is None:
                raise ValueError(f"list state {self.table.name!r}: cannot add None")
        self.clear()
        for v in values:
            self.add(v)

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        self.backend.write_values(self.table)  # every pending element into RocksDB first: the merge moves entries
        index = self._index()
        merged: list[bytes] = []
        db = self.backend.db
        for ns in sources:
            source = self._key_in(ns)
            for k, v in self._raw_entries(source):
                db.delete(k)
                merged.append(v)
            index.on_disk.discard(source)
        if merged:
            base = self._key_in(target)
            batch = WriteBatch(raw_mode=True)
            for v in merged:
                batch.put(base + self.backend.take_seq(), v)
            db.write(batch)
            index.written(base)


class RocksDBReducingState(_RocksDBState, ReducingState[Any]):
    __slots__ = ("reduce_fn",)

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, reduce_fn: Any) -> None:
        super().__init__(backend, table)
        self.reduce_fn = reduce_fn

    def get(self) -> Any:
        return self._read(self._key())

    def add(self, value: Any) -> None:
        k = self._key()
        cur = self._read(k)
        self._write(k, value if cur is None else self.reduce_fn(cur, value))

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        acc = None
        for ns in sources:
            v = self._raw_pop(ns)
            if v is not None:
                acc = v if acc is None else self.reduce_fn(acc, v)
        if acc is not None:
            k = self._key_in(target)
            cur = self._read(k)
            self._write(k, acc if cur is None else self.reduce_fn(cur, acc))


class RocksDBAggregatingState(_RocksDBState, AggregatingState[Any, Any]):
    __slots__ = ("agg",)

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, agg: Any) -> None:
        super().__init__(backend, table)
        self.agg = agg

    def get(self) -> Any:
        v = self._read(self._key())
        return None if v is None else self.agg.get_result(v)

    def get_accumulator(self) -> Any:
        return self._read(self._key())

    def add(self, value: Any) -> None:
        k = self._key()
        cur = self._read(k)
        self._write(k, self.agg.add(value, self.agg.create_accumulator() if cur is None else cur))

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        acc = None
        found = False
        for ns in sources:
            v = self._raw_pop(ns)
            if v is None:
                continue
            acc = v if not found else self.agg.merge(acc, v)
            found = True
        if found:
            k = self._key_in(target)
            cur = self._read(k)
            self._write(k, acc if cur is None else self.agg.merge(cur, acc))


class RocksDBMapState(_Multi, MapState[Any, Any]):
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
