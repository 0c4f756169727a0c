"""A bounded in-memory cache of one RocksDB state's namespaces, written through at every snapshot.

The aligned-window fast path reads and writes a window's panes as a plain dict (`api.InMemoryNamespaces`);
on RocksDB that costs a serialization and a RocksDB call per record otherwise. This cache gives it the
dicts: open windows' panes live in memory, RocksDB holds what was there at the last snapshot.

Exactness: the backend calls `write_through` before every snapshot and before every read that scans
RocksDB (keys, entries, counts), so a snapshot sees every write. The fast path only adds or updates
entries, and drops a whole namespace when its window is cleaned up; a dropped namespace that had been
written through is deleted from RocksDB at once. Bound: `state.backend.rocksdb.namespace-cache.max-entries`;
past it the owner closes the cache (everything written through) and goes on per record through RocksDB.
Values are kept as objects between snapshots, as the heap backend keeps them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocksdict import WriteBatch

from strom.runtime.state.rocksdb import keys as rk
from strom.runtime.state.rocksdb.states import is_immutable

if TYPE_CHECKING:
    from strom.runtime.state.rocksdb.backend import RocksDBKeyedStateBackend, RocksDBTable

_NOTHING = object()


class RocksDBNamespaceCache:
    """namespace -> {key: value} of one state (value, reducing or aggregating kind, no TTL)."""

    def __init__(self, backend: RocksDBKeyedStateBackend, table: RocksDBTable, max_entries: int) -> None:
        self.backend = backend
        self.table = table
        self.max_entries = max_entries
        self.maps: dict[Any, dict[Any, Any]] = {}
        self.written: set[Any] = set()  # namespaces with entries in RocksDB (to delete when dropped)
        # namespace -> {key: the immutable value RocksDB holds}: a write-through skips the entries that are still
        # that very object, so a snapshot writes what changed since the last one, not the whole cache
        self.stored: dict[Any, dict[Any, Any]] = {}
        self.fits = self._load()

    def _load(self) -> bool:
        """What RocksDB already holds of the state (a restore) into the dicts; False, and stop, past the bound
        (the entries stay in RocksDB, where they are already)."""
        b = self.backend
        loaded = 0
        for kg in b.key_group_range:
            prefix = rk.key_group_prefix(kg) + self.table.name_part
            for k, v in b.scan(prefix):
                _, _, ns_raw, key_raw, _ = rk.decode_key(k)
                ns = rk.decode_namespace(ns_raw)
                m = self.maps.get(ns)
                if m is None:
                    m = self.maps[ns] = {}
                key, value = rk.loads(key_raw), rk.loads(v)
                m[key] = value
                if is_immutable(value):
                    self.stored.setdefault(ns, {})[key] = value
                self.written.add(ns)
                loaded += 1
                if loaded > self.max_entries:
                    return False
        return True

    # -- api.InMemoryNamespaces -----------------------------------------------------------------------
    def namespace_map(self, namespace: Any) -> dict[Any, Any]:
        m = self.maps.get(namespace)
        if m is None:
            m = self.maps[namespace] = {}
        return m

    def namespace_maps(self) -> list[tuple[Any, dict[Any, Any]]]:
        return list(self.maps.items())

    # -- api.NamespaceCache ---------------------------------------------------------------------------
    def over_limit(self) -> bool:
        # per batch, not per record: a sum over the open namespaces (a few windows)
        return sum(map(len, self.maps.values())) > self.max_entries

    def close(self) -> None:
        self.write_through()
        self.maps.clear()
        self.written.clear()
        self.stored.clear()
        self.backend.remove_namespace_cache(self)

    # -- the backend's side ---------------------------------------------------------------------------
    def write_through(self) -> None:
        """Put every cached entry that RocksDB does not hold yet into RocksDB (one write batch). An entry is
        skipped only when it is the very immutable object written last time: a value changed in place is
        mutable, so it is written every time."""
        if not self.maps:
            return
        b = self.backend
        b.forget_values(self.table)  # a state object's held writes first: the cache's entries are newer
        key_group = b.key_groups.key_group
        name = self.table.name_part
        dumps, key_part, kg_prefix = rk.dumps, rk.key_part, rk.key_group_prefix
        batch = WriteBatch(raw_mode=True)
        for ns, m in self.maps.items():
            if not m:
                continue
            stored = self.stored.get(ns)
            if stored is None:
                stored = self.stored[ns] = {}
            middle = name + rk.namespace_part(ns)
            for key, value in m.items():
                if stored.get(key, _NOTHING) is value:
                    continue
                batch.put(kg_prefix(key_group(key)) + middle + key_part(key), dumps(value))
                if is_immutable(value):
                    stored[key] = value
                else:
                    stored.pop(key, None)
            self.written.add(ns)
        b.db.write(batch)

    def drop_if_empty(self, namespace: Any) -> None:
        """A cleaned-up window: forget its dict, and its entries in RocksDB if it was written through."""
        self.backend.forget_values(self.table)
        m = self.maps.get(namespace)
        if m is not None and not m:
            del self.maps[namespace]
            self.stored.pop(namespace, None)
        if namespace in self.written and not m:
            self.written.discard(namespace)
            b = self.backend
            middle = self.table.name_part + rk.namespace_part(namespace)
            for kg in b.key_group_range:
                b.delete_prefix(rk.key_group_prefix(kg) + middle)
