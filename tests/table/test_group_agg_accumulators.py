"""Group aggregation accumulators under adds and retractions equal a plain-Python multiset's aggregates.

MIN/MAX keep their current extreme and recompute it only when its value's last copy is retracted, and
COUNT(DISTINCT) is the size of the value -> multiplicity map; the reference recomputes everything from the
multiset after every step, so a stale extreme or a count that kept a retracted value shows up."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from strom.table.planner.group_agg import _Acc
from strom.table.planner.plan import AggCall
from strom.table.types import DataTypes


def _agg(function: str, *, distinct: bool = False) -> AggCall:
    return AggCall(function, 0, distinct, DataTypes.BIGINT(), f"{function}(x)")


def _reference(function: str, distinct: bool, bag: Counter) -> object:
    values = [v for v, n in bag.items() for _ in range(n)]
    if distinct:
        values = list(set(values))
    if function == "count":
        return len(values)
    if not values:
        return None
    return {"min": min, "max": max, "sum": sum}[function](values)


@pytest.mark.parametrize(("function", "distinct"), [("min", False), ("max", False), ("min", True), ("max", True),
                                                    ("count", True), ("sum", True), ("count", False),
                                                    ("sum", False)])
@pytest.mark.parametrize("seed", range(5))
def test_accumulator_after_each_add_or_retract_equals_the_multisets_aggregate(function: str, distinct: bool,
                                                                             seed: int) -> None:
    rnd = random.Random(seed)
    agg = _agg(function, distinct=distinct)
    acc = _Acc.new(agg)
    bag: Counter = Counter()
    for _ in range(400):
        present = [v for v, n in bag.items() if n > 0]
        if present and rnd.random() < 0.45:  # retract a present value, often the current extreme
            v = rnd.choice([min(present), max(present), rnd.choice(present)])
            bag[v] -= 1
            acc = _Acc.add(agg, acc, v, -1)
        else:
            v = rnd.choice([None, *range(-8, 9)])
            if v is not None:
                bag[v] += 1
            acc = _Acc.add(agg, acc, v, 1)
        assert _Acc.value(agg, acc) == _reference(function, distinct, +bag)


def test_merged_extremes_equal_the_union_of_both_multisets() -> None:
    """Session windows merge accumulators: the merged MIN and MAX are those of both windows' rows."""
    for function in ("min", "max"):
        agg = _agg(function)
        a, b = _Acc.new(agg), _Acc.new(agg)
        for v in (5, 3, 9):
            a = _Acc.add(agg, a, v, 1)
        for v in (7, 1, 12):
            b = _Acc.add(agg, b, v, 1)
        merged = _Acc.merge(agg, a, b)
        assert _Acc.value(agg, merged) == {"min": 1, "max": 12}[function]
        merged = _Acc.add(agg, merged, {"min": 1, "max": 12}[function], -1)
        assert _Acc.value(agg, merged) == {"min": 3, "max": 9}[function]
