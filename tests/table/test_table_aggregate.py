"""Table aggregate functions (udtaf + flat_aggregate) with PyFlink's Top2 example: the streaming changelog
reduces to DuckDB's top two per group, BATCH is insert-only and equal; one group's changelog by hand."""

from __future__ import annotations

from typing import Any

import pytest
from strom.common.row import Row, RowKind
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment, ValidationException
from strom.table.expressions import col
from strom.table.udf import TableAggregateFunction, udtaf

from .reference import duckdb_table, reduce_changelog

ROWS = [(1, "Hi", "Hello"), (3, "Hi", "hi"), (5, "Hi2", "hi"), (7, "Hi", "Hello"), (2, "Hi", "Hello"),
        (4, "x", "hi"), (9, "y", "yo")]


class Top2(TableAggregateFunction):
    def create_accumulator(self) -> list[Any]:
        return [None, None]

    def accumulate(self, accumulator: list[Any], row: Row) -> None:
        if row[0] is not None:
            if accumulator[0] is None or row[0] > accumulator[0]:
                accumulator[1] = accumulator[0]
                accumulator[0] = row[0]
            elif accumulator[1] is None or row[0] > accumulator[1]:
                accumulator[1] = row[0]

    def emit_value(self, accumulator: list[Any]) -> Any:
        for v in accumulator:
            if v is not None:
                yield Row(v)


TOP2 = udtaf(Top2(), result_type=DataTypes.ROW([DataTypes.FIELD("a", DataTypes.BIGINT())]))


def _table(streaming: bool, parallelism: int = 2) -> Any:
    t_env = TableEnvironment.create(
        EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    return t_env.from_elements(ROWS, ["a", "b", "c"])


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "batch"])
def test_top2_per_group_equals_duckdb(streaming: bool) -> None:
    t = _table(streaming)
    result = t.select(col("a"), col("c")).group_by(col("c")).flat_aggregate(TOP2).select(col("*"))
    with result.execute().collect() as it:
        rows = list(it)
    if not streaming:
        assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}
    want = duckdb_table({"t": ([("a", "BIGINT"), ("b", "VARCHAR"), ("c", "VARCHAR")], ROWS)},
                        "SELECT c, a FROM (SELECT c, a, ROW_NUMBER() OVER (PARTITION BY c ORDER BY a DESC) AS rn "
                        "FROM t) WHERE rn <= 2")
    assert reduce_changelog(rows) == want


def test_changelog_retracts_what_the_group_emitted_before() -> None:
    """Group Hello gets 1, 7, 2: +I 1 | -D 1, +I 7, +I 1 | -D 7, -D 1, +I 7, +I 2 (Flink's GroupTableAggFunction
    retracts the group's previous rows, then emits its new ones)."""
    t = _table(True, 1).where(col("c") == "Hello")
    result = t.select(col("a"), col("c")).group_by(col("c")).flat_aggregate(TOP2.alias("top")).select(col("top"))
    with result.execute().collect() as it:
        got = [(r.get_row_kind(), r[0]) for r in it]
    i, d = RowKind.INSERT, RowKind.DELETE
    assert got == [(i, 1), (d, 1), (i, 7), (i, 1), (d, 7), (d, 1), (i, 7), (i, 2)]


def test_flat_aggregate_refusals() -> None:
    t = _table(True)
    with pytest.raises(ValidationException, match="TableAggregateFunction"):
        udtaf(object(), result_type=DataTypes.BIGINT())
    with pytest.raises(ValidationException, match="returns 1 columns, got 2 names"):
        t.group_by(col("c")).flat_aggregate(TOP2.alias("x", "y"))
    counts = t.group_by(col("c")).select(col("c"), col("a").count.alias("n"))  # an updating input
    with pytest.raises(ValidationException, match="must implement retract"):
        counts.group_by(col("c")).flat_aggregate(TOP2)
