"""Aggregate calls (COUNT, SUM, AVG, MIN, MAX, DISTINCT) as Spark aggregate columns with Flink's result
types: Spark widens SUM(INT) to BIGINT and makes AVG a DOUBLE, Flink keeps the argument's type, so
SUM is CAST back (INT wraps on overflow, as Flink's INT sum does) and AVG of an integer column is the
sum divided by the count truncated toward zero (`div`), AVG(INT) of 2, -4, 7 being 1 as in Flink.
FILTER (WHERE c) arrives planned as AGG(CASE WHEN c THEN x END). Python aggregate functions and
DECIMAL aggregates are `Unsupported` (the plan runs on the streaming runtime).
"""

from __future__ import annotations

from typing import Any

from strom.batch.sql.spark_types import Unsupported, sql_type
from strom.table.planner.plan import AggCall
from strom.table.types import DataType


def agg_column(a: AggCall, in_cols: list[tuple[str, DataType]]) -> Any:
    from pyspark.sql import functions as F  # noqa: N812

    d = "DISTINCT " if a.distinct else ""
    if a.function == "udaf" or a.udaf is not None:
        raise Unsupported(f"Python aggregate function {a.text}")
    if a.function == "count":
        return F.expr(f"count({d}{'1' if a.arg is None else f'c{a.arg}'})").cast("bigint")
    assert a.arg is not None
    arg_type = in_cols[a.arg][1]
    if arg_type.root == "DECIMAL" or a.data_type.root == "DECIMAL":
        raise Unsupported(f"DECIMAL aggregate {a.text}")
    c = f"c{a.arg}"
    target = sql_type(a.data_type)
    if a.function in ("min", "max"):
        return F.expr(f"{a.function}({c})").cast(target)
    if a.function == "sum":
        return F.expr(f"CAST(sum({d}{c}) AS {target})")
    if a.function == "avg":
        if arg_type.is_integral:
            return F.expr(f"CAST(sum({d}CAST({c} AS BIGINT)) div count({d}{c}) AS {target})")
        return F.expr(f"CAST(avg({d}{c}) AS {target})")
    raise Unsupported(f"aggregate function {a.text}")


def over_column(a: AggCall, in_cols: list[tuple[str, DataType]], window: Any) -> Any:
    """The aggregate over a Spark window frame (an OVER aggregate), with the same result types."""
    from pyspark.sql import functions as F  # noqa: N812

    if a.function == "udaf" or a.udaf is not None or a.distinct:
        raise Unsupported(f"OVER aggregate {a.text}")
    if a.function == "count":
        counted = F.lit(1) if a.arg is None else F.col(f"c{a.arg}")
        return F.count(counted).over(window).cast("bigint")
    assert a.arg is not None
    arg_type = in_cols[a.arg][1]
    if arg_type.root == "DECIMAL" or a.data_type.root == "DECIMAL":
        raise Unsupported(f"DECIMAL aggregate {a.text}")
    c = F.col(f"c{a.arg}")
    target = sql_type(a.data_type)
    simple = {"min": F.min, "max": F.max, "sum": F.sum}.get(a.function)
    if simple is not None:
        return simple(c).over(window).cast(target)
    if a.function == "avg" and arg_type.is_integral:
        s, n = F.sum(c.cast("bigint")).over(window), F.count(c).over(window)
        return ((s - s % n) / n).cast("bigint").cast(target)  # exact: s - s % n is a multiple of n (Java %)
    if a.function == "avg":
        return F.avg(c).over(window).cast(target)
    raise Unsupported(f"OVER aggregate {a.text}")
