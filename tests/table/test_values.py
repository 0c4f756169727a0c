"""How values print: Java's Double.toString and Flink's CAST(... AS STRING) (hand-written Java outputs)."""

from __future__ import annotations

import datetime
import math

import pytest
from strom.table import DataTypes
from strom.table.planner.values import java_double, java_string, sql_string


@pytest.mark.parametrize(
    ("value", "java"),
    [(1.0, "1.0"), (0.001, "0.001"), (1e7, "1.0E7"), (1.5e-4, "1.5E-4"), (123.456, "123.456"),
     (-2.5e10, "-2.5E10"), (12345678.9, "1.23456789E7"), (0.0, "0.0"), (-0.0, "-0.0"), (math.nan, "NaN"),
     (math.inf, "Infinity"), (-math.inf, "-Infinity"), (9999999.0, "9999999.0")],
)
def test_java_double(value: float, java: str) -> None:
    assert java_double(value) == java


def test_sql_and_java_strings() -> None:
    ts = datetime.datetime(2024, 1, 2, 3, 4, 5, 120000)
    assert sql_string(ts, DataTypes.TIMESTAMP(3)) == "2024-01-02 03:04:05.120"
    assert sql_string(ts, DataTypes.TIMESTAMP(0)) == "2024-01-02 03:04:05"
    assert sql_string(True) == "TRUE" and java_string(True) == "true"
    assert java_string(None) == "null" and java_string(2.0) == "2.0"


def test_batch_table_api_global_aggregate_and_unbounded_source_refused() -> None:
    from strom.table import EnvironmentSettings, TableEnvironment, ValidationException
    from strom.table.expressions import col

    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    table = t_env.from_elements([(1,), (2,), (3,)], ["x"])
    with table.where(col("x") > 5).select(col("x").count, col("x").sum).execute().collect() as rows:
        assert [tuple(r) for r in rows] == [(0, None)]  # one final row, even over no input, as Flink's batch
    t_env.execute_sql("CREATE TABLE endless (id INT) WITH ('connector' = 'datagen')")
    with pytest.raises(ValidationException, match="'endless' is unbounded; batch mode needs bounded sources"):
        t_env.execute_sql("SELECT id FROM endless")


def test_integer_overflow_wraps_as_java() -> None:
    """Flink's INT arithmetic and SUM(INT) overflow in two's complement (Java int), BIGINT likewise."""
    from strom.table import EnvironmentSettings, TableEnvironment

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    schema = DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT()), DataTypes.FIELD("b", DataTypes.BIGINT())])
    t_env.create_temporary_view("t", t_env.from_elements([(2**31 - 1, 2**63 - 1), (1, 1)], schema))
    with t_env.execute_sql("SELECT a + 1, b * 2 FROM t").collect() as rows:
        assert [tuple(r) for r in rows] == [(-(2**31), -2), (2, 2)]
    with t_env.execute_sql("SELECT SUM(a) FROM t").collect() as rows:
        assert [tuple(r) for r in rows][-1] == (-(2**31),)
