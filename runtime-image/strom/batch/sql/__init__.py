"""BATCH SQL on Spark SQL: a bounded Table/SQL plan in batch mode runs as Spark DataFrame operations.

The TableEnvironment (batch mode) hands its validated plan here: `run_query` for a SELECT,
`run_inserts` for INSERTs and statement sets, `explain` for EXPLAIN's Spark plan. Each returns None
when the plan should run on the streaming runtime instead (`table.exec.batch.runner` = 'strom', a
DataStream input, a node, function, type, source or sink with no faithful translation: logged at INFO
with the reason). Modules: runner (choice, session, collection), translate (plan nodes), expressions
and aggregates (Flink's function semantics in Spark), sources, sinks, spark_types.

pyspark is imported only when a plan runs here.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from strom.batch.sql.runner import RUNNER_KEY, collect_rows, plan_on_spark, spark_plan_text

__all__ = ["RUNNER_KEY", "explain", "run_inserts", "run_query"]


def _config(t_env: Any) -> Any:
    return t_env.get_config().get_configuration()


def run_query(t_env: Any, node: Any) -> Any:
    """A SELECT's TableResult computed by Spark when collected, or None (run it on Strom)."""
    from strom.table.table_result import ResultKind, TableResult

    plans = plan_on_spark([node], _config(t_env))
    if plans is None:
        return None
    plan = plans[0]

    def start() -> Any:
        from strom.table.table_result import _ListIterator

        return _ListIterator(collect_rows(plan))

    return TableResult(list(node.columns), ResultKind.SUCCESS_WITH_CONTENT, start=start, streaming=False)


def run_inserts(t_env: Any, checked: list[tuple[Any, Any, bool]]) -> Any:
    """INSERTs (catalog table, fitted plan, overwrite) run by Spark now, or None (run them on Strom)."""
    from strom.batch.sql import sinks
    from strom.common.row import Row
    from strom.table.sql.catalog import CATALOG, DATABASE
    from strom.table.table_result import ResultKind, TableResult
    from strom.table.types import DataTypes

    plans = plan_on_spark([n for _, n, _ in checked], _config(t_env),
                          sinks=[(obj.name, obj.options, o) for obj, _, o in checked])
    if plans is None:
        return None
    from strom.common.job_client import JobClient

    names = []
    started = time.monotonic()
    for (obj, _, _), plan in zip(checked, plans, strict=True):
        sinks.write(plan.frame, table=obj.name, columns=list(obj.columns), options=dict(obj.options),
                    partition_keys=tuple(obj.partition_keys))
        names.append(f"{CATALOG}.{DATABASE}.{obj.name}")
    job = _FinishedSparkInsert(uuid.uuid4().hex, int((time.monotonic() - started) * 1000))
    return TableResult([(n, DataTypes.BIGINT(False)) for n in names], ResultKind.SUCCESS_WITH_CONTENT,
                       rows=[Row(*([-1] * len(names)))], job_client=JobClient(job))


class _FinishedSparkInsert:
    """The job client of INSERTs Spark has already written (execute_sql returns after Spark's actions):
    FINISHED, its wait returns at once."""

    def __init__(self, job_id: str, net_runtime_ms: int) -> None:
        self.job_id, self.net_runtime_ms = job_id, net_runtime_ms

    def get_job_id(self) -> str:
        return self.job_id

    def get_job_status(self) -> str:
        return "FINISHED"

    def cancel(self) -> None:  # nothing runs any more
        pass

    def wait(self, timeout: float | None = None) -> Any:
        from strom.common.job_execution_result import JobExecutionResult

        return JobExecutionResult(self.job_id, self.net_runtime_ms)


def explain(t_env: Any, node: Any) -> str:
    """'== Spark Physical Plan ==' and Spark's plan for a plan that runs on Spark, else ''."""
    plans = plan_on_spark([node], _config(t_env))
    if plans is None:
        return ""
    return "\n== Spark Physical Plan ==\n" + spark_plan_text(plans[0])
