"""The generated GROUP BY and join queries of the property tests (tests/table/test_group_by_properties.py,
test_join_properties.py) in BATCH mode on Spark SQL, against DuckDB over the same generated rows."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strom.table import EnvironmentSettings, TableEnvironment

from tests.table import test_group_by_properties as group_by
from tests.table import test_join_properties as joins
from tests.table.reference import duckdb_table, reduce_changelog


def _batch_env() -> TableEnvironment:
    return TableEnvironment.create(EnvironmentSettings.in_batch_mode())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(rows=st.lists(group_by.ROW, min_size=0, max_size=30), aggs=group_by.AGGREGATES, having=st.booleans())
def test_group_by_on_spark_matches_duckdb(spark, fallbacks, rows: list[tuple], aggs: list[str], having: bool) -> None:
    sql = f"SELECT k, {', '.join(aggs)} FROM t GROUP BY k" + (" HAVING COUNT(*) > 1" if having else "")
    t_env = _batch_env()
    t_env.create_temporary_view("t", t_env.from_elements(rows or [("a", 1, 1.0)], group_by.SCHEMA))
    if not rows:  # an empty input: the same query over a filter that keeps nothing
        sql = sql.replace("FROM t", "FROM (SELECT * FROM t WHERE v > 1000) AS t")
    with t_env.execute_sql(sql).collect() as result:
        got = reduce_changelog(list(result))
    assert fallbacks == []
    assert got == duckdb_table({"t": (group_by.COLUMNS, rows)}, sql.replace(
        "(SELECT * FROM t WHERE v > 1000) AS t", "t"))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(rows=st.lists(group_by.ROW, min_size=1, max_size=30))
def test_aggregation_of_an_aggregation_on_spark_matches_duckdb(spark, fallbacks, rows: list[tuple]) -> None:
    sql = ("SELECT c, COUNT(*), SUM(s), MIN(k), MAX(s) FROM "
           "(SELECT k, COUNT(v) AS c, SUM(v) AS s FROM t GROUP BY k) GROUP BY c")
    t_env = _batch_env()
    t_env.create_temporary_view("t", t_env.from_elements(rows, group_by.SCHEMA))
    with t_env.execute_sql(sql).collect() as result:
        got = reduce_changelog(list(result))
    assert fallbacks == []
    assert got == duckdb_table({"t": (group_by.COLUMNS, rows)}, sql)


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(left=st.lists(joins.ROW, min_size=1, max_size=12), right=st.lists(joins.ROW, min_size=1, max_size=12),
       kind=joins.KINDS, condition=joins.CONDITIONS, source=joins.SOURCES)
def test_joins_on_spark_match_duckdb(spark, fallbacks, left: list[tuple], right: list[tuple], kind: str,
                                     condition: str, source: str) -> None:
    sql = f"SELECT l.k, l.v, r.k, r.v FROM {source} {kind} r ON {condition}"
    t_env = _batch_env()
    t_env.create_temporary_view("l", t_env.from_elements(left, joins.SCHEMA))
    t_env.create_temporary_view("r", t_env.from_elements(right, joins.SCHEMA))
    with t_env.execute_sql(sql).collect() as result:
        got = reduce_changelog(list(result))
    assert fallbacks == []
    assert got == duckdb_table({"l": (joins.COLUMNS, left), "r": (joins.COLUMNS, right)}, sql)
