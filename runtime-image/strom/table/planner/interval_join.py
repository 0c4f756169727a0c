"""Interval joins (Flink's IntervalJoin): an inner join whose condition bounds one input's rowtime by the
other's, e.g. `a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts`. It runs on the DataStream interval join
(rows buffered per key until the watermark passes their interval, late rows dropped) and is insert-only.

`bounds` reads the condition's conjuncts as `left.ts - right.ts` in [lower, upper] (milliseconds; a strict
comparison moves its bound by 1 ms, as Flink does); the other conjuncts stay a residual condition.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from strom.common.row import Row, RowKind
from strom.datastream.functions import ProcessJoinFunction
from strom.table.expressions import Expression
from strom.table.planner.plan import Columns, IntervalJoinNode
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class IntervalBounds:
    left_time: int  # output column index of the left rowtime
    right_time: int
    lower: int  # left.ts - right.ts >= lower (ms)
    upper: int  # left.ts - right.ts <= upper (ms)
    residual: list[Expression]


def _rowtime_plus(e: Expression, columns: Columns) -> tuple[int, int] | None:
    """`ts`, `ts + INTERVAL`, `ts - INTERVAL` over a rowtime column -> (column index, offset ms)."""
    names = [n for n, _ in columns]
    if e.op == "col" and e.name in names:
        i = names.index(e.name)
        return (i, 0) if columns[i][1].time_attr == "ROWTIME" else None
    if e.op == "call" and e.name in ("+", "-") and len(e.args) == 2:
        base, offset = e.args
        if e.name == "+" and base.op == "lit":
            base, offset = offset, base
        if offset.op != "lit" or not isinstance(offset.value, datetime.timedelta):
            return None
        inner = _rowtime_plus(base, columns)
        if inner is None:
            return None
        ms = offset.value // datetime.timedelta(milliseconds=1)
        return inner[0], inner[1] + (ms if e.name == "+" else -ms)
    return None


def bounds(conjuncts: list[Expression], columns: Columns, n_left: int) -> IntervalBounds | None:
    """The interval of `left.ts - right.ts` if the conjuncts bound it from both sides, else None."""
    lower: int | None = None
    upper: int | None = None
    times: tuple[int, int] | None = None
    residual = []
    for c in conjuncts:
        parsed = None
        if c.op == "call" and c.name in _FLIP:
            a, b = (_rowtime_plus(x, columns) for x in c.args)
            if a is not None and b is not None and (a[0] < n_left) != (b[0] < n_left):
                op = c.name
                if a[0] >= n_left:  # put the left input's time on the left side of the comparison
                    a, b, op = b, a, _FLIP[op]
                # (l + oa) op (r + ob)  <=>  l - r op ob - oa
                parsed = ((a[0], b[0]), op, b[1] - a[1])
        if parsed is None or (times is not None and parsed[0] != times):
            residual.append(c)
            continue
        times, op, value = parsed
        if op in (">", ">="):
            value = value + 1 if op == ">" else value
            lower = value if lower is None else max(lower, value)
        else:
            value = value - 1 if op == "<" else value
            upper = value if upper is None else min(upper, value)
    if lower is None or upper is None or times is None:
        return None
    return IntervalBounds(times[0], times[1], lower, upper, residual)


class IntervalJoinFunction(ProcessJoinFunction):
    """A joined pair as one row (+I); the residual condition filtered here; a NULL key matches nothing."""

    def __init__(self, node: IntervalJoinNode) -> None:
        self.names = tuple(node.names())
        self.condition = compile_scalar(node.condition, node.columns)[0] if node.condition is not None else None
        self.left_keys = list(node.left_keys)

    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterator[Row]:
        if any(left[i] is None for i in self.left_keys):
            return
        values = (*left, *right)
        if self.condition is None or self.condition(values) is True:
            yield make_row(values, self.names, RowKind.INSERT)
