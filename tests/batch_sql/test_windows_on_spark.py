"""Window TVF aggregations (TUMBLE, HOP, CUMULATE), the window TVF without aggregation, legacy group windows and
OVER aggregates in BATCH mode on Spark SQL, over a csv table with a rowtime, against DuckDB. The bids are those of
tests/table/test_windows_vs_duckdb.py; BATCH has no late rows, so DuckDB keeps every (row, window) pair."""

from __future__ import annotations

import datetime

import pytest
from strom.table import EnvironmentSettings, TableEnvironment

from tests.table import test_windows_vs_duckdb as suite
from tests.table.reference import duckdb_table, reduce_changelog

_IN = "ts >= ws AND ts < we"
QUERIES = [
    ("SELECT item, window_start, window_end, COUNT(*), SUM(price), MAX(price) "
     "FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY item, window_start, window_end",
     f"SELECT item, ws, we, COUNT(*), SUM(price), MAX(price) FROM bids, {suite._TUMBLE} WHERE {_IN} "
     "GROUP BY item, ws, we"),
    ("SELECT window_start, window_end, SUM(price) AS total, COUNT(DISTINCT item) "
     "FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) "
     "GROUP BY window_start, window_end",
     f"SELECT ws, we, SUM(price), COUNT(DISTINCT item) FROM bids, {suite._HOP} WHERE {_IN} GROUP BY ws, we"),
    ("SELECT item, window_start, window_end, window_time, MIN(price) "
     "FROM TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) "
     "GROUP BY item, window_start, window_end, window_time HAVING COUNT(*) > 1",
     f"SELECT item, ws, we, we - INTERVAL 1 MILLISECOND, MIN(price) FROM bids, {suite._CUMULATE} WHERE {_IN} "
     "GROUP BY item, ws, we HAVING COUNT(*) > 1"),
    ("SELECT item, TUMBLE_START(ts, INTERVAL '10' SECOND) AS ws, TUMBLE_END(ts, INTERVAL '10' SECOND), "
     "SUM(price) FROM bids WHERE price > 1 GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), item",
     f"SELECT item, ws, we, SUM(price) FROM bids, {suite._TUMBLE} WHERE price > 1 AND {_IN} GROUP BY item, ws, we"),
    ("SELECT item, price, window_start, window_end FROM "
     "TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))",
     f"SELECT item, price, ws, we FROM bids, {suite._HOP} WHERE {_IN}"),
    ("SELECT item, price, SUM(price) OVER (PARTITION BY item ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
     "FROM bids",
     "SELECT item, price, SUM(price) OVER (PARTITION BY item ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
     "FROM bids"),
    ("SELECT item, COUNT(*) OVER (PARTITION BY item ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND "
     "CURRENT ROW) FROM bids",
     "SELECT item, COUNT(*) OVER (PARTITION BY item ORDER BY ts RANGE BETWEEN INTERVAL 10 SECOND PRECEDING AND "
     "CURRENT ROW) FROM bids"),
]


@pytest.fixture(scope="module")
def t_env(spark, tmp_path_factory) -> TableEnvironment:
    path = tmp_path_factory.mktemp("bids") / "bids.csv"
    path.write_text("".join(f"{item},{price},{ms}\n" for item, price, ms in suite.BIDS))
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.execute_sql(
        "CREATE TABLE bids (item STRING, price INT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), "
        f"WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH ('connector' = 'filesystem', 'path' = '{path}', "
        "'format' = 'csv')")
    return t_env


def _duckdb(sql: str) -> object:
    rows = [(item, price, suite.EPOCH + datetime.timedelta(milliseconds=ms)) for item, price, ms in suite.BIDS]
    return duckdb_table({"bids": ([("item", "VARCHAR"), ("price", "INTEGER"), ("ts", "TIMESTAMP")], rows)}, sql)


@pytest.mark.parametrize(("query", "reference"), QUERIES,
                         ids=["tumble", "hop", "cumulate", "legacy-tumble", "hop-tvf-rows", "over-rows", "over-range"])
def test_windows_on_spark_equal_duckdb(t_env, fallbacks, query: str, reference: str) -> None:
    with t_env.execute_sql(query).collect() as rows:
        got = reduce_changelog(list(rows))
    assert fallbacks == []
    assert got == _duckdb(reference)
