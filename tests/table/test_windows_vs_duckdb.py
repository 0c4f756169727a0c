"""Window TVFs (TUMBLE, HOP, CUMULATE), legacy group windows and the Table API's Tumble/Slide against
DuckDB, over out-of-order input with a bounded watermark delay and late rows.

Lateness, as Flink decides it: the watermark is `ts - INTERVAL '2' SECOND` over the highest row seen, and
a row is dropped from a window whose end - 1 ms is at or behind the watermark when the row arrives. The
watermark each row meets is worked out in plain Python below (the source is one subtask and event time
advances in whole seconds, so every advance is emitted before the next row); DuckDB then computes the
windows itself and keeps a (row, window) pair only when that window was not late for the row.
"""

from __future__ import annotations

import datetime

import pytest
from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.datastream import StreamExecutionEnvironment
from strom.table import Schema, StreamTableEnvironment, ValidationException
from strom.table.expressions import col, lit
from strom.table.window import Slide, Tumble

from .reference import duckdb_table, reduce_changelog

DELAY_MS = 2000
# (item, price, event time in ms): out of order within the delay, and three late rows (marked)
BIDS = [
    ("A", 4, 1000),
    ("B", 2, 3000),
    ("C", 5, 2000),
    ("A", 1, 8000),
    ("B", 3, 11000),
    ("C", 6, 9500),  # out of order, within the delay: watermark 9000 has not passed [0, 10)'s end
    ("A", 7, 14000),
    ("B", 1, 7000),  # late for [0, 10) (watermark 12000); for HOP it still counts in [5, 15)
    ("C", 2, 16000),
    ("A", 8, 22000),
    ("B", 9, 18000),  # late for [10, 20) (watermark 20000)
    ("C", 3, 27000),
    ("A", 5, 21000),  # within [20, 30), not late (watermark 25000)
    ("B", 4, 9000),  # late for every window containing it
    ("C", 1, 31000),
]

EPOCH = datetime.datetime(1970, 1, 1)


def _watermark_before_each_row() -> list[datetime.datetime | None]:
    out: list[datetime.datetime | None] = []
    highest = None
    for _, _, ms in BIDS:
        out.append(None if highest is None else EPOCH + datetime.timedelta(milliseconds=highest - DELAY_MS))
        highest = ms if highest is None else max(highest, ms)
    return out


def _duckdb(sql: str) -> object:
    rows = [(item, price, EPOCH + datetime.timedelta(milliseconds=ms), wm)
            for (item, price, ms), wm in zip(BIDS, _watermark_before_each_row(), strict=True)]
    columns = [("item", "VARCHAR"), ("price", "INTEGER"), ("ts", "TIMESTAMP"), ("wm", "TIMESTAMP")]
    return duckdb_table({"bids": (columns, rows)}, sql)


# DuckDB's windows: every candidate window over the data's range, joined to the rows it holds; a pair is
# kept when the window was not late for the row
_TUMBLE = "(SELECT s AS ws, s + INTERVAL 10 SECOND AS we FROM generate_series(TIMESTAMP '1970-01-01', " \
          "TIMESTAMP '1970-01-01 00:01:00', INTERVAL 10 SECOND) g(s))"
_HOP = "(SELECT s AS ws, s + INTERVAL 10 SECOND AS we FROM generate_series(TIMESTAMP '1969-12-31 23:59:50', " \
       "TIMESTAMP '1970-01-01 00:01:00', INTERVAL 5 SECOND) g(s))"
_CUMULATE = "(SELECT s AS ws, s + to_seconds(k * 5) AS we FROM generate_series(TIMESTAMP '1970-01-01', " \
            "TIMESTAMP '1970-01-01 00:01:00', INTERVAL 10 SECOND) g(s), range(1, 3) r(k))"
_ON_TIME = "ts >= ws AND ts < we AND (wm IS NULL OR we - INTERVAL 1 MILLISECOND > wm)"


def _t_env() -> StreamTableEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    ds = env.from_collection(BIDS, type_info=Types.ROW_NAMED(["item", "price", "ms"],
                                                               [Types.STRING(), Types.INT(), Types.LONG()]))
    schema = (Schema.new_builder()
              .column_by_expression("ts", "TO_TIMESTAMP_LTZ(ms, 3)")
              .watermark("ts", f"ts - INTERVAL '{DELAY_MS // 1000}' SECOND")
              .build())
    t_env.create_temporary_view("bids", t_env.from_data_stream(ds, schema))
    return t_env


def _final_rows(result: object) -> object:
    with result.collect() as rows:  # type: ignore[attr-defined]
        rows = list(rows)
    assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}  # window aggregation is insert-only
    return reduce_changelog(rows)


QUERIES = [
    (
        "SELECT item, window_start, window_end, COUNT(*), SUM(price), MAX(price) "
        "FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
        "GROUP BY item, window_start, window_end",
        f"SELECT item, ws, we, COUNT(*), SUM(price), MAX(price) FROM bids, {_TUMBLE} WHERE {_ON_TIME} "
        "GROUP BY item, ws, we",
    ),
    (
        "SELECT window_start, window_end, SUM(price) AS total, COUNT(DISTINCT item) "
        "FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) "
        "GROUP BY window_start, window_end",
        f"SELECT ws, we, SUM(price), COUNT(DISTINCT item) FROM bids, {_HOP} WHERE {_ON_TIME} GROUP BY ws, we",
    ),
    (
        "SELECT item, window_start, window_end, window_time, MIN(price) "
        "FROM TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) "
        "GROUP BY item, window_start, window_end, window_time HAVING COUNT(*) > 1",
        f"SELECT item, ws, we, we - INTERVAL 1 MILLISECOND, MIN(price) FROM bids, {_CUMULATE} WHERE {_ON_TIME} "
        "GROUP BY item, ws, we HAVING COUNT(*) > 1",
    ),
    (
        "SELECT item, TUMBLE_START(ts, INTERVAL '10' SECOND) AS ws, TUMBLE_END(ts, INTERVAL '10' SECOND), "
        "SUM(price) FROM bids WHERE price > 1 GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), item",
        f"SELECT item, ws, we, SUM(price) FROM bids, {_TUMBLE} WHERE price > 1 AND {_ON_TIME} GROUP BY item, ws, we",
    ),
    (
        "SELECT HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND), COUNT(*) FROM bids "
        "GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
        f"SELECT ws, COUNT(*) FROM bids, {_HOP} WHERE {_ON_TIME} GROUP BY ws",
    ),
    (  # aggregate FILTER clauses in a window aggregation (Nexmark q15-q17), DISTINCT + FILTER included
        "SELECT window_start, COUNT(*) FILTER (WHERE price < 5), SUM(price) FILTER (WHERE item <> 'A'), "
        "COUNT(DISTINCT item) FILTER (WHERE price >= 3), MAX(price) FILTER (WHERE price > 100) "
        "FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
        "SELECT ws, COUNT(*) FILTER (WHERE price < 5), SUM(price) FILTER (WHERE item <> 'A'), "
        f"COUNT(DISTINCT item) FILTER (WHERE price >= 3), MAX(price) FILTER (WHERE price > 100) FROM bids, {_TUMBLE} "
        f"WHERE {_ON_TIME} GROUP BY ws, we",
    ),
]


@pytest.mark.parametrize(("query", "reference"), QUERIES, ids=["tumble", "hop", "cumulate", "legacy-tumble",
                                                               "legacy-hop", "filter"])
def test_window_aggregation_equals_duckdb_and_drops_late_rows(query: str, reference: str) -> None:
    assert _final_rows(_t_env().execute_sql(query)) == _duckdb(reference)


def test_late_rows_really_are_dropped() -> None:
    """The data has late rows: counting every row per tumbling window gives a different answer (by hand:
    [0, 10) holds 7 rows of which B@7000 and B@9000 are late; [10, 20) holds 4 with B@18000 late)."""
    got = _final_rows(_t_env().execute_sql(
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
        "GROUP BY window_start, window_end"))
    assert got == {(EPOCH, 5): 1, (EPOCH + datetime.timedelta(seconds=10), 3): 1,
                   (EPOCH + datetime.timedelta(seconds=20), 3): 1, (EPOCH + datetime.timedelta(seconds=30), 1): 1}


def test_window_tvf_without_aggregation_repeats_rows_per_window() -> None:
    got = reduce_changelog(list(_t_env().execute_sql(
        "SELECT item, price, window_start, window_end FROM "
        "TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))").collect()))
    assert got == _duckdb(f"SELECT item, price, ws, we FROM bids, {_HOP} WHERE ts >= ws AND ts < we")


def test_table_api_tumble_and_slide_equal_duckdb() -> None:
    t_env = _t_env()
    bids = t_env.from_path("bids")
    tumble = bids.window(Tumble.over(lit(10).seconds).on(col("ts")).alias("w")).group_by(col("w"), col("item"))
    got = _final_rows(tumble.select(col("item"), col("w").start, col("w").end, col("price").sum).execute())
    assert got == _duckdb(
        f"SELECT item, ws, we, SUM(price) FROM bids, {_TUMBLE} WHERE {_ON_TIME} GROUP BY item, ws, we")
    slide = bids.window(Slide.over(lit(10).seconds).every(lit(5).seconds).on(col("ts")).alias("w")).group_by(col("w"))
    got = _final_rows(slide.select(col("w").end.alias("e"), col("price").max).execute())
    assert got == _duckdb(f"SELECT we, MAX(price) FROM bids, {_HOP} WHERE {_ON_TIME} GROUP BY we")


def test_datagen_table_with_computed_rowtime_and_watermark() -> None:
    """CREATE TABLE with a computed rowtime and WATERMARK FOR, read by two datagen subtasks (each in order:
    no row is late). Plain-Python reference: ids 0..24 at one per second, tumbling 10 s windows."""
    t_env = StreamTableEnvironment.create(StreamExecutionEnvironment.get_execution_environment())
    t_env.get_config().set("parallelism.default", "2")
    t_env.execute_sql(
        "CREATE TABLE seq (id BIGINT, ts AS TO_TIMESTAMP_LTZ(id * 1000, 3),\n"
        "  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n"
        "WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0',"
        " 'fields.id.end' = '24')"
    )
    got = _final_rows(t_env.execute_sql(
        "SELECT window_start, COUNT(*), SUM(id) FROM TABLE(TUMBLE(TABLE seq, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
        "GROUP BY window_start, window_end"))
    expected: dict[tuple[object, ...], int] = {}
    for start in range(0, 25, 10):
        ids = list(range(start, min(start + 10, 25)))
        expected[(EPOCH + datetime.timedelta(seconds=start), len(ids), sum(ids))] = 1
    assert got == expected


def test_describe_and_schema_show_time_attributes() -> None:
    t_env = StreamTableEnvironment.create(StreamExecutionEnvironment.get_execution_environment())
    t_env.execute_sql(
        "CREATE TABLE clicks (user_name STRING, ts TIMESTAMP(3), pt AS PROCTIME(), "
        "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'datagen', 'number-of-rows' = '1')"
    )
    rows = {r[0]: tuple(r) for r in t_env.execute_sql("DESCRIBE clicks").collect()}
    assert rows["ts"][1] == "TIMESTAMP(3) *ROWTIME*" and rows["ts"][5] == "(ts - INTERVAL '5' SECOND)"
    assert rows["pt"][1] == "TIMESTAMP_LTZ(3) *PROCTIME*" and rows["pt"][4] == "AS PROCTIME()"
    schema = t_env.from_path("clicks").get_schema()
    assert [str(t) for t in schema.get_field_data_types()] == [
        "STRING", "TIMESTAMP(3) *ROWTIME*", "TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*"]
    before = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    with t_env.execute_sql("SELECT pt FROM clicks").collect() as result:
        (pt,) = [r[0] for r in result]
    after = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert before - datetime.timedelta(milliseconds=1) <= pt <= after  # PROCTIME() is the wall clock, in UTC


@pytest.mark.parametrize(
    ("sql", "needle"),
    [
        ("SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ms), INTERVAL '10' SECOND)) "
         "GROUP BY window_start, window_end", "the time column 'ms' is BIGINT, not a time attribute"),
        ("SELECT window_start FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(nope), INTERVAL '10' SECOND))",
         "unknown column 'nope'"),
        ("SELECT TUMBLE_START(ts, INTERVAL '5' SECOND), COUNT(*) FROM bids GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)",
         "does not match the group window"),
        ("SELECT COUNT(*) FROM bids GROUP BY TUMBLE(ms, INTERVAL '10' SECOND)", "not a time attribute"),
        ("SELECT window_start FROM TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '3' SECOND, "
         "INTERVAL '10' SECOND))", "must be a multiple of the step"),
        ("SELECT window_start FROM TABLE(TUMBLE(TABLE bids, ts, INTERVAL '10' SECOND))",
         "TUMBLE takes TUMBLE(TABLE t, DESCRIPTOR(ts), size) (at line 1, column 32)"),
    ],
)
def test_window_errors_name_the_column_and_position(sql: str, needle: str) -> None:
    with pytest.raises(ValidationException) as e:
        _t_env().execute_sql(sql)
    assert "\n" not in str(e.value) and needle in str(e.value), str(e.value)


def test_watermark_declarations_are_checked() -> None:
    t_env = StreamTableEnvironment.create(StreamExecutionEnvironment.get_execution_environment())
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("CREATE TABLE t (n BIGINT, WATERMARK FOR n AS n - 1) WITH ('connector' = 'datagen')")
    assert "the rowtime column 'n' is BIGINT" in str(e.value)
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR nope AS ts) WITH ('connector' = 'datagen')")
    assert "WATERMARK FOR 'nope': no such column" in str(e.value)
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS 5) WITH ('connector' = 'datagen')")
    assert "expected a TIMESTAMP" in str(e.value)
    assert t_env.list_tables() == []  # nothing half-registered


@pytest.mark.parametrize("streaming", [True, False])
def test_batch_mode_has_no_late_rows_streaming_drops_them(streaming: bool) -> None:
    """Timestamps (id * 7) % 30 seconds for ids 0..29: every second once, far out of order. Streaming
    (one datagen subtask, watermark = the highest timestamp) drops the rows whose 10 s window had already
    closed when they came (plain-Python reference below); BATCH has no late rows: 10 per window."""
    from strom.table import EnvironmentSettings, TableEnvironment

    settings = EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    t_env = TableEnvironment.create(settings)
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql(
        "CREATE TABLE shuffled (id BIGINT, ts AS TO_TIMESTAMP_LTZ(((id * 7) % 30) * 1000, 3), "
        "WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', "
        "'fields.id.start' = '0', 'fields.id.end' = '29')")
    got = _final_rows(t_env.execute_sql(
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE shuffled, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
        "GROUP BY window_start, window_end"))
    counts = {0: 0, 10: 0, 20: 0}
    watermark = None
    for i in range(30):
        second = (i * 7) % 30
        start = second // 10 * 10
        if not streaming or watermark is None or (start + 10) * 1000 - 1 > watermark:
            counts[start] += 1
        watermark = second * 1000 if watermark is None else max(watermark, second * 1000)
    assert (counts != {0: 10, 10: 10, 20: 10}) == streaming  # the data really has late rows in streaming
    assert got == {(EPOCH + datetime.timedelta(seconds=s), n): 1 for s, n in counts.items() if n}
