"""The RocksDB namespace cache used with fetches (the rolling reduce's): eviction past its bound, reading evicted
entries back, and write-throughs that write the changed keys only.

The expected state is a plain dict driven by the same updates; what RocksDB holds is read back through the
backend's canonical entries (the form snapshots hold), or counted in RocksDB's memtable.
"""

from __future__ import annotations

import random
from typing import Any

from strom.common import Configuration
from strom.common.key_groups import KeyGroupRange
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.state.api import VOID
from strom.runtime.state.backends import create_keyed_state_backend
from strom.runtime.state.rocksdb.backend import RocksDBKeyedStateBackend
from strom.runtime.tasks.processing_time import ManualClock

MAX_P = 128


def make_backend(bound: int) -> RocksDBKeyedStateBackend:
    config = Configuration(
        {"state.backend.type": "rocksdb", "state.backend.rocksdb.namespace-cache.max-entries": bound}
    )
    backend = create_keyed_state_backend(
        config, max_parallelism=MAX_P, key_group_range=KeyGroupRange(0, MAX_P - 1), clock=ManualClock(0),
        operator_name="op", operator_uid="uid-1",
    )
    assert isinstance(backend, RocksDBKeyedStateBackend)
    return backend


def stored(backend: RocksDBKeyedStateBackend) -> dict[Any, Any]:
    """key -> value of state 'v' as a snapshot sees it."""
    return {k: v for groups in backend.entries_by_key_group().values() for k, _, v in groups.get("v", ())}


def run_batch(cache: Any, batch: list[tuple[int, int]], reference: dict[int, int]) -> None:
    """What the rolling reduce does with a batch: fetch, add per record from the dict, mark."""
    keys = [k for k, _ in batch]
    cache.fetch_missing(VOID, keys)
    m = cache.namespace_map(VOID)
    for k, amount in batch:
        m[k] = m.get(k, 0) + amount
        reference[k] = reference.get(k, 0) + amount
    cache.mark_written(VOID, keys)
    cache.trim()


def test_a_snapshot_after_evictions_equals_a_plain_dict():
    backend = make_backend(bound=16)
    try:
        state = backend.get_state(ValueStateDescriptor("v"))
        cache = state.open_namespace_cache(fetches=True)
        assert cache is not None
        reference: dict[int, int] = {}
        rnd = random.Random(5)
        for round_ in range(30):
            run_batch(cache, [(rnd.randrange(100), rnd.randrange(1, 9)) for _ in range(10)], reference)
            if round_ % 7 == 6:
                assert stored(backend) == reference  # a read that scans RocksDB writes the changes through first
        assert cache.partial, "nothing was evicted: the eviction path is not covered"
        assert len(cache.namespace_map(VOID)) <= 16 + 10
        assert stored(backend) == reference
    finally:
        backend.close()


def test_a_cache_restored_over_its_bound_starts_empty_and_reads_rocksdb():
    """State of 50 keys restored under a bound of 8: the cache holds none of it and fetches what a batch needs."""
    first = make_backend(bound=1000)
    second = make_backend(bound=8)
    try:
        state = first.get_state(ValueStateDescriptor("v"))
        for k in range(50):
            first.current_key = k
            state.update(k * 10)
        restored = second.get_state(ValueStateDescriptor("v"))
        for group, entries in first.entries_by_key_group().items():
            second.write_key_group(group, entries, copy=False)
        cache = restored.open_namespace_cache(fetches=True)
        assert cache is not None and cache.partial == {VOID} and cache.namespace_map(VOID) == {}
        reference = {k: k * 10 for k in range(50)}
        run_batch(cache, [(3, 1), (49, 2), (77, 5)], reference)
        assert stored(second) == reference
    finally:
        first.close()
        second.close()


def test_a_write_through_writes_the_changed_keys_only():
    """1000 keys written and flushed; then 3 of them change: the next write-through puts 3 entries into RocksDB's
    memtable, not 1000 (RocksDB counts the entries of its active memtable)."""
    backend = make_backend(bound=10_000)
    try:
        cache = backend.get_state(ValueStateDescriptor("v")).open_namespace_cache(fetches=True)
        assert cache is not None
        reference: dict[int, int] = {}
        run_batch(cache, [(k, 1) for k in range(1000)], reference)
        backend.write_through_caches()
        backend.db.flush()
        assert backend.db.property_int_value("rocksdb.num-entries-active-mem-table") == 0
        run_batch(cache, [(5, 1), (500, 1), (5, 1), (999, 1)], reference)
        backend.write_through_caches()
        assert backend.db.property_int_value("rocksdb.num-entries-active-mem-table") == 3
        assert stored(backend) == reference
    finally:
        backend.close()


def test_int_and_str_keys_keep_their_on_disk_encoding():
    """The fast path of key_part writes the bytes the documented layout says: u32 length, then the pickle
    (protocol 5) - for ints of every pickle opcode size and for strs, incl. one naming __main__."""
    import pickle
    import struct

    from strom.runtime.state.rocksdb import keys as rk

    for key in [0, 1, -5, 255, 256, 65_535, 65_536, 2**31, 2**63, -(2**70), "", "a", "ü", "x__main__y"]:
        raw = pickle.dumps(key, 5)
        assert rk.key_part(key) == struct.pack(">I", len(raw)) + raw, key


def test_bulk_state_keys_are_the_layouts_keys_with_flinks_key_groups():
    """state_keys (a cache's bulk encoding, hashing directly) gives kg:u16 | middle | key part with the key group
    of assign_to_key_group, for every key kind; a list key (no stable hash as such) goes by its frozen form."""
    import struct

    from strom.common.key_groups import KeyGroupAssigner, assign_to_key_group
    from strom.runtime.state.rocksdb import keys as rk

    middle = rk.name_part("v") + rk.namespace_part(None)
    keys: list[Any] = [0, 7, -3, 2**40, "a", "ü", ("x", 1), 1.5, b"raw", None]
    got = rk.state_keys(KeyGroupAssigner(MAX_P), middle, keys)
    assert got == [struct.pack(">H", assign_to_key_group(k, MAX_P)) + middle + rk.key_part(k) for k in keys]
    assigner = KeyGroupAssigner(MAX_P)
    (listed,) = rk.state_keys(assigner, middle, [[1, 2]])
    assert listed == struct.pack(">H", assigner.key_group([1, 2])) + middle + rk.key_part([1, 2])


def test_bulk_dumps_loads_back_every_value_also_those_needing_cloudpickle():
    from strom.runtime.state.rocksdb import keys as rk

    class Local:  # defined in a function: plain pickle refuses it
        def __init__(self, n: int) -> None:
            self.n = n

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Local) and other.n == self.n

    values: list[Any] = [1, "a", (1, 2.5), [3], Local(4), None]
    assert [rk.loads(b) for b in rk.dumps_many(values)] == values
    assert rk.dumps_many([1, "a"]) == [rk.dumps(1), rk.dumps("a")]
