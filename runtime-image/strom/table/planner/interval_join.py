"""Interval joins (Flink's IntervalJoin): a join whose condition bounds one input's rowtime by the other's,
e.g. `a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts`. An inner one runs on the DataStream interval join
(rows buffered per key until the watermark passes their interval, late rows dropped); LEFT/RIGHT/FULL ones
on OuterIntervalJoinFunction, which emits an unpaired outer row with NULLs once the watermark passes the
last time a partner could arrive. Both are insert-only.

`bounds` reads the condition's conjuncts as `left.ts - right.ts` in [lower, upper] (milliseconds; a strict
comparison moves its bound by 1 ms, as Flink does); the other conjuncts stay a residual condition.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from strom.common.row import Row, RowKind
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedCoProcessFunction, ProcessJoinFunction
from strom.datastream.state import MapStateDescriptor, ValueStateDescriptor
from strom.table.expressions import Expression
from strom.table.planner.event_time import to_millis
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


@dataclass(eq=False)
class OuterIntervalJoinNode(IntervalJoinNode):
    """A LEFT/RIGHT/FULL interval join (Flink's outer IntervalJoin): pairs as the inner one, and a row of an
    outer side that found no partner once the watermark passed the last time a partner could arrive is
    emitted with NULLs — so the output stays insert-only."""

    kind: str = "LEFT"
    left_time: int = 0  # output column index of the left rowtime
    right_time: int = 0  # output column index of the right rowtime

    def describe(self) -> str:
        return super().describe().replace("joinType=[InnerJoin]", f"joinType=[{self.kind.title()}OuterJoin]")

    def build_stream(self, streams: list[Any]) -> Any:
        left, right = streams
        keyed = left.connect(right).key_by(lambda r, k=tuple(self.left_keys): tuple(r[i] for i in k),
                                           lambda r, k=tuple(self.right_keys): tuple(r[i] for i in k))
        return keyed.process(OuterIntervalJoinFunction(self)).name(self.describe()).uid(
            self.uid("outer-interval-join"))


class OuterIntervalJoinFunction(KeyedCoProcessFunction):
    """Both sides buffered by rowtime in keyed state. A left row at time l pairs with right rows at
    r in [l - upper, l - lower]; no right row at or before the watermark arrives later, so a left row is
    complete when the watermark reaches l - lower (a right row when it reaches r + upper): then it leaves
    state, with NULLs for the other side if it never paired and its side is outer. A row complete already
    when it arrives (late) pairs with what is buffered and is emitted with NULLs at once if it found none."""

    def __init__(self, node: OuterIntervalJoinNode) -> None:
        assert node.left is not None and node.right is not None
        self.outer = (node.kind in ("LEFT", "FULL"), node.kind in ("RIGHT", "FULL"))
        self.widths = (len(node.left.columns), len(node.right.columns))
        self.times = (node.left_time, node.right_time - len(node.left.columns))
        self.lower, self.upper = node.lower, node.upper
        self.condition = compile_scalar(node.condition, node.columns)[0] if node.condition is not None else None
        self.names = tuple(node.names())

    def open(self, runtime_context: Any) -> None:
        pickled = Types.PICKLED_BYTE_ARRAY()
        # id -> [time ms, values, paired]
        self.rows = tuple(runtime_context.get_map_state(MapStateDescriptor(f"interval-{side}", pickled, pickled))
                          for side in ("left", "right"))
        self.next_id = runtime_context.get_state(ValueStateDescriptor("interval-next-id", pickled))

    def process_element1(self, value: Any, ctx: Any) -> Iterator[Row]:
        return self._process(value, ctx, 0)

    def process_element2(self, value: Any, ctx: Any) -> Iterator[Row]:
        return self._process(value, ctx, 1)

    def _complete_at(self, ms: int, side: int) -> int:
        return ms - self.lower if side == 0 else ms + self.upper

    def _pair(self, values: tuple, other: tuple, side: int) -> tuple:
        return (*values, *other) if side == 0 else (*other, *values)

    def _padded(self, values: tuple, side: int) -> Row:
        nulls = (None,) * self.widths[1 - side]
        return make_row((*values, *nulls) if side == 0 else (*nulls, *values), self.names, RowKind.INSERT)

    def _process(self, value: Any, ctx: Any, side: int) -> Iterator[Row]:
        ts = value[self.times[side]]
        values = tuple(value)
        null_key = any(k is None for k in ctx.get_current_key())
        if ts is None:
            return
        ms = to_millis(ts)
        paired = False
        if not null_key:
            other_side = 1 - side
            for n, entry in list(self.rows[other_side].items()):
                other_ms, other, other_paired = entry
                diff = ms - other_ms if side == 0 else other_ms - ms  # left.ts - right.ts
                if not self.lower <= diff <= self.upper:
                    continue
                pair = self._pair(values, other, side)
                if self.condition is not None and self.condition(pair) is not True:
                    continue
                paired = True
                if not other_paired:
                    self.rows[other_side].put(n, [other_ms, other, True])
                yield make_row(pair, self.names, RowKind.INSERT)
        complete = self._complete_at(ms, side)
        if complete <= ctx.timer_service().current_watermark():
            if not paired and self.outer[side]:
                yield self._padded(values, side)
            return
        n = self.next_id.value() or 0
        self.next_id.update(n + 1)
        self.rows[side].put(n, [ms, values, paired])
        ctx.timer_service().register_event_time_timer(complete)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Row]:
        for side in (0, 1):
            for n, (ms, values, paired) in list(self.rows[side].items()):
                if self._complete_at(ms, side) > timestamp:
                    continue
                self.rows[side].remove(n)
                if not paired and self.outer[side]:
                    yield self._padded(values, side)
