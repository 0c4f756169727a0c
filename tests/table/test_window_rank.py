"""Window Top-N and window deduplication: ROW_NUMBER()/RANK() partitioned by window_start, window_end over a
window aggregation or a window TVF, insert-only (one emission per window at its end), equal DuckDB over the
same bids with the late rows of test_windows_vs_duckdb dropped as Flink drops them."""

from __future__ import annotations

from typing import Any

import pytest
from strom.common.row import RowKind

from .reference import reduce_changelog
from .test_windows_vs_duckdb import _ON_TIME, _TUMBLE, _duckdb, _t_env

AGG = ("(SELECT window_start, window_end, item, SUM(price) AS total, COUNT(*) AS cnt FROM "
       "TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, item)")
AGG_REF = (f"(SELECT ws AS window_start, we AS window_end, item, SUM(price) AS total, COUNT(*) AS cnt "
           f"FROM bids, {_TUMBLE} WHERE {_ON_TIME} GROUP BY ws, we, item)")
TVF = "TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
TVF_REF = (f"(SELECT item, price, ts, ws AS window_start, we AS window_end FROM bids, {_TUMBLE} WHERE {_ON_TIME})")

CASES = [
    ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY total DESC, item) "
     "AS rn FROM {src}) WHERE rn <= 2", AGG, AGG_REF),
    ("SELECT window_start, item, total FROM (SELECT *, RANK() OVER (PARTITION BY window_start, window_end "
     "ORDER BY cnt DESC) AS r FROM {src}) WHERE r <= 1", AGG, AGG_REF),
    ("SELECT item, price, window_start, rn FROM (SELECT item, price, window_start, window_end, ROW_NUMBER() OVER "
     "(PARTITION BY window_start, window_end ORDER BY price DESC, item) AS rn FROM {src}) WHERE rn <= 3", TVF,
     TVF_REF),
    # window deduplication: the last bid of each window (Flink keeps the row with the latest rowtime)
    ("SELECT item, price, ts, window_start FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
     "ORDER BY ts DESC) AS rn FROM {src}) WHERE rn = 1", TVF, TVF_REF),
]


def _rows(sql: str, parallelism: int) -> Any:
    t_env = _t_env()
    t_env.get_config().set("parallelism.default", str(parallelism))
    with t_env.execute_sql(sql).collect() as it:
        rows = list(it)
    assert {r.get_row_kind() for r in rows} <= {RowKind.INSERT}  # a window rank is insert-only
    return reduce_changelog(rows)


@pytest.mark.parametrize(("query", "source", "reference"), CASES, ids=["top2-agg", "rank-agg", "top3-tvf", "dedup"])
def test_window_rank_equals_duckdb(query: str, source: str, reference: str) -> None:
    # over the TVF directly, lateness is decided where the rows are ranked: one subtask sees the watermarks in
    # the source's order (with several, a row may overtake a watermark on another channel)
    parallelism = 2 if source is AGG else 1
    got = _rows(query.format(src=source), parallelism)
    assert got == _duckdb(query.format(src=reference))
    assert got  # the windows are not empty


def test_window_top_n_is_planned_as_a_window_rank() -> None:
    text = list(_t_env().execute_sql("EXPLAIN " + CASES[0][0].format(src=AGG)).collect())[0][0]
    assert "WindowRank(rankType=[ROW_NUMBER]" in text


@pytest.mark.parametrize(("direction", "kept"), [("DESC", "second"), ("ASC", "first")])
def test_window_deduplication_ties_keep_first_or_last_arrival(direction: str, kept: str) -> None:
    """Two rows with the same rowtime in one window: keep-last (DESC) keeps the later arrival, keep-first
    (ASC) the earlier, as Flink's deduplication compares rowtimes (>= replaces for keep-last)."""
    from strom.common.typeinfo import Types
    from strom.datastream import StreamExecutionEnvironment
    from strom.table import Schema, StreamTableEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    t_env = StreamTableEnvironment.create(env)
    rows = [("first", 1000), ("second", 1000), ("later", 12000)]
    ds = env.from_collection(rows, type_info=Types.ROW_NAMED(["name", "ms"], [Types.STRING(), Types.LONG()]))
    schema = (Schema.new_builder().column_by_expression("ts", "TO_TIMESTAMP_LTZ(ms, 3)")
              .watermark("ts", "ts - INTERVAL '1' SECOND").build())
    t_env.create_temporary_view("t", t_env.from_data_stream(ds.set_parallelism(1), schema))
    sql = (f"SELECT name FROM (SELECT name, window_start, window_end, ROW_NUMBER() OVER (PARTITION BY window_start, "
           f"window_end ORDER BY ts {direction}) AS rn FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' "
           f"SECOND))) WHERE rn = 1")
    with t_env.execute_sql(sql).collect() as it:
        got = sorted(r[0] for r in it)
    assert got == sorted([kept, "later"])


def test_window_rank_and_join_over_processing_time_windows_are_refused() -> None:
    from strom.table.errors import NotSupportedYet

    t_env = _t_env()
    t_env.execute_sql("CREATE TABLE p (k INT, pt AS PROCTIME()) WITH ('connector' = 'datagen', 'number-of-rows' = '3')")
    tvf = "(SELECT * FROM TABLE(TUMBLE(TABLE p, DESCRIPTOR(pt), INTERVAL '10' SECOND)))"
    with pytest.raises(NotSupportedYet, match="processing-time windows"):
        t_env.sql_query(f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
                        f"ORDER BY k) AS rn FROM {tvf}) WHERE rn <= 1")
    with pytest.raises(NotSupportedYet, match="processing-time windows"):
        t_env.sql_query(f"SELECT a.k FROM {tvf} a JOIN {tvf} b ON a.k = b.k AND a.window_start = b.window_start "
                        "AND a.window_end = b.window_end")
