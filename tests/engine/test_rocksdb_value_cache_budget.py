"""The RocksDB value cache's memory budget (`state.backend.rocksdb.value-cache.size`): the cache holds as many
entries as the budget allows by their measured size, measured here independently with tracemalloc, and what it
drops is in RocksDB."""

from __future__ import annotations

import random
import tracemalloc
from typing import Any

import pytest
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.state.restore import restore_keyed
from strom.runtime.state.rocksdb.snapshots import materialize, snapshot_rocksdb

from tests.engine.test_rocksdb_mutable_values import make_backend

MB = 1024 * 1024


def _rocksdb_entries(be: Any) -> int:
    return sum(1 for _ in be.db.keys())


POOL = ["p" * 4000 + str(i) for i in range(10)]


@pytest.mark.parametrize(("value_chars", "states", "pooled"), [(10, 1, False), (1000, 1, False), (10, 2, False),
                                                               (10, 1, True)])
def test_the_cache_uses_about_its_budget_by_tracemalloc_and_rocksdb_takes_the_rest(
    value_chars: int, states: int, pooled: bool
) -> None:
    """The budget is the subtask's: two value states share it. Values may share objects (`pooled`: a 4 KB string
    from a pool of 10 in every value, as Nexmark's bids share their url and extra strings): counted per entry, the
    cache would hold a 16th of what fits."""
    budget = 4 * MB
    be = make_backend("rocksdb", **{"state.backend.rocksdb.value-cache.size": budget})
    try:
        vs = [be.get_state(ValueStateDescriptor(f"v{i}")) for i in range(states)]
        v = vs[0]
        table = be.tables["v0"]
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            # write new keys until the cache has dropped its entries once and is full again
            dropped, last, n = False, 0, 0
            while not (dropped and last == table.bound):
                assert n < budget, "the cache never dropped its entries"
                be.set_current_key((n, n + 1))  # tuple keys: no key memo, only the cache holds their bytes
                for s in vs:
                    s.update(("x" * value_chars + str(n), n + 1000, POOL[n % 10] if pooled else None))
                n += 1
                dropped = dropped or len(table.values) < last
                last = len(table.values)
            in_cache = sum(len(t.values) for t in be.tables.values())
            used = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert len(table.values) <= table.bound
        assert used <= 1.15 * budget, (used, in_cache)  # the estimate errs high: never much over
        assert used >= budget / 2, (used, in_cache)  # and the cache is not needlessly small
        assert _rocksdb_entries(be) >= states * n - in_cache  # every dropped entry was written through
        for i in random.Random(1).sample(range(n), 200):
            be.set_current_key((i, i + 1))
            assert v.value() == ("x" * value_chars + str(i), i + 1000, POOL[i % 10] if pooled else None)
    finally:
        be.close()


def test_a_budget_of_zero_writes_every_value_through_and_reads_stay_right() -> None:
    rnd = random.Random(5)
    be = make_backend("rocksdb", **{"state.backend.rocksdb.value-cache.size": 0})
    model: dict[int, Any] = {}
    try:
        v = be.get_state(ValueStateDescriptor("v"))
        for step in range(2000):
            key = rnd.randrange(300)
            be.set_current_key(key)
            if rnd.random() < 0.4:
                assert v.value() == model.get(key), step
            elif rnd.random() < 0.1:
                v.clear()
                model.pop(key, None)
            else:
                v.update([step, key])  # mutable: held as a copy
                model[key] = [step, key]
            assert len(be.tables["v"].values) <= 1
        snap = materialize(snapshot_rocksdb(be, None, operator_uid="uid-1"), None)
        heap = make_backend("hashmap")
        restore_keyed(heap, None, [snap])
        hv = heap.get_state(ValueStateDescriptor("v"))
        for key in range(300):
            heap.set_current_key(key)
            assert hv.value() == model.get(key)
        heap.close()
    finally:
        be.close()


def test_a_small_budget_refuses_nothing_a_user_can_write_and_a_negative_one_is_refused() -> None:
    with pytest.raises(Exception, match="value-cache.size"):
        make_backend("rocksdb", **{"state.backend.rocksdb.value-cache.size": -1})
