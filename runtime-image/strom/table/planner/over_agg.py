"""OVER aggregations: planning (`SUM(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND
CURRENT ROW)`) and the keyed function that runs them, as Flink's streaming OverAggregate.

Flink's rules kept: in streaming, an OVER window orders by one time attribute ascending; every OVER
aggregate of a select uses the same window; the result is insert-only. Rowtime: a row waits in state until
the watermark passes its timestamp, rows then run in timestamp order (arrival order among equal
timestamps); a row whose timestamp is at or behind the watermark when it arrives is late and dropped.
ROWS frames count rows; RANGE frames take every row within the interval, including all rows with the
current row's timestamp. Processing time: each row runs when it arrives, at the wall clock.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor
from strom.table.errors import NotSupportedYet, TableException
from strom.table.expressions import Expression, col
from strom.table.planner import builder
from strom.table.planner.event_time import to_millis
from strom.table.planner.group_agg import _Acc
from strom.table.planner.plan import AggCall, CalcNode, OverAggregateNode, PlanNode
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import column_index, compile_scalar

OVER_AGG = "over_agg"


def has_over_aggregate(exprs: list[Expression]) -> bool:
    return any(_calls(e) for e in exprs)


def _calls(e: Expression) -> list[Expression]:
    if e.op == "call" and e.name == OVER_AGG:
        return [e]
    return [c for a in e.args for c in _calls(a)]


def _replace(e: Expression, mapping: dict[str, str]) -> Expression:
    if e.op == "call" and e.name == OVER_AGG:
        return col(mapping[e.sql()])
    if not e.args or e.op == "lit":
        return e
    return Expression(e.op, e.name, tuple(_replace(a, mapping) for a in e.args), e.value, e.data_type, e.is_distinct)


def plan_over(source: PlanNode, select: list[Expression], where: Expression | None) -> PlanNode:
    node = source if where is None else builder.filter_(source, where)
    if node.updating:  # Flink refuses it too (Nexmark q6: an OVER window over a Top-N)
        producer = node
        while any(i.updating for i in producer.inputs):
            producer = next(i for i in producer.inputs if i.updating)
        raise TableException("OverAggregate doesn't support consuming update and delete changes which is produced "
                             f"by node {producer.describe()}")
    select = builder.expand_star(select, node)
    calls: list[Expression] = []
    for e in select:
        for c in _calls(e):
            if all(c.sql() != o.sql() for o in calls):
                calls.append(c)
    windows = {(tuple(a.sql() for a in c.args[1:]), repr(c.value)) for c in calls}
    if len(windows) > 1:
        raise NotSupportedYet("OVER aggregates over different windows in one select (use one window)")
    first = calls[0]
    n, flags, frame = first.value
    partition_exprs, order_exprs = list(first.args[1 : 1 + n]), list(first.args[1 + n :])
    if len(order_exprs) != 1 or flags[0][0] or order_exprs[0].op != "col":
        raise TableException("OVER windows' ordering in stream mode must be defined on a time attribute "
                             "(ORDER BY one time attribute, ascending).")
    time_name = order_exprs[0].name
    time_type = node.columns[column_index(time_name, node.columns)][1]
    if time_type.time_attr is None:
        raise TableException(f"OVER windows' ordering in stream mode must be defined on a time attribute; "
                             f"{time_name!r} is {time_type}.")
    for p in partition_exprs:
        if p.op != "col":
            raise NotSupportedYet(f"OVER (PARTITION BY {p.sql()}): partition by columns")
    # Calc: the input's columns, then the aggregates' arguments that are not plain columns
    names = node.names()
    pre_exprs = [col(c) for c in names]
    pre_names = list(names)
    agg_calls: list[AggCall] = []
    for c in calls:
        agg = c.args[0]
        if not agg.args or (agg.args[0].op == "col" and agg.args[0].name == "*"):
            agg_calls.append(AggCall(agg.name, None, False, builder._agg_type(agg, None), c.sql()))
            continue
        arg = agg.args[0]
        _, arg_type = compile_scalar(arg, node.columns)
        if arg.op == "col":
            index = column_index(arg.name, node.columns)
        else:
            index = len(pre_exprs)
            pre_exprs.append(arg.alias(f"$o{index}"))
            pre_names.append(f"$o{index}")
        agg_calls.append(AggCall(agg.name, index, False, builder._agg_type(agg, arg_type), c.sql()))
    pre = node if len(pre_exprs) == len(names) else builder.select(node, pre_exprs)
    agg_names = [f"$w{j}" for j in range(len(calls))]
    over = OverAggregateNode(
        list(pre.columns) + [(m, a.data_type) for m, a in zip(agg_names, agg_calls, strict=True)],
        input=pre, partition=[column_index(p.name, pre.columns) for p in partition_exprs],
        time_index=column_index(time_name, pre.columns), rowtime=time_type.time_attr == "ROWTIME", frame=frame,
        aggs=agg_calls,
    )
    mapping = {c.sql(): m for c, m in zip(calls, agg_names, strict=True)}
    post = [_replace(e, mapping) for e in select]
    post = [p if p is e or e.op == "alias" else p.alias(builder.output_name(e, i)) for i, (e, p) in enumerate(
        zip(select, post, strict=True))]
    columns = [(builder.output_name(e, i), compile_scalar(p, over.columns)[1].plain())
               for i, (e, p) in enumerate(zip(select, post, strict=True))]
    return CalcNode(columns, input=over, projections=[p.args[0] if p.op == "alias" else p for p in post])


class OverAggFunction(KeyedProcessFunction):
    def __init__(self, node: OverAggregateNode) -> None:
        self.aggs = list(node.aggs)
        self.time_index = node.time_index
        self.rowtime = node.rowtime
        kind, preceding = node.frame
        self.rows_frame = kind == "ROWS"
        self.preceding = preceding
        if isinstance(preceding, datetime.timedelta):
            self.preceding = preceding // datetime.timedelta(milliseconds=1)
        self.names = tuple(node.names())

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("over-agg", Types.PICKLED_BYTE_ARRAY()))

    def _stored(self) -> dict[str, Any]:
        stored = self.state.value()
        return stored if stored is not None else {"pending": {}, "history": [], "accs": None}

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        if value.get_row_kind() in (RowKind.UPDATE_BEFORE, RowKind.DELETE):
            raise NotSupportedYet("OVER aggregates over an updating input")
        st = self._stored()
        if not self.rowtime:
            ts = ctx.timer_service().current_processing_time()
            yield from self._run(st, ts, [tuple(value)])
            self.state.update(st)
            return
        ts = to_millis(value[self.time_index])
        if ts <= ctx.timer_service().current_watermark():
            return  # late, as Flink's rowtime OVER functions drop it
        pending = st["pending"]
        if ts not in pending:
            pending[ts] = []
            ctx.timer_service().register_event_time_timer(ts)
        pending[ts].append(tuple(value))
        self.state.update(st)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        st = self._stored()
        rows = st["pending"].pop(timestamp, [])
        yield from self._run(st, timestamp, rows)
        self.state.update(st)

    def _values(self, rows: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        accs = [_Acc.new(a) for a in self.aggs]
        for r in rows:
            for i, a in enumerate(self.aggs):
                accs[i] = _Acc.add(a, accs[i], 1 if a.arg is None else r[a.arg], 1)
        return tuple(_Acc.value(a, s) for a, s in zip(self.aggs, accs, strict=True))

    def _run(self, st: dict[str, Any], ts: int, rows: list[tuple[Any, ...]]) -> Iterator[Any]:
        history: list[Any] = st["history"]
        if self.preceding is None:  # UNBOUNDED PRECEDING: running accumulators
            if st["accs"] is None:
                st["accs"] = [_Acc.new(a) for a in self.aggs]
            accs = st["accs"]
            batch = [[r] for r in rows] if self.rows_frame else [rows]  # RANGE: the timestamp's peers at once
            for group in batch:
                for r in group:
                    for i, a in enumerate(self.aggs):
                        accs[i] = _Acc.add(a, accs[i], 1 if a.arg is None else r[a.arg], 1)
                values = tuple(_Acc.value(a, s) for a, s in zip(self.aggs, accs, strict=True))
                for r in group:
                    yield make_row((*r, *values), self.names)
            return
        if self.rows_frame:
            for r in rows:
                frame = history[len(history) - self.preceding:] if self.preceding else []
                values = self._values([*frame, r])
                history.append(r)
                del history[: max(0, len(history) - self.preceding)]
                yield make_row((*r, *values), self.names)
            return
        history.extend((ts, r) for r in rows)
        st["history"] = history = [(t, r) for t, r in history if t >= ts - self.preceding]
        values = self._values([r for _, r in history])
        for r in rows:
            yield make_row((*r, *values), self.names)
