"""SESSION windows (the window TVF with PARTITION BY, the legacy `GROUP BY SESSION(ts, gap)` and the Table
API's Session.with_gap) against sessions worked out in plain Python, over out-of-order input with late rows.

The reference follows Flink's merging window operator row by row: before a row, the watermark it meets
(`ts - 2 s` over the rows before it, as in test_windows_vs_duckdb) fires every session whose end - 1 ms is
at or behind it; the row's own window [ts, ts + gap) merges with every live session of its key it overlaps
or touches, and the row is late (dropped) only when the merged window's end - 1 ms is at or behind the
watermark (Flink checks the merged window: a late row that touches a live session extends it).
"""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

import pytest
from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.datastream import StreamExecutionEnvironment
from strom.table import DataTypes, Schema, StreamTableEnvironment, ValidationException
from strom.table.errors import NotSupportedYet
from strom.table.expressions import col, lit
from strom.table.udf import AggregateFunction, udaf
from strom.table.window import Session

from .reference import reduce_changelog
from .test_windows_vs_duckdb import BIDS, DELAY_MS, EPOCH, _t_env

GAP_MS = 3000


def _sessions(key_of: Any) -> list[tuple[Any, int, int, list[tuple[str, int, int]]]]:
    """Fired sessions (key, start ms, end ms, rows) as Flink's session window operator fires them."""
    live: dict[Any, list[list[Any]]] = {}  # key -> [[start, end, rows], ..]
    fired = []
    highest = None

    def fire(watermark: float) -> None:
        for key, sessions in live.items():
            for s in [s for s in sessions if s[1] - 1 <= watermark]:
                fired.append((key, s[0], s[1], s[2]))
                sessions.remove(s)

    for row in BIDS:
        ms = row[2]
        watermark = -float("inf") if highest is None else highest - DELAY_MS
        fire(watermark)
        highest = ms if highest is None else max(highest, ms)
        start, end = ms, ms + GAP_MS
        sessions = live.setdefault(key_of(row), [])
        merged = [s for s in sessions if s[0] <= end and start <= s[1]]
        rows = [row]
        for s in merged:
            start, end, rows = min(start, s[0]), max(end, s[1]), rows + s[2]
        if end - 1 <= watermark:
            continue  # late: the (merged) window is behind the watermark
        for s in merged:
            sessions.remove(s)
        sessions.append([start, end, rows])
    fire(float("inf"))
    return fired


def _ts(ms: int) -> datetime.datetime:
    return EPOCH + datetime.timedelta(milliseconds=ms)


def _final_rows(result: Any) -> Counter:
    with result.collect() as rows:
        rows = list(rows)
    assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}  # window aggregation is insert-only
    return reduce_changelog(rows)


def test_sessions_by_hand_merge_and_drop_late_rows() -> None:
    """The reference itself, by hand for item B (gap 3 s): B@3000 -> [3, 6) fires at watermark 12000;
    B@11000 -> [11, 14); B@7000 arrives at watermark 12000: [7, 10) is late, dropped; B@18000 -> [18, 21);
    B@9000 late; fired: [3, 6) 1 row, [11, 14) 1 row, [18, 21) 1 row."""
    got = sorted((s, e, len(rows)) for k, s, e, rows in _sessions(lambda r: r[0]) if k == "B")
    assert got == [(3000, 6000, 1), (11000, 14000, 1), (18000, 21000, 1)]
    # without a key, rows of every item bridge gaps: C@2000 joins A@1000 and B@3000 into [1, 6); B@7000,
    # behind the watermark 12000 on its own, touches the live [8, 17) and extends it to [7, 17)
    fired = {(k, s, e, len(rows)) for k, s, e, rows in _sessions(lambda r: None)}
    assert {(None, 1000, 6000, 3), (None, 7000, 19000, 6)} <= fired


def _per_item(with_time: bool = False) -> Counter:
    out: Counter = Counter()
    for key, s, e, rows in _sessions(lambda r: r[0]):
        extra = (_ts(e - 1),) if with_time else ()
        out[(key, _ts(s), _ts(e), *extra, len(rows), sum(r[1] for r in rows))] += 1
    return out


def test_session_window_tvf_with_partition_by_equals_plain_python() -> None:
    got = _final_rows(_t_env().execute_sql(
        "SELECT item, window_start, window_end, COUNT(*), SUM(price) "
        "FROM TABLE(SESSION(TABLE bids PARTITION BY item, DESCRIPTOR(ts), INTERVAL '3' SECOND)) "
        "GROUP BY item, window_start, window_end"))
    assert got == _per_item()


def test_session_partition_by_in_parentheses_and_several_columns_parse() -> None:
    from strom.table.sql.flink_syntax import WINDOW_TVFS, extract_window_tvfs
    from strom.table.sql.parser import parse_expression

    for listed in ("(item, price)", "item, price"):
        text = extract_window_tvfs(f"SELECT * FROM TABLE(SESSION(TABLE bids PARTITION BY {listed}, DESCRIPTOR(ts), "
                                   "INTERVAL '3' SECOND))", parse_expression)
        name = text.split("FROM ")[1].split()[0]
        assert WINDOW_TVFS[name].partition == ["item", "price"] and WINDOW_TVFS[name].size == 3000


def test_session_window_tvf_without_partition_merges_across_items() -> None:
    got = _final_rows(_t_env().execute_sql(
        "SELECT window_start, window_end, COUNT(*), MAX(price) "
        "FROM TABLE(SESSION(TABLE bids, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY window_start, window_end"))
    want = Counter((_ts(s), _ts(e), len(rows), max(r[1] for r in rows)) for _, s, e, rows in _sessions(lambda r: 0))
    assert got == want


def test_legacy_group_by_session_with_start_end_rowtime() -> None:
    got = _final_rows(_t_env().execute_sql(
        "SELECT item, SESSION_START(ts, INTERVAL '3' SECOND), SESSION_END(ts, INTERVAL '3' SECOND), "
        "SESSION_ROWTIME(ts, INTERVAL '3' SECOND), COUNT(*), SUM(price) FROM bids "
        "GROUP BY SESSION(ts, INTERVAL '3' SECOND), item"))
    assert got == _per_item(with_time=True)


def test_table_api_session_with_gap() -> None:
    bids = _t_env().from_path("bids")
    windowed = bids.window(Session.with_gap(lit(3).seconds).on(col("ts")).alias("w")).group_by(col("w"), col("item"))
    got = _final_rows(windowed.select(col("item"), col("w").start, col("w").end, col("price").count,
                                      col("price").sum).execute())
    assert got == _per_item()


@pytest.mark.parametrize(("sql", "error", "needle"), [
    ("SELECT window_start, window_end, COUNT(*) FROM TABLE(SESSION(TABLE bids PARTITION BY item, DESCRIPTOR(ts), "
     "INTERVAL '3' SECOND)) GROUP BY window_start, window_end", ValidationException, "PARTITION BY column 'item'"),
    ("SELECT * FROM TABLE(SESSION(TABLE bids, DESCRIPTOR(ts), INTERVAL '3' SECOND))", NotSupportedYet,
     "without a window aggregation"),
    ("SELECT TUMBLE_START(ts, INTERVAL '3' SECOND), COUNT(*) FROM bids GROUP BY SESSION(ts, INTERVAL '3' SECOND)",
     ValidationException, "does not match the group window"),
    ("SELECT COUNT(*) FROM bids GROUP BY SESSION(price, INTERVAL '3' SECOND)", ValidationException,
     "not a time attribute"),
])
def test_session_window_errors(sql: str, error: type, needle: str) -> None:
    with pytest.raises(error, match=needle):
        _t_env().execute_sql(sql)


class _PriceSum(AggregateFunction):
    def create_accumulator(self) -> list[int]:
        return [0]

    def accumulate(self, accumulator: list[int], price: int) -> None:
        accumulator[0] += price

    def get_value(self, accumulator: list[int]) -> int:
        return accumulator[0]


class _MergingPriceSum(_PriceSum):
    def merge(self, accumulator: list[int], accumulators: list[list[int]]) -> None:
        for other in accumulators:
            accumulator[0] += other[0]


def test_python_aggregate_function_merges_with_sessions() -> None:
    """A row bridging two live sessions merges their accumulators (merge(acc, [others]), as Flink requires).
    By hand (gap 3 s, watermark 2 s behind): X@1000 -> [1, 4), X@5000 -> [5, 8), X@3500 arrives at watermark
    3000 (both live) and bridges them into [1, 8) with 1 + 2 + 4; X@20000 -> [20, 23). A function without
    merge fails the job naming what to implement."""
    env = StreamExecutionEnvironment.get_execution_environment()
    t_env = StreamTableEnvironment.create(env)
    rows = [("X", 1, 1000), ("X", 2, 5000), ("X", 4, 3500), ("X", 8, 20000)]
    ds = env.from_collection(rows, type_info=Types.ROW_NAMED(["item", "price", "ms"],
                                                               [Types.STRING(), Types.INT(), Types.LONG()]))
    schema = (Schema.new_builder().column_by_expression("ts", "TO_TIMESTAMP_LTZ(ms, 3)")
              .watermark("ts", "ts - INTERVAL '2' SECOND").build())
    t_env.create_temporary_view("x", t_env.from_data_stream(ds.set_parallelism(1), schema))
    t_env.create_temporary_function("psum", udaf(_MergingPriceSum(), result_type=DataTypes.INT()))
    query = ("SELECT window_start, window_end, COUNT(*), psum(price) FROM TABLE(SESSION(TABLE x PARTITION BY item, "
             "DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY item, window_start, window_end")
    assert _final_rows(t_env.execute_sql(query)) == Counter({(_ts(1000), _ts(8000), 3, 7): 1,
                                                             (_ts(20000), _ts(23000), 1, 8): 1})
    t_env.create_temporary_function("nomerge", udaf(_PriceSum(), result_type=DataTypes.INT()))
    with pytest.raises(Exception, match="must implement merge"):
        _final_rows(t_env.execute_sql(query.replace("psum(", "nomerge(")))
