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
from strom.table import decimals
from strom.table.planner.plan import AggCall
from strom.table.planner.rows import make_row
from strom.table.types import wrap_integer

_RETRACTIONS = (RowKind.UPDATE_BEFORE, RowKind.DELETE)


def _kind(agg: AggCall) -> str:
    """Which accumulator an aggregate keeps: udaf, extreme (MIN/MAX), distinct, count or total."""
    if agg.udaf is not None:
        return "udaf"
    if agg.function in ("min", "max"):
        return "extreme"
    if agg.distinct:
        return "distinct"
    return "count" if agg.function == "count" else "total"


def _extreme_of(agg: AggCall, counts: dict[Any, int]) -> Any:
    if not counts:
        return None
    return min(counts) if agg.function == "min" else max(counts)


class _Acc:
    """One aggregate's accumulator as plain data (pickles into state): see new/add/retract/value.

    MIN/MAX keep [value -> multiplicity, current extreme] (Flink's MinWithRetractAccumulator): the extreme is
    recomputed only when its own value's multiplicity reaches zero, so a row costs O(1), not a scan of every
    distinct value. DISTINCT aggregates keep value -> multiplicity; COUNT(DISTINCT) is its size."""

    @staticmethod
    def new(agg: AggCall) -> Any:
        kind = _kind(agg)
        if kind == "udaf":
            f = agg.udaf.function
            return agg.udaf.shared_invoker().call(f.create_accumulator)
        if kind == "extreme":
            return [{}, None]
        if kind == "distinct":
            return {}
        if kind == "count":
            return 0
        return [0, 0]  # sum, avg: [sum, non-null count]

    @staticmethod
    def add(agg: AggCall, acc: Any, v: Any, sign: int) -> Any:
        return _ADDERS[_kind(agg)](agg, acc, v, sign)

    @staticmethod
    def merge(agg: AggCall, acc: Any, other: Any) -> Any:
        """`acc` with `other` folded in (session windows merging); a Python AggregateFunction must implement
        merge(accumulator, accumulators), as Flink requires for session windows."""
        kind = _kind(agg)
        if kind == "udaf":
            f = agg.udaf.function
            if not callable(getattr(f, "merge", None)):
                raise TypeError(f"aggregate function {agg.udaf.name!r} must implement merge(accumulator, "
                                "accumulators) to run in a SESSION window")
            agg.udaf.shared_invoker().call(f.merge, acc, [other])
            return acc
        if kind in ("extreme", "distinct"):
            counts = acc[0] if kind == "extreme" else acc
            for v, n in (other[0] if kind == "extreme" else other).items():
                total = counts.get(v, 0) + n
                if total:
                    counts[v] = total
                else:
                    counts.pop(v, None)
            return [counts, _extreme_of(agg, counts)] if kind == "extreme" else counts
        if kind == "count":
            return acc + other
        return [acc[0] + other[0], acc[1] + other[1]]

    @staticmethod
    def value(agg: AggCall, acc: Any) -> Any:
        return _VALUERS[_kind(agg)](agg, acc)


def _add_udaf(agg: AggCall, acc: Any, v: Any, sign: int) -> Any:
    f = agg.udaf.function  # v: the arguments' tuple; NULLs are passed on, as PyFlink does
    agg.udaf.shared_invoker().call(f.accumulate if sign > 0 else f.retract, acc, *v)
    return acc


# hot path: the adders below run per record and aggregate; aggregates skip NULL
def _add_extreme(agg: AggCall, acc: Any, v: Any, sign: int) -> Any:
    if v is None:
        return acc
    counts = acc[0]
    old = counts.get(v, 0)
    n = old + sign
    if n:
        counts[v] = n
        if not old:  # a new value: the extreme moves only if it is beyond the current one
            best = acc[1]
            if best is None or (v < best if agg.function == "min" else v > best):
                acc[1] = v
    else:
        counts.pop(v, None)
        if v == acc[1]:
            acc[1] = _extreme_of(agg, counts)
    return acc


def _add_distinct(agg: AggCall, acc: Any, v: Any, sign: int) -> Any:
    if v is None:
        return acc
    n = acc.get(v, 0) + sign
    if n:
        acc[v] = n
    else:
        acc.pop(v, None)
    return acc


def _add_count(agg: AggCall, acc: Any, v: Any, sign: int) -> Any:
    return acc if v is None and agg.arg is not None else acc + sign


def _add_total(agg: AggCall, acc: Any, v: Any, sign: int) -> Any:
    if v is not None:
        acc[0] += v * sign
        acc[1] += sign
    return acc


def _value_udaf(agg: AggCall, acc: Any) -> Any:
    return agg.udaf.shared_invoker().call(agg.udaf.function.get_value, acc)


def _value_distinct(agg: AggCall, acc: Any) -> Any:
    if agg.function == "count":
        return len(acc)
    if not acc:
        return None
    total = sum(acc)
    return _sum(total, agg) if agg.function == "sum" else _avg(total, len(acc), agg)


def _value_total(agg: AggCall, acc: Any) -> Any:
    if acc[1] == 0:
        return None
    return _sum(acc[0], agg) if agg.function == "sum" else _avg(acc[0], acc[1], agg)


def _value_extreme(agg: AggCall, acc: Any) -> Any:
    return acc[1]


def _value_count(agg: AggCall, acc: Any) -> Any:
    return acc


_ADDERS = {"udaf": _add_udaf, "extreme": _add_extreme, "distinct": _add_distinct, "count": _add_count,
           "total": _add_total}
_VALUERS = {"udaf": _value_udaf, "extreme": _value_extreme, "distinct": _value_distinct, "count": _value_count,
            "total": _value_total}


def adders(aggs: list[AggCall]) -> list[tuple[int, int | None, Any, AggCall]]:
    """Per aggregate (position, argument column or None for COUNT(*), adder(agg, acc, v, sign), agg), chosen
    once: an operator's per-row loop calls the adder directly. Module-level functions: it pickles."""
    return [(i, agg.arg, _ADDERS[_kind(agg)], agg) for i, agg in enumerate(aggs)]


def valuers(aggs: list[AggCall]) -> list[tuple[Any, AggCall]]:
    """Per aggregate (valuer(agg, acc), agg), chosen once."""
    return [(_VALUERS[_kind(agg)], agg) for agg in aggs]


def _sum(total: Any, agg: AggCall) -> Any:
    # SUM(INT) is INT in Flink and overflows as Java does; the accumulator keeps the exact total, so
    # retractions stay exact and the wrapped value is only what is emitted
    if agg.data_type.root == "DECIMAL":  # NULL past DECIMAL(38, s), as Flink's overflow
        return decimals.fitter(agg.data_type)(total)
    return wrap_integer(total, agg.data_type.root) if agg.data_type.is_integral else total


def _avg(total: Any, n: int, agg: AggCall) -> Any:
    if agg.data_type.root == "DECIMAL":  # rounded HALF_UP to DECIMAL(38, max(6, s))
        return decimals.fitter(agg.data_type)(decimals.divide_exact(total, n))
    if agg.data_type.is_integral:  # Flink: AVG of an integer column is an integer (truncated toward zero)
        q = abs(total) // n
        return q if total >= 0 else -q
    return total / n


class GlobalGroupMarker(tuple):
    """BATCH, no GROUP BY keys: one marker joins the input so that the single group exists even when the
    input is empty (`SELECT COUNT(*) FROM t` over no rows is one row, 0, in batch; in streaming, as in
    Flink, nothing is emitted until a row arrives)."""


class GroupAggFunction(KeyedProcessFunction):
    emits_fresh_rows = True  # every Row it emits is built by make_row for that emission

    def __init__(self, key_count: int, aggs: list[AggCall], names: list[str], final_only: bool):
        self.key_count = key_count
        self.aggs = aggs
        self.names = tuple(names)
        self.final_only = final_only

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("group-agg-accs", Types.PICKLED_BYTE_ARRAY()))
        # each aggregate's adder and valuer chosen once, not per row
        self._adders = adders(self.aggs)
        self._valuers = valuers(self.aggs)

    def _values(self, accs: list[Any]) -> tuple:
        return tuple([value(agg, acc) for (value, agg), acc in zip(self._valuers, accs)])  # noqa: B905 - hot

    def _result(self, key: tuple, values: tuple, kind: RowKind) -> Row:
        return make_row((*key, *values), self.names, kind)

    # hot path: called per record
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
        for i, arg, add, agg in self._adders:  # COUNT(*) counts every row
            accs[i] = add(agg, accs[i], 1 if arg is None else value[arg], sign)
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
