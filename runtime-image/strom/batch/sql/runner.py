"""Running a BATCH plan on Spark SQL, or saying why not.

`table.exec.batch.runner` chooses: `spark` (default: a bounded plan in batch mode runs as Spark SQL
through PySpark) or `strom` (the streaming runtime in batch mode, as before). Flink has no such key:
its batch planner is always its own runtime; Strom's Spark runner is the project's choice for bounded
pipelines and `strom` keeps the old behaviour at hand.

A plan runs on Spark only when the whole of it translates (every node, type, source and sink); else
`plan_on_spark` logs one INFO line naming the first reason and returns None, and the caller runs the
plan on the streaming runtime. Never a partial or approximate run: a plan Spark cannot run faithfully
is not run there.
"""

from __future__ import annotations

import contextlib
import io
import logging
from dataclasses import dataclass
from typing import Any

from strom.batch.sql.spark_types import Unsupported
from strom.table.errors import ValidationException
from strom.table.planner.plan import PlanNode

RUNNER_KEY = "table.exec.batch.runner"
RUNNERS = ("spark", "strom")
log = logging.getLogger(__name__)

# Session settings the translation relies on: INT arithmetic wraps as in Java (ANSI off), and
# TIMESTAMP_NTZ <-> epoch millis conversions read wall time as UTC, as Strom does.
SESSION_SQL_CONF = {"spark.sql.ansi.enabled": "false", "spark.sql.session.timeZone": "UTC"}


def runner_of(config: Any) -> str:
    """The configured runner, or a one-line error naming the key and its values."""
    value = str(config.get_string(RUNNER_KEY, "spark")).strip().lower()  # the option parses to SPARK/STROM
    if value not in RUNNERS:
        raise ValidationException(f"invalid value {value!r} for {RUNNER_KEY!r}: expected 'spark' or 'strom'")
    return value


@dataclass
class SparkPlan:
    """A plan's result as a Spark DataFrame (columns c0..c{n-1}) and the plan it came from."""

    node: PlanNode
    frame: Any
    spark: Any


def plan_on_spark(nodes: list[PlanNode], config: Any, *, sinks: list[tuple[str, dict[str, str], bool]] | None = None
                  ) -> list[SparkPlan] | None:
    """Every plan of `nodes` as a DataFrame on one Spark session, or None (logged) to run them on Strom."""
    if runner_of(config) != "spark":
        return None
    try:
        for table, options, overwrite in sinks or []:
            from strom.batch.sql.sinks import check_sink

            check_sink(options, overwrite, table)
        _check_bounded(nodes)
        from strom.batch.sql.translate import final_frame, translate

        spark = session(config)
        memo: dict[int, Any] = {}
        return [SparkPlan(n, final_frame(translate(spark, n, memo), n), spark) for n in nodes]
    except Unsupported as e:
        log.info("batch SQL runs on the streaming runtime, not Spark SQL: %s", e)
        return None
    except Exception as e:  # noqa: BLE001 - a translation Spark refuses (analysis) is a reason, not a failure
        log.info("batch SQL runs on the streaming runtime, not Spark SQL: %s: %s", type(e).__name__,
                 str(e).splitlines()[0] if str(e) else "")
        return None


def _check_bounded(nodes: list[PlanNode]) -> None:
    from strom.table.planner.plan import DataStreamScanNode

    stack = list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, DataStreamScanNode):
            raise Unsupported("the plan reads a DataStream (from_data_stream)")
        stack.extend(n.inputs)


def session(config: Any) -> Any:
    """The process's Spark session (strom.batch.spark_session) with the SQL settings this translation needs."""
    from strom.batch.spark_session import SparkUnavailableError, spark_session

    try:
        spark = spark_session(config, "Strom Batch SQL")
    except SparkUnavailableError as e:
        raise Unsupported(str(e)) from None
    for key, value in SESSION_SQL_CONF.items():
        spark.conf.set(key, value)
    if "spark.sql.shuffle.partitions" not in config.to_dict():
        # Spark's 200 shuffle partitions are 200 tasks per stage; a local session has a few cores
        spark.conf.set("spark.sql.shuffle.partitions", str(max(2, spark.sparkContext.defaultParallelism * 2)))
    return spark


def collect_rows(plan: SparkPlan) -> list[Any]:
    """The result rows, insert-only (+I), named as the plan's columns."""
    from strom.common.row import make_row

    names = tuple(plan.node.names())
    return [make_row(list(r), names) for r in plan.frame.collect()]


def spark_plan_text(plan: SparkPlan) -> str:
    """Spark's physical plan of the query (df.explain()'s text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        plan.frame.explain()
    return out.getvalue()
