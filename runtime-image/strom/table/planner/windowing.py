"""Planning time attributes and windows: watermarks on tables, window TVFs (TUMBLE, HOP, CUMULATE, SESSION)
with window aggregation, and the legacy group windows (`GROUP BY TUMBLE|HOP|SESSION(ts, INTERVAL ...)` with
TUMBLE_START/_END/_ROWTIME etc., and the Table API's Tumble/Slide/Session), all onto WindowAggregate.
SESSION windows merge on the DataStream session window operator: a session is [first row, last row + gap),
per group key, fired when the watermark passes its end; rows behind the watermark are late and dropped.

Flink's rules kept here: a window's time column must be a time attribute (a rowtime declared by a
watermark, or PROCTIME()); a window aggregation groups by both window_start and window_end (else the TVF
is a plain table and GROUP BY an updating aggregation over it); window_time is the rowtime of its output.
"""

from __future__ import annotations

import datetime
from typing import Any

from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.expressions import Expression, col
from strom.table.planner import builder
from strom.table.planner.plan import Columns, PlanNode, WatermarkAssignerNode, WindowSpec, WindowTableFunctionNode
from strom.table.planner.scalar import column_index, compile_scalar
from strom.table.types import DataType

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")


def watermark_assigner(node: PlanNode, column: str, expression: Expression, table: str,
                       batch: bool = False) -> PlanNode:
    """The rowtime column marked ROWTIME behind a WatermarkAssigner; in BATCH the assigner only sets record
    timestamps (a bounded input has no late rows: everything is on time for the end-of-input watermark)."""
    index = column_index(column, node.columns)
    t = node.columns[index][1]
    if not t.is_timestamp or (t.precision or 0) > 3:
        raise ValidationException(f"table {table!r}: the rowtime column {column!r} is {t}; a watermark needs "
                                  f"TIMESTAMP(3) or TIMESTAMP_LTZ(3) (CAST it in a computed column)")
    _, wt = compile_scalar(expression, node.columns)
    if not wt.is_timestamp:
        raise ValidationException(f"table {table!r}: watermark expression {expression.sql()} is {wt}, expected a "
                                  f"TIMESTAMP such as {column} - INTERVAL '5' SECOND")
    columns = list(node.columns)
    columns[index] = (column, DataType(t.root, t.nullable, t.precision, time_attr="ROWTIME"))
    return WatermarkAssignerNode(columns, input=node, rowtime=index, watermark=expression, batch=batch)


def _time_attribute(node: PlanNode, column: str, what: str) -> DataType:
    t = node.columns[column_index(column, node.columns)][1]
    if t.time_attr is None:
        raise ValidationException(
            f"{what}: the time column {column!r} is {t}, not a time attribute; declare a watermark on it "
            f"(WATERMARK FOR {column} AS ...) or use a PROCTIME() column"
        )
    return t


def _window_columns(time_type: DataType, names: tuple[str, str, str]) -> Columns:
    bound = DataType("TIMESTAMP", False, 3)
    time = DataType(time_type.root, False, 3, time_attr=time_type.time_attr)
    return [(names[0], bound), (names[1], bound), (names[2], time)]


def window_tvf(source: PlanNode, tvf: Any) -> tuple[PlanNode, WindowSpec, Columns]:
    """The TVF's input, its window, and the columns it appends (window_start, window_end, window_time)."""
    t = _time_attribute(source, tvf.time_column, f"window TVF {tvf.kind} over {tvf.table!r}")
    window = WindowSpec(tvf.kind, tvf.size, tvf.slide, event_time=t.time_attr == "ROWTIME",
                        partition=tuple(tvf.partition or ()))
    return source, window, _window_columns(t, WINDOW_COLUMNS)


def groups_by_window(group_by: list[Expression] | None) -> bool:
    names = {g.name for g in group_by or [] if g.op == "col"}
    return "window_start" in names and "window_end" in names


def non_window_keys(group_by: list[Expression] | None) -> list[Expression]:
    return [g for g in group_by or [] if not (g.op == "col" and g.name in WINDOW_COLUMNS)]


def window_table_function(source: PlanNode, tvf: Any, window: WindowSpec, window_columns: Columns) -> PlanNode:
    if window.kind == "SESSION":
        raise NotSupportedYet(f"SESSION window TVF over {tvf.table!r} without a window aggregation (GROUP BY "
                              f"window_start, window_end, ..)")
    clash = [n for n, _ in window_columns if n in source.names()]
    if clash:
        raise ValidationException(f"window TVF {tvf.kind} over {tvf.table!r}: the table already has a column "
                                  f"{clash[0]!r}; rename it first")
    return WindowTableFunctionNode(source.columns + window_columns, input=source, window=window,
                                   time_column=column_index(tvf.time_column, source.columns))


# -- legacy group windows -------------------------------------------------------------------------
_GROUP_WINDOWS = {"tumble": 2, "hop": 3, "session": 2}
_AUXILIARY = {"tumble_start": 0, "tumble_end": 1, "tumble_rowtime": 2, "hop_start": 0, "hop_end": 1,
              "hop_rowtime": 2, "session_start": 0, "session_end": 1, "session_rowtime": 2}
_USAGE = {"tumble": "TUMBLE(time_attr, size)", "hop": "HOP(time_attr, slide, size)",
          "session": "SESSION(time_attr, gap)"}
_LEGACY_NAMES = ("w$start", "w$end", "w$rowtime")


def group_window_call(group_by: list[Expression]) -> Expression | None:
    calls = [g for g in group_by if g.op == "call" and g.name in _GROUP_WINDOWS]
    if len(calls) > 1:
        raise ValidationException(f"GROUP BY has several group windows ({', '.join(c.sql() for c in calls)}); "
                                  f"use one")
    return calls[0] if calls else None


def _interval_ms(e: Expression, where: str) -> int:
    if e.op != "lit" or not isinstance(e.value, datetime.timedelta):
        raise ValidationException(f"{where}: expected an INTERVAL literal, got {e.sql()}")
    ms = e.value // datetime.timedelta(milliseconds=1)
    if ms <= 0:
        raise ValidationException(f"{where}: the interval must be positive, got {e.sql()}")
    return ms


def legacy_window(call: Expression, source: PlanNode) -> tuple[WindowSpec, str]:
    name = call.name.upper()
    if len(call.args) != _GROUP_WINDOWS[call.name] or call.args[0].op != "col":
        raise ValidationException(f"{call.sql()}: expected {_USAGE[call.name]}")
    column = call.args[0].name
    t = _time_attribute(source, column, f"group window {name}")
    sizes = [_interval_ms(a, call.sql()) for a in call.args[1:]]
    if call.name in ("tumble", "session"):
        return WindowSpec(call.name.upper(), sizes[0], None, t.time_attr == "ROWTIME"), column
    return WindowSpec("HOP", sizes[1], sizes[0], t.time_attr == "ROWTIME"), column


def _replace_auxiliary(e: Expression, window: Expression) -> Expression:
    """TUMBLE_START(ts, INTERVAL ..) -> the window's start column (its arguments must match GROUP BY's)."""
    if e.op == "call" and e.name in _AUXILIARY:
        if e.name.split("_")[0] != window.name:
            raise ValidationException(f"{e.sql()} does not match the group window {window.sql()} of GROUP BY")
        if [a.sql() for a in e.args] != [a.sql() for a in window.args]:
            raise ValidationException(f"{e.sql()} does not match the group window {window.sql()} of GROUP BY")
        return col(_LEGACY_NAMES[_AUXILIARY[e.name]])
    if e.op == "call" and e.name in _GROUP_WINDOWS:
        raise ValidationException(f"group window {e.sql()} is only allowed in GROUP BY; use "
                                  f"{e.name.upper()}_START/_END in the select list")
    if not e.args or e.op == "lit":
        return e
    return Expression(e.op, e.name, tuple(_replace_auxiliary(a, window) for a in e.args), e.value, e.data_type,
                      e.is_distinct)


def group_window_aggregate(
    source: PlanNode,
    group_by: list[Expression],
    select: list[Expression],
    having: Expression | None,
    unnamed: str = "EXPR$",
) -> PlanNode:
    call = group_window_call(group_by)
    assert call is not None
    window, column = legacy_window(call, source)
    columns = _window_columns(source.columns[column_index(column, source.columns)][1], _LEGACY_NAMES)
    keys = [g for g in group_by if g is not call]
    select = _keep_names(select, [_replace_auxiliary(e, call) for e in select], unnamed)
    having = _replace_auxiliary(having, call) if having is not None else None
    return builder.window_aggregate(source, window, keys, select, having, columns, unnamed)


def table_api_window_aggregate(
    source: PlanNode,
    window: Any,
    group_by: list[Expression],
    select: list[Expression],
) -> PlanNode:
    """`table.window(Tumble.over(..).on(col('ts')).alias('w')).group_by(col('w'), ..).select(..)`:
    `col('w').start/.end/.rowtime` are the window's columns."""
    alias = window.alias_name
    if not any(g.op == "col" and g.name == alias for g in group_by):
        raise ValidationException(f"a group window must be grouped by its alias: group_by(col({alias!r}), ...)")
    if window.time_field.op != "col":
        raise ValidationException(f"window .on(): expected a column, got {window.time_field.sql()}")
    column = window.time_field.name
    t = _time_attribute(source, column, f"group window {window.kind}")
    spec = WindowSpec(window.kind, window.size, window.slide, t.time_attr == "ROWTIME")
    columns = _window_columns(t, _LEGACY_NAMES)
    keys = [g for g in group_by if not (g.op == "col" and g.name == alias)]

    def replace(e: Expression) -> Expression:
        if e.op == "call" and e.name in ("window_start_of", "window_end_of", "window_rowtime_of"):
            if e.args[0].op != "col" or e.args[0].name != alias:
                raise ValidationException(f"{e.sql()}: unknown window {e.args[0].sql()}; the window is {alias!r}")
            return col(_LEGACY_NAMES[("window_start_of", "window_end_of", "window_rowtime_of").index(e.name)])
        if e.op == "col" and e.name == alias:
            raise NotSupportedYet(f"the window {alias!r} itself in select; use col({alias!r}).start/.end/.rowtime")
        if not e.args or e.op == "lit":
            return e
        return Expression(e.op, e.name, tuple(replace(a) for a in e.args), e.value, e.data_type, e.is_distinct)

    new_select = _keep_names(select, [replace(e) for e in select], "_c")
    return builder.window_aggregate(source, spec, keys, new_select, None, columns, "_c")


def _keep_names(before: list[Expression], after: list[Expression], unnamed: str) -> list[Expression]:
    """An unaliased TUMBLE_START(...) keeps the name it had (EXPR$i), not its window column's."""
    return [a if a is b or b.op == "alias" else a.alias(builder.output_name(b, i, unnamed))
            for i, (b, a) in enumerate(zip(before, after, strict=True))]
