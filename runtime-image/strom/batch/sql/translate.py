"""A validated BATCH plan (strom.table.planner.plan) as Spark DataFrame operations.

Every DataFrame here has positional columns c0..c{n-1} in the plan node's column order (a join's two
`k` columns never clash), plus `__rt`, the row's event time in epoch milliseconds, where the plan
defines one (set by a WatermarkAssigner, kept by Calcs, replaced by a window's window_time): window
aggregations need it even where the time column was projected away, as Strom's records carry it.

Node by node: Source (sources.py), Calc (select/filter; expressions.py), GroupAggregate (groupBy/agg,
a global aggregate gives one row on empty input as Flink's batch does), WindowAggregate and the window
TVF (TUMBLE, HOP, CUMULATE: each row exploded into its windows, then grouped), Rank (ROW_NUMBER/RANK/
DENSE_RANK over a Spark window; a global ORDER BY .. LIMIT as orderBy/limit; deduplication), OverAggregate
(ROWS/RANGE frames over the time attribute), Join (INNER/LEFT/RIGHT/FULL on the equality keys and the
rest of ON), Union ALL. Anything else raises `Unsupported` naming the node; the plan then runs on the
streaming runtime in BATCH mode.
"""

from __future__ import annotations

from typing import Any

from strom.batch.sql.aggregates import agg_column, over_column
from strom.batch.sql.expressions import column, native_sql
from strom.batch.sql.sources import source_frame
from strom.batch.sql.spark_types import Unsupported, sql_type
from strom.table.planner.plan import (
    CalcNode,
    GroupAggregateNode,
    JoinNode,
    OverAggregateNode,
    PlanNode,
    RankNode,
    SourceNode,
    UnionAllNode,
    WatermarkAssignerNode,
    WindowAggregateNode,
    WindowSpec,
    WindowTableFunctionNode,
)

RT = "__rt"


def translate(spark: Any, node: PlanNode, memo: dict[int, Any] | None = None) -> Any:
    """`node` as a DataFrame (c0..c{n-1}[, __rt]); a sub-plan read twice is translated once."""
    memo = {} if memo is None else memo
    key = id(node)
    if key not in memo:
        memo[key] = _translate(spark, node, memo)
    return memo[key]


def final_frame(df: Any, node: PlanNode) -> Any:
    """The plan's result columns only (no __rt)."""
    return df.select(*[f"c{i}" for i in range(len(node.columns))])


def _positional(df: Any, n: int, rt: bool = False) -> list[Any]:
    cols = [f"c{i}" for i in range(n)]
    return cols + ([RT] if rt and RT in df.columns else [])


def _translate(spark: Any, node: PlanNode, memo: dict[int, Any]) -> Any:
    from pyspark.sql import functions as F  # noqa: N812

    kind = type(node)  # exact types: a planner module's subclass (WindowRankNode, ...) has its own semantics
    if kind is SourceNode:
        assert isinstance(node, SourceNode)
        return source_frame(spark, node)
    inputs = [translate(spark, i, memo) for i in node.inputs]
    if kind is CalcNode:
        assert isinstance(node, CalcNode) and node.input is not None
        df, cols = inputs[0], node.input.columns
        udaf_args = [e for e in node.projections if e.op == "call" and e.name == "udaf_args"]
        if udaf_args:
            raise Unsupported(f"Python aggregate function over {udaf_args[0].sql()}")
        if node.condition is not None:
            df = df.filter(column(node.condition, cols))
        out = [column(e, cols).alias(f"c{i}") for i, e in enumerate(node.projections)]
        return df.select(*out, *([RT] if RT in df.columns else []))
    if kind is WatermarkAssignerNode:
        assert isinstance(node, WatermarkAssignerNode)
        df = inputs[0]
        return df.select(*_positional(df, len(node.columns)), _millis(F.col(f"c{node.rowtime}")).alias(RT))
    if kind is GroupAggregateNode:
        assert isinstance(node, GroupAggregateNode) and node.input is not None
        if not node.final_only:
            raise Unsupported("a streaming GroupAggregate (not final-only)")
        return _aggregate(inputs[0], node, node.input.columns, node.keys, node.aggs, [])
    if kind is WindowAggregateNode:
        assert isinstance(node, WindowAggregateNode) and node.window is not None and node.input is not None
        df = inputs[0]
        if RT not in df.columns:
            raise Unsupported("a window aggregation whose input has no event time")
        df = _explode_windows(df, node.window, F.col(RT))
        return _aggregate(df, node, node.input.columns, node.keys, node.aggs, ["__ws", "__we"])
    if kind is WindowTableFunctionNode:
        assert isinstance(node, WindowTableFunctionNode) and node.window is not None
        df = inputs[0]
        n_in = len(node.columns) - 3
        df = _explode_windows(df, node.window, _millis(F.col(f"c{node.time_column}")))
        return df.select(*[f"c{i}" for i in range(n_in)], *_window_columns(node, n_in, "__ws", "__we"))
    if kind is UnionAllNode:
        parts = []
        for df in inputs:
            parts.append(df.select(*[F.col(f"c{i}").cast(sql_type(t)).alias(f"c{i}")
                                     for i, (_, t) in enumerate(node.columns)]))
        out = parts[0]
        for p in parts[1:]:
            out = out.unionAll(p)
        return out
    if kind is RankNode:
        assert isinstance(node, RankNode)
        return _rank(inputs[0], node)
    if kind is JoinNode:
        assert isinstance(node, JoinNode)
        return _join(inputs[0], inputs[1], node)
    if kind is OverAggregateNode:
        assert isinstance(node, OverAggregateNode)
        return _over(inputs[0], node)
    raise Unsupported(f"plan node {node.describe().split('(')[0]} has no Spark translation")


def _millis(ts: Any) -> Any:
    """A TIMESTAMP_NTZ column as epoch milliseconds (read as UTC; the session time zone is UTC)."""
    from pyspark.sql import functions as F  # noqa: N812

    return F.unix_millis(ts.cast("timestamp"))


def _from_millis(ms: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: N812

    return F.timestamp_millis(ms).cast("timestamp_ntz")


def _explode_windows(df: Any, window: WindowSpec, rt: Any) -> Any:
    """Each row once per window holding it, with the window's bounds (ms) as __ws/__we (Flink's
    TimeWindow.getWindowStartWithOffset: a start is the time less its non-negative remainder)."""
    from pyspark.sql import functions as F  # noqa: N812

    if not window.event_time:
        raise Unsupported("a processing-time window")
    size = window.size
    t = F.col("__t")
    df = df.withColumn("__t", rt)
    if window.kind == "TUMBLE":
        starts = F.array(t - F.pmod(t, F.lit(size)))
        ends = None
    elif window.kind == "HOP":
        slide = window.slide or size
        last = t - F.pmod(t, F.lit(slide))
        count = -(-size // slide)
        starts = F.filter(F.sequence(last - F.lit((count - 1) * slide), last, F.lit(slide)),
                          lambda s: s + F.lit(size) > t)
        ends = None
    elif window.kind == "CUMULATE":
        step = window.slide or size
        start = t - F.pmod(t, F.lit(size))
        ends = F.filter(F.sequence(start + F.lit(step), start + F.lit(size), F.lit(step)), lambda e: e > t)
        df = df.withColumn("__we", F.explode(ends)).withColumn("__ws", start)
        return df.drop("__t")
    else:
        raise Unsupported(f"{window.kind} windows")
    df = df.withColumn("__ws", F.explode(starts)).withColumn("__we", F.col("__ws") + F.lit(size))
    return df.drop("__t")


def _window_columns(node: PlanNode, first: int, ws: str, we: str) -> list[Any]:
    """window_start, window_end, window_time as the plan types them, and __rt = window_time."""
    from pyspark.sql import functions as F  # noqa: N812

    return [_from_millis(F.col(ws)).alias(f"c{first}"), _from_millis(F.col(we)).alias(f"c{first + 1}"),
            _from_millis(F.col(we) - 1).alias(f"c{first + 2}"), (F.col(we) - 1).alias(RT)]


def _aggregate(df: Any, node: PlanNode, in_cols: list[Any], keys: list[int], aggs: list[Any],
               window: list[str]) -> Any:
    key_cols = [f"c{k}" for k in keys] + window
    agg_cols = [agg_column(a, in_cols).alias(f"__a{j}") for j, a in enumerate(aggs)]
    if not agg_cols:
        grouped = df.select(*key_cols).distinct()
    elif key_cols:
        grouped = df.groupBy(*key_cols).agg(*agg_cols)
    else:
        grouped = df.agg(*agg_cols)
    from pyspark.sql import functions as F  # noqa: N812

    out = [F.col(f"c{k}").alias(f"c{i}") for i, k in enumerate(keys)]
    out += [F.col(f"__a{j}").alias(f"c{len(keys) + j}") for j in range(len(aggs))]
    if window:
        out += _window_columns(node, len(keys) + len(aggs), window[0], window[1])
    return grouped.select(*out)


def _order_columns(node: RankNode) -> list[Any]:
    from pyspark.sql import functions as F  # noqa: N812

    out = []
    for k in node.order:
        c = F.col(f"c{k.index}")
        if k.descending:
            out.append(c.desc_nulls_first() if k.nulls_first else c.desc_nulls_last())
        else:
            out.append(c.asc_nulls_first() if k.nulls_first else c.asc_nulls_last())
    return out


def _rank(df: Any, node: RankNode) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    if not node.final_only:
        raise Unsupported("a streaming Rank (not final-only)")
    n_in = len(node.columns) - (1 if node.output_rank else 0)
    cols = _positional(df, n_in, rt=True)
    order = _order_columns(node)
    if not node.partition and not node.output_rank and node.rank_type == "ROW_NUMBER":
        out = df.select(*cols)
        out = out.orderBy(*order) if order else out
        return out if node.rank_end is None else out.limit(node.rank_end)
    if not order:
        raise Unsupported("a ranking without ORDER BY")
    window = Window.partitionBy(*[F.col(f"c{p}") for p in node.partition]).orderBy(*order)
    fn = {"ROW_NUMBER": F.row_number, "RANK": F.rank, "DENSE_RANK": F.dense_rank}[node.rank_type]
    ranked = df.withColumn("__rank", fn().over(window))
    if node.rank_end is not None:
        ranked = ranked.filter(F.col("__rank") <= node.rank_end)
    extra = [F.col("__rank").cast("bigint").alias(f"c{n_in}")] if node.output_rank else []
    return ranked.select(*[F.col(c) for c in cols if c != RT], *extra, *([RT] if RT in df.columns else []))


def _join(left: Any, right: Any, node: JoinNode) -> Any:
    from pyspark.sql import functions as F  # noqa: N812

    if not node.final_only:
        raise Unsupported("a streaming Join (not final-only)")
    assert node.left is not None and node.right is not None
    n_left = len(node.left.columns)
    n_right = len(node.right.columns)
    left = left.select(*[f"c{i}" for i in range(n_left)])
    right = right.select(*[F.col(f"c{j}").alias(f"c{n_left + j}") for j in range(n_right)])
    cond = None
    for a, b in zip(node.left_keys, node.right_keys, strict=True):
        eq = F.col(f"c{a}") == F.col(f"c{n_left + b}")
        cond = eq if cond is None else cond & eq
    if node.condition is not None:
        try:
            rest = F.expr(native_sql(node.condition, node.columns))
        except Exception as e:  # noqa: BLE001 - a condition Spark cannot run natively
            raise Unsupported(f"join condition {node.condition.sql()} needs a Python function") from e
        cond = rest if cond is None else cond & rest
    how = {"INNER": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "full"}.get(node.kind)
    if how is None:
        raise Unsupported(f"{node.kind} join")
    if cond is None:
        cond = F.lit(True)
    return left.join(right, on=cond, how=how)


def _over(df: Any, node: OverAggregateNode) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    assert node.input is not None
    n_in = len(node.input.columns)
    t = node.input.columns[node.time_index][1]
    if not t.is_timestamp:
        raise Unsupported("an OVER aggregate ordered by a non-time column")
    df = df.withColumn("__ot", _millis(F.col(f"c{node.time_index}")))
    window = Window.partitionBy(*[F.col(f"c{p}") for p in node.partition]).orderBy(F.col("__ot"))
    kind, preceding = node.frame
    start = Window.unboundedPreceding
    if kind == "ROWS":
        window = window.rowsBetween(start if preceding is None else -int(preceding), Window.currentRow)
    else:
        if preceding is not None:
            ms = preceding.total_seconds() * 1000 if hasattr(preceding, "total_seconds") else preceding
            start = -int(ms)
        window = window.rangeBetween(start, Window.currentRow)
    out = [F.col(f"c{i}") for i in range(n_in)]
    for j, a in enumerate(node.aggs):
        out.append(over_column(a, node.input.columns, window).alias(f"c{n_in + j}"))
    return df.select(*out, *([RT] if RT in df.columns else []))
