"""Property test: GROUP BY aggregates over generated inputs equal DuckDB's, in streaming (changelog reduced
to a table, also through a second aggregation that consumes retractions) and in batch."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment

from .reference import duckdb_table, reduce_changelog

ROW = st.tuples(
    st.sampled_from(["a", "b", "c", "d", None]),
    st.one_of(st.none(), st.integers(min_value=-50, max_value=50)),
    st.one_of(st.none(), st.floats(min_value=-100, max_value=100, allow_nan=False).map(lambda f: round(f, 2))),
)
AGGREGATES = st.lists(
    st.sampled_from(["COUNT(*)", "COUNT(v)", "SUM(v)", "MIN(v)", "MAX(v)", "COUNT(DISTINCT v)", "SUM(DISTINCT v)",
                     "AVG(d)", "MIN(d)", "MAX(d)", "SUM(d)"]),
    min_size=1,
    max_size=4,
    unique=True,
)
SCHEMA = DataTypes.ROW([DataTypes.FIELD("k", DataTypes.STRING()), DataTypes.FIELD("v", DataTypes.INT()),
                        DataTypes.FIELD("d", DataTypes.DOUBLE())])
COLUMNS = [("k", "VARCHAR"), ("v", "INTEGER"), ("d", "DOUBLE")]


def _run(rows: list[tuple], sql: str, streaming: bool, parallelism: int) -> object:
    t_env = TableEnvironment.create(
        EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    )
    t_env.get_config().set("parallelism.default", str(parallelism))
    t_env.create_temporary_view("t", t_env.from_elements(rows, SCHEMA))
    with t_env.execute_sql(sql).collect() as result:
        return reduce_changelog(list(result))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(ROW, min_size=1, max_size=30), aggs=AGGREGATES, streaming=st.booleans(),
       parallelism=st.integers(min_value=1, max_value=3), having=st.booleans())
def test_group_by_matches_duckdb(rows: list[tuple], aggs: list[str], streaming: bool, parallelism: int,
                                 having: bool) -> None:
    sql = f"SELECT k, {', '.join(aggs)} FROM t GROUP BY k" + (" HAVING COUNT(*) > 1" if having else "")
    expected = duckdb_table({"t": (COLUMNS, rows)}, sql)
    assert _run(rows, sql, streaming, parallelism) == expected


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(ROW, min_size=1, max_size=30), parallelism=st.integers(min_value=1, max_value=3))
def test_aggregation_over_an_updating_input_matches_duckdb(rows: list[tuple], parallelism: int) -> None:
    sql = ("SELECT c, COUNT(*), SUM(s), MIN(k), MAX(s) FROM "
           "(SELECT k, COUNT(v) AS c, SUM(v) AS s FROM t GROUP BY k) GROUP BY c")
    expected = duckdb_table({"t": (COLUMNS, rows)}, sql)
    assert _run(rows, sql, True, parallelism) == expected
