"""The JDBC SQL sink under the planner's changelog rules (Flink's): an updating query into a table without a
primary key is refused before the job, and nothing is written."""

from __future__ import annotations

from collections import Counter

import pytest
from strom.table.errors import TableException

from tests.connectors.test_jdbc_sql import pg_execute, pg_rows, table_env, with_options


def test_an_updating_query_into_a_table_without_primary_key_is_refused(postgres, table_name):
    pg_execute(postgres, f"CREATE TABLE {table_name} (k INT, n BIGINT)")
    t_env = table_env()
    t_env.create_temporary_view("events", t_env.from_elements([(1, 2)], ["k", "v"]))
    t_env.execute_sql(f"CREATE TABLE plain (k INT, n BIGINT) WITH ({with_options(postgres, table_name)})")
    with pytest.raises(TableException, match="doesn't support consuming update changes"):
        t_env.execute_sql("INSERT INTO plain SELECT k, COUNT(*) FROM events GROUP BY k")
    assert pg_rows(postgres, f"SELECT * FROM {table_name}") == []


def test_rows_deleted_from_the_result_are_deleted_from_the_table(postgres, table_name):
    """A HAVING that a group stops meeting retracts its row: Flink keeps -U after a filtering Calc (FLINK-9528)
    and the upsert sink deletes the key on it."""
    events = [(k, 1) for k in range(10)] + [(k, 1) for k in range(0, 10, 2)]
    pg_execute(postgres, f"CREATE TABLE {table_name} (k INT PRIMARY KEY, n BIGINT)")
    t_env = table_env()
    t_env.create_temporary_view("events", t_env.from_elements(events, ["k", "v"]))
    t_env.execute_sql(f"CREATE TABLE odd_once (k INT, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) "
                      f"WITH ({with_options(postgres, table_name)})")
    t_env.execute_sql("INSERT INTO odd_once SELECT k, COUNT(*) FROM events GROUP BY k HAVING COUNT(*) < 2") \
        .wait(120_000)
    reference = {k: n for k, n in Counter(k for k, _ in events).items() if n < 2}
    assert dict(pg_rows(postgres, f"SELECT k, n FROM {table_name}")) == reference
