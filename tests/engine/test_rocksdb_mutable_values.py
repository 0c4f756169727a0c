"""RocksDB value state with mutable values held in the value cache (a copy, or a pickle) and tuple keys encoded by
the short path, against plain Python: a dict of deep copies driven by the same operations, with in-place changes
that must not be stored, snapshots and restores (into RocksDB and heap) in between, and the generic encoding of
every key (the bytes on disk must not change: savepoints and checkpoints stay readable).
"""

from __future__ import annotations

import copy
import random
from typing import Any, NamedTuple

import pytest
from strom.common import Configuration
from strom.common.key_groups import KeyGroupRange, int_str_tuple_hash, stable_hash
from strom.datastream import AggregateFunction
from strom.datastream.state import AggregatingStateDescriptor, ValueStateDescriptor
from strom.runtime.state.backends import create_keyed_state_backend
from strom.runtime.state.restore import restore_keyed
from strom.runtime.state.rocksdb import keys as rk
from strom.runtime.state.rocksdb.snapshots import materialize, snapshot_rocksdb
from strom.runtime.tasks.processing_time import ManualClock

MAX_P = 128


class Bid(NamedTuple):
    auction: int
    bidder: int
    price: int
    extra: str


def make_backend(kind: str, **conf: Any) -> Any:
    return create_keyed_state_backend(
        Configuration({"state.backend.type": kind, **conf}),
        max_parallelism=MAX_P,
        key_group_range=KeyGroupRange(0, MAX_P - 1),
        clock=ManualClock(0),
        operator_name="op",
        operator_uid="uid-1",
    )


class Collect(AggregateFunction):
    """An accumulator changed in place, as many user functions do."""

    def create_accumulator(self) -> list[int]:
        return []

    def add(self, value: int, acc: list[int]) -> list[int]:
        acc.append(value)
        return acc

    def get_result(self, acc: list[int]) -> tuple[int, ...]:
        return tuple(acc)

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return a + b


def _random_key(rnd: random.Random) -> Any:
    return rnd.choice(
        [(rnd.randrange(6), rnd.randrange(4)), (rnd.randrange(3), f"s{rnd.randrange(3)}"), rnd.randrange(5)]
    )


def _random_value(rnd: random.Random, step: int) -> Any:
    bid = Bid(step, rnd.randrange(9), rnd.randrange(100), "x" * rnd.randrange(3))
    return rnd.choice(
        [
            [(-bid.price, step, bid) for _ in range(rnd.randrange(4))],  # q19's top list: held as a copy
            {f"k{i}": i for i in range(rnd.randrange(3))},
            {step, step + 1},
            [[step], [step + 1]],  # nested lists: held as a pickle
            (step, [step]),
            bid,
            step,
        ]
    )


def _change_in_place(value: Any, step: int) -> bool:
    """Change a value read from state without writing it back; False when it cannot be changed."""
    if isinstance(value, list):
        if value and isinstance(value[0], list):
            value[0].append(step)
        else:
            value.insert(0, (step,))
        return True
    if isinstance(value, dict):
        value["changed"] = step
        return True
    if isinstance(value, set):
        value.add(-step)
        return True
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list):
        value[1].append(step)
        return True
    return False


def _contents(be: Any, keys: set[Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    v = be.get_state(ValueStateDescriptor("v"))
    agg = be.get_state(AggregatingStateDescriptor("agg", Collect()))
    values, aggs = {}, {}
    for key in keys:
        be.set_current_key(key)
        if (x := v.value()) is not None:
            values[key] = x
        if (x := agg.get()) is not None:
            aggs[key] = x
    return values, aggs


@pytest.mark.parametrize(("cache_size", "seed"), [("1kb", 3), ("128mb", 100_000)])  # 1kb: write-backs mid-run
def test_mutable_values_and_tuple_keys_follow_a_dict_across_snapshots_and_restores(cache_size: str, seed: int) -> None:
    rnd = random.Random(seed)
    cache = {"state.backend.rocksdb.value-cache.size": cache_size}
    be = make_backend("rocksdb", **cache)
    model: dict[Any, Any] = {}
    agg_model: dict[Any, list[int]] = {}
    seen: set[Any] = set()
    try:
        for step in range(3000):
            key = _random_key(rnd)
            seen.add(key)
            be.set_current_key(key)
            v = be.get_state(ValueStateDescriptor("v"))
            agg = be.get_state(AggregatingStateDescriptor("agg", Collect()))
            action = rnd.random()
            if action < 0.2:
                got = v.value()
                assert got == model.get(key), (step, key)
                if got is not None and _change_in_place(got, step):  # not stored without update()
                    assert v.value() == model[key], (step, key)
            elif action < 0.3:  # read, change, write back: the change is stored
                got = v.value()
                if got is not None and _change_in_place(got, step):
                    v.update(got)
                    model[key] = copy.deepcopy(got)
            elif action < 0.55:  # write, then change the object written: the state keeps what was written
                value = _random_value(rnd, step)
                v.update(value)
                model[key] = copy.deepcopy(value)
                _change_in_place(value, step)
            elif action < 0.6:
                v.clear()
                model.pop(key, None)
            elif action < 0.75:
                agg.add(step)
                agg_model.setdefault(key, []).append(step)
                assert agg.get() == tuple(agg_model[key])
            elif action < 0.8:  # a scan: writes held values through first
                assert sorted(be.keys("v"), key=repr) == sorted(model, key=repr)
            elif action < 0.81:  # snapshot, go on a little, restore it into a fresh backend of each kind
                snap = snapshot_rocksdb(be, None, operator_uid="uid-1")
                be.set_current_key(key)
                v.update(["after the snapshot"])
                serialized = materialize(snap, None)
                heap = make_backend("hashmap")
                restore_keyed(heap, None, [serialized])
                expected = ({k: x for k, x in model.items()}, {k: tuple(a) for k, a in agg_model.items()})
                assert _contents(heap, seen) == expected, step
                heap.close()
                be.close()
                be = make_backend("rocksdb", **cache)  # processing goes on in the restored backend
                restore_keyed(be, None, [serialized])
                assert _contents(be, seen) == expected, step
        assert _contents(be, seen) == (model, {k: tuple(a) for k, a in agg_model.items()})
    finally:
        be.close()


def test_a_value_read_twice_is_two_objects_and_neither_is_the_cached_one() -> None:
    be = make_backend("rocksdb")
    try:
        v = be.get_state(ValueStateDescriptor("v"))
        be.set_current_key((1, 2))
        top = [(-5, 1, Bid(1, 2, 5, ""))]
        v.update(top)
        first, second = v.value(), v.value()
        assert first == second == top and first is not second and first is not top
        first.clear()
        top.clear()
        assert v.value() == [(-5, 1, Bid(1, 2, 5, ""))]
    finally:
        be.close()


@pytest.mark.parametrize(
    "key",
    [
        (1, 2),
        (0, "a"),
        (),
        (2**63 - 1, -(2**63)),
        (2**63, 1),  # past 64 bits: the general encoding
        (1, 2**63),
        (-(2**63) - 1, 0),
        (-5, 2**63 - 1),
        (1, 2, 3),
        ("é\ud800", "x"),
        ("__main__", 3),
        (1.0, 2),  # equal to (1, 2), another pickle: never the int/str path
        (True, 2),
        ((1, 2), 3),
        (None, 1),
        ("s",),
    ],
)
def test_tuple_keys_encode_to_the_bytes_of_the_general_path(key: tuple[Any, ...]) -> None:
    """The key group from the general stable hash, the key part from the general pickling: what every earlier
    checkpoint holds."""
    be = make_backend("rocksdb")
    try:
        be.set_current_key(key)
        be.refresh_key()
        assert be.kg_bytes == rk.key_group_prefix(stable_hash(key) % MAX_P)
        assert be.key_bytes == rk.key_part(key)
        assert int_str_tuple_hash(key) in (None, stable_hash(key))
    finally:
        be.close()


def test_remembered_tuple_key_encodings_are_never_those_of_an_equal_key_of_other_item_types() -> None:
    """(1, 2), (True, 2) and (1.0, 2) are equal keys of a dict but pickle differently: each keeps its own bytes,
    whichever came first."""
    keys = [(1, 2), (True, 2), (1.0, 2), (1, 2), ("a", 1), (1.0, 2), (True, 2), (2**64, 1), (2**64, 1)]
    be = make_backend("rocksdb")
    try:
        for key in keys:
            be.set_current_key(key)
            be.refresh_key()
            assert (be.kg_bytes, be.key_bytes) == (rk.key_group_prefix(stable_hash(key) % MAX_P), rk.key_part(key))
    finally:
        be.close()
