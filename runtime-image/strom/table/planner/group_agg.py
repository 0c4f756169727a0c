"""Group aggregation as Flink's GroupAggFunction: per key, accumulators in ValueState; each input row
accumulates (+I/+U) or retracts (-U/-D); the output is a changelog: +I for a new group, -U(old)/+U(new)
when its result changes (nothing when unchanged), -D when its last row was retracted.

BATCH (`final_only`): no per-row output; one +I per group when the bounded input ends (a timer at the
maximum watermark), which is the insert-only final result Flink's batch planner produces.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from strom.common.row import Row, RowKind
from strom.common.time import MAX_WATERMARK
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor
from strom.table.planner.plan import AggCall
from strom.table.planner.rows import make_row
from strom.table.types import wrap_integer

_RETRACTIONS = (RowKind.UPDATE_BEFORE, RowKind.DELETE)


class _Acc:
    """One aggregate's accumulator as plain data (pickles into state): see new/add/retract/value."""

    @staticmethod
    def new(agg: AggCall) -> Any:
        if agg.udaf is not None:
            f = agg.udaf.function
            return agg.udaf.shared_invoker().call(f.create_accumulator)
        if agg.distinct or agg.function in ("min", "max"):
            return {}  # value -> multiplicity (retractable MIN/MAX, DISTINCT)
        if agg.function == "count":
            return 0
        return [0, 0]  # sum, avg: [sum, non-null count]

    @staticmethod
    def add(agg: AggCall, acc: Any, v: Any, sign: int) -> Any:
        if agg.udaf is not None:  # v: the arguments' tuple; NULLs are passed on, as PyFlink does
            f = agg.udaf.function
            agg.udaf.shared_invoker().call(f.accumulate if sign > 0 else f.retract, acc, *v)
            return acc
        if agg.arg is not None and v is None:
            return acc  # aggregates skip NULL
        if isinstance(acc, dict):
            n = acc.get(v, 0) + sign
            if n:
                acc[v] = n
            else:
                acc.pop(v, None)
            return acc
        if agg.function == "count":
            return acc + sign
        acc[0] += v * sign
        acc[1] += sign
        return acc

    @staticmethod
    def merge(agg: AggCall, acc: Any, other: Any) -> Any:
        """`acc` with `other` folded in (session windows merging); a Python AggregateFunction must implement
        merge(accumulator, accumulators), as Flink requires for session windows."""
        if agg.udaf is not None:
            f = agg.udaf.function
            if not callable(getattr(f, "merge", None)):
                raise TypeError(f"aggregate function {agg.udaf.name!r} must implement merge(accumulator, "
                                "accumulators) to run in a SESSION window")
            agg.udaf.shared_invoker().call(f.merge, acc, [other])
            return acc
        if isinstance(acc, dict):
            for v, n in other.items():
                total = acc.get(v, 0) + n
                if total:
                    acc[v] = total
                else:
                    acc.pop(v, None)
            return acc
        if agg.function == "count":
            return acc + other
        return [acc[0] + other[0], acc[1] + other[1]]

    @staticmethod
    def value(agg: AggCall, acc: Any) -> Any:
        if agg.udaf is not None:
            return agg.udaf.shared_invoker().call(agg.udaf.function.get_value, acc)
        f = agg.function
        if isinstance(acc, dict):
            values = list(acc)
            if f == "count":
                return len(values)
            if not values:
                return None
            if f == "min":
                return min(values)
            if f == "max":
                return max(values)
            total = sum(values)
            return _sum(total, agg) if f == "sum" else _avg(total, len(values), agg)
        if f == "count":
            return acc
        if acc[1] == 0:
            return None
        return _sum(acc[0], agg) if f == "sum" else _avg(acc[0], acc[1], agg)


def _sum(total: Any, agg: AggCall) -> Any:
    # SUM(INT) is INT in Flink and overflows as Java does; the accumulator keeps the exact total, so
    # retractions stay exact and the wrapped value is only what is emitted
    return wrap_integer(total, agg.data_type.root) if agg.data_type.is_integral else total


def _avg(total: Any, n: int, agg: AggCall) -> Any:
    if agg.data_type.is_integral:  # Flink: AVG of an integer column is an integer (truncated toward zero)
        q = abs(total) // n
        return q if total >= 0 else -q
    return total / n


class GlobalGroupMarker(tuple):
    """BATCH, no GROUP BY keys: one marker joins the input so that the single group exists even when the
    input is empty (`SELECT COUNT(*) FROM t` over no rows is one row, 0, in batch; in streaming, as in
    Flink, nothing is emitted until a row arrives)."""


class GroupAggFunction(KeyedProcessFunction):
    def __init__(self, key_count: int, aggs: list[AggCall], names: list[str], final_only: bool):
        self.key_count = key_count
        self.aggs = aggs
        self.names = tuple(names)
        self.final_only = final_only

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("group-agg-accs", Types.PICKLED_BYTE_ARRAY()))

    def _values(self, accs: list[Any]) -> tuple:
        return tuple(_Acc.value(a, s) for a, s in zip(self.aggs, accs, strict=True))

    def _result(self, key: tuple, values: tuple, kind: RowKind) -> Row:
        return make_row((*key, *values), self.names, kind)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Row]:
        if isinstance(value, GlobalGroupMarker):
            if self.state.value() is None:
                self.state.update((0, [_Acc.new(a) for a in self.aggs]))
                ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
            return
        key = tuple(value[: self.key_count])
        retract = value.get_row_kind() in _RETRACTIONS if isinstance(value, Row) else False
        stored = self.state.value()
        if stored is None:
            if retract:
                return  # a retraction for a group that does not exist (e.g. state expired): ignored, as Flink
            count, accs, first = 0, [_Acc.new(a) for a in self.aggs], True
            if self.final_only:
                ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
        else:
            count, accs = stored
            first = False
        before = None if first or self.final_only else self._values(accs)
        sign = -1 if retract else 1
        for i, agg in enumerate(self.aggs):
            arg = 1 if agg.arg is None else value[agg.arg]  # COUNT(*) counts every row
            accs[i] = _Acc.add(agg, accs[i], arg, sign)
        count += sign
        if count <= 0 and not self.final_only:
            self.state.clear()
            if before is not None:
                yield self._result(key, before, RowKind.DELETE)
            return
        self.state.update((count, accs))
        if self.final_only:
            return
        after = self._values(accs)
        if before is None:
            yield self._result(key, after, RowKind.INSERT)
        elif after != before:  # an unchanged result emits nothing (without state TTL), as Flink
            yield self._result(key, before, RowKind.UPDATE_BEFORE)
            yield self._result(key, after, RowKind.UPDATE_AFTER)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Row]:
        stored = self.state.value()
        if stored is not None and (stored[0] > 0 or self.key_count == 0):
            yield self._result(tuple(ctx.get_current_key()), self._values(stored[1]), RowKind.INSERT)
        self.state.clear()
