"""The RocksDB keyed state backend: all keyed state of one operator subtask in an embedded RocksDB.

State lives on local disk (`state.backend.rocksdb.localdir`, default a temporary directory per
subtask, removed on close), so it may be larger than memory. Values are serialized on every
write and deserialized on every read, as in Flink's RocksDB backend: a value a user mutates
after reading it is not stored until written back. The byte layout is in `rocksdb.keys`.

Timers stay in the heap (`InternalTimerService`), as Flink allows with
`state.backend.rocksdb.timer-service.factory: HEAP`; they are snapshotted with the state.

The write-ahead log is off: a checkpoint, not the WAL, is what state is recovered from.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from rocksdict import Rdict, ReadOptions, WriteBatch

from strom.common.key_groups import KeyGroupRange, int_str_tuple_hash
from strom.datastream.state import StateTtlConfig
from strom.runtime.state import api
from strom.runtime.state.abstract_backend import AbstractKeyedStateBackend
from strom.runtime.state.api import Entry, Timer, TimerRegistry, wall_clock_ms
from strom.runtime.state.rocksdb import canonical
from strom.runtime.state.rocksdb import keys as rk
from strom.runtime.state.rocksdb import snapshots as rocksdb_snapshots
from strom.runtime.state.rocksdb import states as rs
from strom.runtime.state.rocksdb.db import open_db
from strom.runtime.state.rocksdb.namespace_cache import RocksDBNamespaceCache
from strom.runtime.state.rocksdb.options import VALUE_CACHE_SIZE, RocksDBTuning
from strom.runtime.state.rocksdb.value_cache_size import initial_bound, measured_bound

DB_DIR = "db"
# TTL cleanup runs when this many entries are owed: one iterator per batch, not per access
CLEANUP_BATCH = 64
ENCODED_KEYS_MAX = 100_000  # remembered key encodings per subtask (a few hundred bytes each at most)
_VALUE_CACHE_KINDS = ("value", "reducing", "aggregating")  # the kinds that read and write through the value cache
_STATE_CLASSES = {
    "value": rs.RocksDBValueState,
    "list": rs.RocksDBListState,
    "map": rs.RocksDBMapState,
    "reducing": rs.RocksDBReducingState,
    "aggregating": rs.RocksDBAggregatingState,
}


class RocksDBTable:
    """What the backend knows of one state: its kind and TTL flag, and its TTL cleanup position.

    Named like the heap's StateTable because operators treat both alike (`table.kind`,
    `drop_namespace_if_empty`); the entries themselves are in RocksDB."""

    __slots__ = (
        "name", "kind", "ttl", "name_part", "cleanup_cursor", "cleanup_pending", "cache", "values", "dirty", "complete",
        "bound",
    )

    def __init__(self, name: str, kind: str, ttl: bool = False, complete: bool = False, bound: int = 100_000) -> None:
        self.name = name
        self.kind = kind
        self.ttl = ttl
        self.name_part = rk.name_part(name)
        self.cleanup_cursor: bytes | None = None  # the next RocksDB key the TTL cleanup looks at
        self.cleanup_pending = 0  # entries the TTL cleanup owes (it runs in batches)
        self.cache: RocksDBNamespaceCache | None = None  # namespaces kept in memory (see namespace_cache)
        # value state: RocksDB key -> the object last written or read there (None: no value; rs.Flat, rs.Pickled: a
        # mutable one's copy or pickle), and the keys whose cached value RocksDB does not have yet (see rocksdb.states)
        self.values: dict[bytes, Any] = {}
        self.dirty: set[bytes] = set()
        # the value cache holds every entry of the table there is: a key it lacks has no value, in RocksDB either
        # (q18: most bids bring a new (bidder, auction) key, and its get found nothing). True for a table declared on
        # a backend that restored nothing; false for good once the cache drops anything (`forget_values`, the bound)
        self.complete = complete
        self.bound = bound  # entries the value cache may hold (see value_cache_size); measured again when reached

    def drop_namespace_if_empty(self, namespace: Any) -> None:
        """RocksDB holds no empty containers; a namespace cache forgets the namespace's dict."""
        if self.cache is not None:
            self.cache.drop_if_empty(namespace)


class RocksDBKeyedStateBackend(AbstractKeyedStateBackend):
    tables: dict[str, RocksDBTable]

    def __init__(
        self,
        *,
        max_parallelism: int,
        key_group_range: KeyGroupRange,
        clock: Callable[[], int] = wall_clock_ms,
        operator_name: str = "",
        operator_uid: str = "",
        local_dir: str | None = None,
        incremental: bool = False,
        namespace_cache_entries: int = 0,
        tuning: RocksDBTuning | None = None,
        value_cache_bytes: int = VALUE_CACHE_SIZE.default,
    ) -> None:
        super().__init__(
            max_parallelism=max_parallelism,
            key_group_range=key_group_range,
            clock=clock,
            operator_name=operator_name,
            operator_uid=operator_uid,
        )
        self.incremental = incremental
        # bound of each namespace cache (0: none); the open ones are written through before every snapshot
        self.namespace_cache_entries = namespace_cache_entries
        self.namespace_caches: list[RocksDBNamespaceCache] = []
        self.value_cache_bytes = value_cache_bytes  # all value states' caches together (see value_cache_size)
        if local_dir:
            os.makedirs(local_dir, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="strom-rocksdb-", dir=local_dir or None)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.workdir, True)
        self.db_path = os.path.join(self.workdir, DB_DIR)
        self.tuning = tuning or RocksDBTuning()
        self.db: Rdict = open_db(self.db_path, self.tuning)
        # the current key's encoded parts, recomputed when `current_key` is another object
        self._cached_key: Any = object()
        self.kg_bytes = b""
        self.key_bytes = b""
        self._encoded_keys: dict[tuple[type, Any], tuple[bytes, bytes]] = {}
        self._kg_prefixes = rk.key_group_prefixes(max_parallelism)
        # no restore has written RocksDB (see RocksDBTable.complete); false for good at the first `forget_values()`,
        # which every restore path calls before it writes
        self.restored_nothing = True
        # list elements are keyed by a sequence number, so they iterate in append order
        self.next_seq = 1
        # incremental checkpoints: local SST file name -> its uploaded copy (see rocksdb.snapshots)
        self.uploaded_sst: dict[str, str] = {}

    # -- the current key ----------------------------------------------------------------------------
    def refresh_key(self) -> None:
        """Encode the current key (called by states when `current_key` changed). The encodings of int and str
        keys are remembered (by type too: 1, 1.0 and True are equal keys of a dict, different pickles): a
        keyed operator meets the same keys again and again, and pickling one costs more than the lookup."""
        key = self.current_key
        t = type(key)
        if t is int or t is str:
            encoded = self._encoded_keys.get((t, key))
            if encoded is None:
                if len(self._encoded_keys) >= ENCODED_KEYS_MAX:
                    self._encoded_keys.clear()
                encoded = self._encoded_keys[(t, key)] = (
                    rk.key_group_prefix(self.key_groups.key_group(key)), rk.key_part(key)
                )
            self.kg_bytes, self.key_bytes = encoded
        elif t is tuple and (h := int_str_tuple_hash(key)) is not None:
            # a composite key of ints and strs: the key group from one hash, without the assigner's memo (q18: mostly
            # new keys, a miss each); not remembered either (146k keys in q18's 460k bids, past the memo's bound)
            self.kg_bytes = self._kg_prefixes[h % self.key_groups.max_parallelism]
            self.key_bytes = rk.key_part(key)
        else:
            self.kg_bytes = rk.key_group_prefix(self.key_groups.key_group(key))
            self.key_bytes = rk.key_part(key)
        self._cached_key = key

    def key_is_cached(self) -> bool:
        return self.current_key is self._cached_key

    def take_seq(self) -> bytes:
        seq = self.next_seq
        self.next_seq = seq + 1
        return rk.seq_suffix(seq)

    # -- states -------------------------------------------------------------------------------------
    def new_table(self, name: str, kind: str, ttl: bool) -> RocksDBTable:
        return RocksDBTable(
            name, kind, ttl, complete=self.restored_nothing, bound=initial_bound(self.value_cache_bytes)
        )

    def state_class(self, kind: str) -> Any:
        return _STATE_CLASSES[kind]

    # -- namespace caches (see rocksdb.namespace_cache) ------------------------------------------------
    def open_namespace_cache(self, table: RocksDBTable, *, fetches: bool = False) -> RocksDBNamespaceCache | None:
        """A bounded in-memory cache of `table`'s namespaces, when configured and the kind allows one. Only for an
        owner that tells the cache what each batch reads and writes (`fetches`: fetch_missing, mark_written, trim;
        see namespace_cache): the cache evicts past its bound and reads evicted entries back."""
        if not fetches or self.namespace_cache_entries <= 0 or table.ttl:
            return None
        if table.kind not in ("value", "reducing", "aggregating") or table.cache is not None:
            return None  # one owner per state
        self.forget_values(table)  # the cache loads what RocksDB holds of the table
        cache = RocksDBNamespaceCache(self, table, self.namespace_cache_entries)
        table.cache = cache
        self.namespace_caches.append(cache)
        return cache

    def remove_namespace_cache(self, cache: RocksDBNamespaceCache) -> None:
        cache.table.cache = None
        self.namespace_caches.remove(cache)

    def write_through_caches(self) -> None:
        """Every cached entry into RocksDB: before a snapshot or a read that scans RocksDB."""
        for table in self.tables.values():
            self.write_values(table)
        for cache in self.namespace_caches:
            cache.write_through()
            cache.table.values.clear()

    def value_cache_may_grow(self, table: RocksDBTable) -> bool:
        """The table's value cache reached its bound: measure its entries again, and set the bound its share of the
        budget allows (the subtask's value-cache memory split evenly among its value, reducing and aggregating
        states); whether the cache may take more entries than it has."""
        sharing = sum(1 for t in self.tables.values() if t.kind in _VALUE_CACHE_KINDS)
        table.bound = measured_bound(table.values, self.value_cache_bytes // max(1, sharing))
        return len(table.values) < table.bound

    def write_values(self, table: RocksDBTable) -> None:
        """Put a value state's pending writes (see rocksdb.states) into RocksDB, one write batch."""
        dirty = table.dirty
        if not dirty:
            return
        values = table.values
        batch = WriteBatch(raw_mode=True)
        for k in dirty:
            v = values[k]
            if v is None:
                batch.delete(k)
            else:
                t = type(v)
                batch.put(k, v.data if t is rs.Pickled else rk.dumps(v.obj if t is rs.Flat else v))
        self.db.write(batch)
        dirty.clear()

    def forget_values(self, table: RocksDBTable | None = None) -> None:
        """Write through and drop the value-state caches (of `table`, or all): RocksDB is about to be written
        by another path (restore, TTL cleanup, a namespace cache), and the caches follow only their own writes."""
        if table is None:
            self.restored_nothing = False
        for t in self.tables.values() if table is None else (table,):
            self.write_values(t)
            t.values.clear()
            t.complete = False

    # -- scans --------------------------------------------------------------------------------------
    def scan(self, prefix: bytes, source: Any = None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every entry whose key starts with `prefix`, in key order. The iterator is bounded
        above by the prefix's successor: without the bound, a seek into an emptied prefix (a list state just
        cleared) walks every deletion marker after it until it meets a live entry, perhaps at the database's end."""
        upper = _successor(prefix)
        if upper is None:
            it = (source or self.db).iter()
        else:
            read_options = ReadOptions()
            read_options.set_iterate_upper_bound(upper)
            it = (source or self.db).iter(read_options)
        it.seek(prefix)
        while it.valid():
            k = it.key()
            if not k.startswith(prefix):
                return
            yield k, it.value()
            it.next()

    def delete_prefix(self, prefix: bytes) -> None:
        """Delete the entries under `prefix` one by one (range tombstones would pile up per cleared key). Callers:
        list/map states' clear and a namespace cache's drop (which clears its table's value cache itself)."""
        keys = [k for k, _ in self.scan(prefix)]
        if len(keys) == 1:
            self.db.delete(keys[0])
        elif keys:
            batch = WriteBatch(raw_mode=True)
            for k in keys:
                batch.delete(k)
            self.db.write(batch)

    def keys(self, state_name: str, namespace: Any = None) -> list[Any]:
        """Every key with an entry of `state_name` in `namespace` (a copy: callers may clear while walking)."""
        self.write_through_caches()
        table = self.tables.get(state_name)
        name = table.name_part if table is not None else rk.name_part(state_name)
        middle = name + rk.namespace_part(namespace)
        out: list[Any] = []
        for kg in self.key_group_range:
            prefix = rk.key_group_prefix(kg) + middle
            last = None
            for k, _ in self.scan(prefix):
                kb = _key_bytes_after(k, len(prefix))
                if kb != last:
                    out.append(rk.loads(kb))
                    last = kb
        return out

    def num_entries(self) -> int:
        """Entries as the heap backend counts them: one per (state, namespace, key)."""
        self.write_through_caches()
        seen = 0
        last = None
        for k, _ in self.scan(b""):
            _, name, ns, key, _ = rk.decode_key(k)
            ident = (name, ns, key)
            if ident != last:
                seen += 1
                last = ident
        return seen

    def entries_by_key_group(self) -> dict[int, dict[str, list[tuple[Any, Any, Any]]]]:
        """{key_group: {state name: [(key, namespace, value), ...]}} for every entry (heap-format values)."""
        self.write_through_caches()
        kinds = {name: t.kind for name, t in self.tables.items()}
        return canonical.read_entries(self.db, self.key_group_range, kinds, operator_uid=self.operator_uid)

    # -- TTL cleanup ----------------------------------------------------------------------------------
    def ttl_cleanup_on_access(self, table: RocksDBTable, ttl: StateTtlConfig, now: int) -> None:
        """Incremental cleanup owed by a TTL state access, run in batches: one iterator per batch."""
        table.cleanup_pending += ttl.incremental_cleanup_size
        if table.cleanup_pending >= CLEANUP_BATCH:
            budget, table.cleanup_pending = table.cleanup_pending, 0
            self.ttl_cleanup(table, budget, now, ttl.ttl_ms)

    def ttl_cleanup(self, table: RocksDBTable, budget: int, now: int, ttl_ms: int) -> None:
        """Look at up to `budget` entries of `table` from its cursor on and delete the expired ones.

        Flink cleans RocksDB state with a compaction filter; this walks the state instead, a batch
        at a time, skipping the current key (the access in progress handles it). Every stored
        entry of a TTL state (a value, a list element, a map entry) is `(value, last_access_ms)`."""
        self.forget_values(table)  # the walk reads RocksDB and deletes there
        if not self.key_is_cached():
            self.refresh_key()
        current = self.key_bytes
        rng = self.key_group_range
        cursor = table.cleanup_cursor
        kg = rng.start if cursor is None else int.from_bytes(cursor[:2], "big")
        expired: list[bytes] = []
        checked = 0
        next_cursor: bytes | None = None
        it = self.db.iter()
        while kg <= rng.end and next_cursor is None:
            prefix = rk.key_group_prefix(kg) + table.name_part
            it.seek(cursor if cursor is not None and cursor > prefix else prefix)
            cursor = None
            n = len(prefix)
            while it.valid():
                k = it.key()
                if not k.startswith(prefix):
                    break
                if checked >= budget:
                    next_cursor = k
                    break
                checked += 1
                key_pos = n + 4 + _u32(k, n)
                if k[key_pos : key_pos + 4 + _u32(k, key_pos)] != current and now - rk.loads(it.value())[1] >= ttl_ms:
                    expired.append(k)
                it.next()
            kg += 1
        table.cleanup_cursor = next_cursor  # None: start over at the first key group next time
        del it
        for k in expired:
            self.db.delete(k)

    # -- snapshots ------------------------------------------------------------------------------------
    def snapshot(self, timer_service: TimerRegistry | None, *, operator_uid: str | None = None) -> Any:
        self.write_through_caches()  # a snapshot sees every write
        return rocksdb_snapshots.snapshot_rocksdb(self, timer_service, operator_uid=operator_uid)

    def restore_native(self, snapshot: Any, *, whole: bool) -> tuple[list[Timer], list[Timer]] | None:
        self.forget_values()
        return rocksdb_snapshots.restore_native(self, snapshot, whole=whole)

    def write_key_group(self, key_group: int, entries: dict[str, list[Entry]], *, copy: bool) -> None:
        self.forget_values()
        kinds = {name: t.kind for name, t in self.tables.items()}
        canonical.write_entries(self.db, kinds, key_group, entries, self.take_seq, operator_uid=self.operator_uid)

    # -- lifecycle ------------------------------------------------------------------------------------
    def reopen(self, prepare: Callable[[str], None]) -> None:
        """Close the database, let `prepare(path)` fill its directory (a restore), and open it again."""
        self.forget_values()
        self.db.close()
        del self.db
        shutil.rmtree(self.db_path, ignore_errors=True)
        prepare(self.db_path)
        self.db = open_db(self.db_path, self.tuning)

    def close(self) -> None:
        """Close the database and remove the working directory (idempotent)."""
        db = getattr(self, "db", None)
        if db is not None:
            try:
                db.close()
            finally:
                self.db = None  # type: ignore[assignment]
        self._cleanup()


def _successor(prefix: bytes) -> bytes | None:
    """The least key above every key that starts with `prefix` (None: there is none, or the prefix is empty)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))


def _u32(data: bytes, pos: int) -> int:
    return int.from_bytes(data[pos : pos + 4], "big")


def _key_bytes_after(data: bytes, pos: int) -> bytes:
    """The pickled user key that starts (length-prefixed) at `pos`."""
    n = _u32(data, pos)
    return data[pos + 4 : pos + 4 + n]


# the RocksDB backend is a KeyedStateBackend (checked by mypy, no cost at run time)
_: type[api.KeyedStateBackend] = RocksDBKeyedStateBackend
