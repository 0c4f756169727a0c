"""Property test: regular joins over generated inputs (duplicates, NULL keys, residual conditions, an
updating input) equal DuckDB's result — streaming changelogs reduced to a table, and BATCH."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment

from .reference import duckdb_table, reduce_changelog

ROW = st.tuples(st.one_of(st.none(), st.integers(min_value=0, max_value=4)),
                st.one_of(st.none(), st.integers(min_value=-5, max_value=5)))
KINDS = st.sampled_from(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN"])
CONDITIONS = st.sampled_from(["l.k = r.k", "l.k = r.k AND l.v < r.v", "r.k = l.k AND l.v <> 0"])
SOURCES = st.sampled_from(["l", "(SELECT k, COUNT(*) AS v FROM l GROUP BY k) AS l"])
SCHEMA = DataTypes.ROW([DataTypes.FIELD("k", DataTypes.INT()), DataTypes.FIELD("v", DataTypes.INT())])
COLUMNS = [("k", "INTEGER"), ("v", "INTEGER")]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(left=st.lists(ROW, max_size=12), right=st.lists(ROW, max_size=12), kind=KINDS, condition=CONDITIONS,
       source=SOURCES, streaming=st.booleans(), parallelism=st.integers(min_value=1, max_value=3))
def test_joins_match_duckdb(left: list[tuple], right: list[tuple], kind: str, condition: str, source: str,
                            streaming: bool, parallelism: int) -> None:
    sql = f"SELECT l.k, l.v, r.k, r.v FROM {source} {kind} r ON {condition}"
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                    else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    t_env.create_temporary_view("l", t_env.from_elements(left, SCHEMA))
    t_env.create_temporary_view("r", t_env.from_elements(right, SCHEMA))
    with t_env.execute_sql(sql).collect() as result:
        got = reduce_changelog(list(result))
    assert got == duckdb_table({"l": (COLUMNS, left), "r": (COLUMNS, right)}, sql)
