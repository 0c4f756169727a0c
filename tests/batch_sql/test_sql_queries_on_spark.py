"""The SQL suite's clause-by-clause queries (tests/table/test_sql_vs_duckdb.py) in BATCH mode on Spark SQL:
each gives DuckDB's table over the same rows, and the table the streaming changelog reduces to."""

from __future__ import annotations

import pytest
from strom.common.row import RowKind
from strom.table import TableEnvironment

from tests.table import test_sql_vs_duckdb as suite
from tests.table.reference import duckdb_table, reduce_changelog


@pytest.fixture(scope="module")
def batch_env(spark) -> TableEnvironment:
    return suite._t_env(False)


@pytest.fixture(scope="module")
def streaming_env() -> TableEnvironment:
    return suite._t_env(True)


@pytest.mark.parametrize(("query", "dialect"), suite.QUERIES, ids=[q for q, _ in suite.QUERIES])
def test_batch_on_spark_equals_duckdb_and_the_streaming_changelog(query: str, dialect: str | None, batch_env,
                                                                  streaming_env, fallbacks) -> None:
    with batch_env.execute_sql(query).collect() as rows:
        rows = list(rows)
    assert fallbacks == []  # it ran on Spark SQL
    assert {r.get_row_kind() for r in rows} <= {RowKind.INSERT}
    got = reduce_changelog(rows)
    assert got == duckdb_table({"items": (suite.COLUMNS, suite.ROWS)}, dialect or query)
    if query not in suite.STREAMING_EMPTY:  # streaming emits nothing for a global aggregate of no rows
        with streaming_env.execute_sql(query).collect() as changelog:
            assert reduce_changelog(list(changelog)) == got
