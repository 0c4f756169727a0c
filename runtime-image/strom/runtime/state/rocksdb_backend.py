"""The RocksDB keyed state backend: all keyed state of one operator subtask in an embedded RocksDB.

State lives on local disk (`state.backend.rocksdb.localdir`, default a temporary directory per
subtask, removed on close), so it may be larger than memory. Values are serialized on every
write and deserialized on every read, as in Flink's RocksDB backend: a value a user mutates
after reading it is not stored until written back. The byte layout is in `rocksdb_keys`.

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

from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from strom.common.key_groups import KeyGroupAssigner, KeyGroupRange
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from strom.runtime.state import rocksdb_keys as rk
from strom.runtime.state import rocksdb_states as rs
from strom.runtime.state.keyed_backend import StateAccessError, wall_clock_ms

DB_DIR = "db"


def _describe(kind: str, ttl: bool) -> str:
    return f"{kind} (TTL)" if ttl else kind


def db_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    return opts


def open_db(path: str) -> Rdict:
    db = Rdict(path, db_options())
    wo = WriteOptions()
    wo.disable_wal = True  # checkpoints, not the WAL, recover state
    db.set_write_options(wo)
    return db


class RocksDBTable:
    """What the backend knows of one state: its kind and TTL flag, and its TTL cleanup position.

    Named like the heap's StateTable because operators treat both alike (`table.kind`,
    `drop_namespace_if_empty`); the entries themselves are in RocksDB."""

    __slots__ = ("name", "kind", "ttl", "name_part", "cleanup_cursor", "cleanup_pending")

    def __init__(self, name: str, kind: str, ttl: bool = False) -> None:
        self.name = name
        self.kind = kind
        self.ttl = ttl
        self.name_part = rk.name_part(name)
        self.cleanup_cursor: bytes | None = None  # the next RocksDB key the TTL cleanup looks at
        self.cleanup_pending = 0  # entries the TTL cleanup owes (it runs in batches)

    def drop_namespace_if_empty(self, namespace: Any) -> None:
        """Nothing to drop: RocksDB holds no empty containers."""


class RocksDBKeyedStateBackend:
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
    ) -> None:
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.clock = clock
        self.operator_name = operator_name
        self.operator_uid = operator_uid
        self.incremental = incremental
        self.current_key: Any = None
        self.tables: dict[str, RocksDBTable] = {}
        self._states: dict[str, Any] = {}
        self.key_groups = KeyGroupAssigner(max_parallelism)
        if local_dir:
            os.makedirs(local_dir, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="strom-rocksdb-", dir=local_dir or None)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.workdir, True)
        self.db_path = os.path.join(self.workdir, DB_DIR)
        self.db: Rdict = open_db(self.db_path)
        # the current key's encoded parts, recomputed when `current_key` is another object
        self._cached_key: Any = object()
        self.kg_bytes = b""
        self.key_bytes = b""
        # list elements are keyed by a sequence number, so they iterate in append order
        self.next_seq = 1
        # incremental checkpoints: local SST file name -> its uploaded copy (see rocksdb_snapshots)
        self.uploaded_sst: dict[str, str] = {}

    # -- the current key ----------------------------------------------------------------------------
    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    def current_key_group(self) -> int:
        return self.key_groups.key_group(self.current_key)

    def refresh_key(self) -> None:
        """Encode the current key (called by states when `current_key` changed)."""
        key = self.current_key
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
    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The state object for a descriptor; the same object for the same name."""
        existing = self._states.get(descriptor.name)
        if existing is not None:
            if self.tables[descriptor.name].kind != descriptor.kind:
                raise StateAccessError(
                    f"operator {self.operator_name!r}: state {descriptor.name!r} is already registered as "
                    f"{self.tables[descriptor.name].kind} state, not {descriptor.kind}"
                )
            return existing
        state = self._create(descriptor, self._table_for(descriptor))
        self._states[descriptor.name] = state
        return state

    def create_namespaced_state(self, descriptor: StateDescriptor) -> Any:
        """A separate state object for the same state, for use with its own namespace."""
        return self._create(descriptor, self._table_for(descriptor))

    def _table_for(self, descriptor: StateDescriptor) -> RocksDBTable:
        ttl = descriptor.ttl_config is not None and descriptor.ttl_config.is_enabled()
        table = self.tables.get(descriptor.name)
        if table is None:
            table = self.tables[descriptor.name] = RocksDBTable(descriptor.name, descriptor.kind, ttl)
        elif table.kind != descriptor.kind or table.ttl != ttl:
            raise StateAccessError(
                f"operator uid {self.operator_uid!r} ({self.operator_name!r}): state {descriptor.name!r} holds "
                f"{_describe(table.kind, table.ttl)} state but is declared as {_describe(descriptor.kind, ttl)} "
                "state; a state's kind and TTL setting cannot change for the same name (use a new state name)"
            )
        return table

    def _create(self, d: StateDescriptor, table: RocksDBTable) -> Any:
        ttl = d.ttl_config if d.ttl_config is not None and d.ttl_config.is_enabled() else None
        if isinstance(d, ValueStateDescriptor):
            return rs.TtlValueState(self, table, ttl) if ttl else rs.RocksDBValueState(self, table)
        if isinstance(d, ListStateDescriptor):
            return rs.TtlListState(self, table, ttl) if ttl else rs.RocksDBListState(self, table)
        if isinstance(d, MapStateDescriptor):
            return rs.TtlMapState(self, table, ttl) if ttl else rs.RocksDBMapState(self, table)
        if isinstance(d, ReducingStateDescriptor):
            fn = d.reduce_function.reduce
            return rs.TtlReducingState(self, table, ttl, fn) if ttl else rs.RocksDBReducingState(self, table, fn)
        if isinstance(d, AggregatingStateDescriptor):
            agg = d.agg_function
            return (
                rs.TtlAggregatingState(self, table, ttl, agg) if ttl else rs.RocksDBAggregatingState(self, table, agg)
            )
        raise StateAccessError(f"unsupported state descriptor {d!r}")

    # -- scans --------------------------------------------------------------------------------------
    def scan(self, prefix: bytes, source: Any = None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every entry whose key starts with `prefix`, in key order."""
        it = (source or self.db).iter()
        it.seek(prefix)
        while it.valid():
            k = it.key()
            if not k.startswith(prefix):
                return
            yield k, it.value()
            it.next()

    def delete_prefix(self, prefix: bytes) -> None:
        """Delete the entries under `prefix` one by one (range tombstones would pile up per cleared key)."""
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
        from strom.runtime.state.rocksdb_canonical import read_entries

        kinds = {name: t.kind for name, t in self.tables.items()}
        return read_entries(self.db, self.key_group_range, kinds, operator_uid=self.operator_uid)

    # -- TTL cleanup ----------------------------------------------------------------------------------
    def ttl_cleanup(self, table: RocksDBTable, budget: int, now: int, ttl_ms: int) -> None:
        """Look at up to `budget` entries of `table` from its cursor on and delete the expired ones.

        Flink cleans RocksDB state with a compaction filter; this walks the state instead, a batch
        at a time, skipping the current key (the access in progress handles it). Every stored
        entry of a TTL state (a value, a list element, a map entry) is `(value, last_access_ms)`."""
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

    # -- lifecycle ------------------------------------------------------------------------------------
    def reopen(self, prepare: Callable[[str], None]) -> None:
        """Close the database, let `prepare(path)` fill its directory (a restore), and open it again."""
        self.db.close()
        del self.db
        shutil.rmtree(self.db_path, ignore_errors=True)
        prepare(self.db_path)
        self.db = open_db(self.db_path)

    def close(self) -> None:
        """Close the database and remove the working directory (idempotent)."""
        db = getattr(self, "db", None)
        if db is not None:
            try:
                db.close()
            finally:
                self.db = None  # type: ignore[assignment]
        self._cleanup()


def _u32(data: bytes, pos: int) -> int:
    return int.from_bytes(data[pos : pos + 4], "big")


def _key_bytes_after(data: bytes, pos: int) -> bytes:
    """The pickled user key that starts (length-prefixed) at `pos`."""
    n = _u32(data, pos)
    return data[pos + 4 : pos + 4 + n]
