"""Top-N (ROW_NUMBER() OVER ... WHERE rn <= N), ORDER BY/LIMIT and deduplication: streaming changelogs
reduced to a table equal DuckDB's result over the same rows; BATCH results are insert-only and equal it
too (ORDER BY .. LIMIT in the same order); the exact RowKind sequence is worked by hand."""

from __future__ import annotations

import pytest
from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.datastream import StreamExecutionEnvironment
from strom.table import (
    DataTypes,
    EnvironmentSettings,
    NotSupportedYet,
    Schema,
    StreamTableEnvironment,
    TableEnvironment,
    TableException,
)

from .reference import duckdb_table, reduce_changelog

COLUMNS = [("name", "VARCHAR"), ("category", "VARCHAR"), ("price", "INTEGER"), ("amount", "INTEGER")]
# prices are distinct within a category and amounts distinct overall, so every ranking has one answer
ROWS = [
    ("apple", "fruit", 3, 10), ("pear", "fruit", 5, 4), ("leek", "veg", 2, 7), ("kiwi", "fruit", 1, 12),
    ("kale", "veg", 9, 3), ("fig", "fruit", 8, 1), ("beet", "veg", 4, 9), ("plum", "fruit", 6, 6),
    ("salt", "misc", 7, 2), ("corn", "veg", 1, 11), ("lime", "fruit", 2, 5), ("okra", "veg", 6, 8),
]

TOP_N = "(SELECT *, ROW_NUMBER() OVER (PARTITION BY category ORDER BY price DESC) AS rn FROM items)"
QUERIES = [
    f"SELECT * FROM {TOP_N} WHERE rn <= 2",
    f"SELECT name, category FROM {TOP_N} WHERE rn <= 3",
    f"SELECT name, rn FROM {TOP_N} WHERE rn < 3 AND price > 2",
    "SELECT name FROM (SELECT name, price, ROW_NUMBER() OVER (ORDER BY amount) AS r FROM items WHERE price > 1) "
    "WHERE r <= 4",
    "SELECT name, amount FROM items ORDER BY amount DESC LIMIT 4",
    "SELECT category, name FROM items WHERE price >= 3 ORDER BY category, amount LIMIT 5",
]


def _t_env(streaming: bool) -> TableEnvironment:
    t_env = TableEnvironment.create(
        EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "2")
    schema = DataTypes.ROW([DataTypes.FIELD("name", DataTypes.STRING()),
                            DataTypes.FIELD("category", DataTypes.STRING()),
                            DataTypes.FIELD("price", DataTypes.INT()), DataTypes.FIELD("amount", DataTypes.INT())])
    t_env.create_temporary_view("items", t_env.from_elements(ROWS, schema))
    return t_env


@pytest.mark.parametrize("query", QUERIES)
def test_streaming_top_n_changelog_reduces_to_duckdb(query: str) -> None:
    with _t_env(True).execute_sql(query).collect() as rows:
        got = reduce_changelog(list(rows))
    assert got == duckdb_table({"items": (COLUMNS, ROWS)}, query)


@pytest.mark.parametrize("query", QUERIES)
def test_batch_top_n_is_insert_only_and_equals_duckdb(query: str) -> None:
    with _t_env(False).execute_sql(query).collect() as rows:
        rows = list(rows)
    assert {r.get_row_kind() for r in rows} <= {RowKind.INSERT}
    assert reduce_changelog(rows) == duckdb_table({"items": (COLUMNS, ROWS)}, query)


def test_batch_order_by_returns_rows_in_order() -> None:
    import duckdb

    query = "SELECT name, amount FROM items ORDER BY amount DESC LIMIT 5"
    with _t_env(False).execute_sql(query).collect() as rows:
        got = [tuple(r) for r in rows]
    con = duckdb.connect()
    con.execute("CREATE TABLE items (name VARCHAR, category VARCHAR, price INTEGER, amount INTEGER)")
    con.executemany("INSERT INTO items VALUES (?, ?, ?, ?)", ROWS)
    assert got == con.execute(query).fetchall()
    with _t_env(False).execute_sql("SELECT name FROM items ORDER BY price, name").collect() as rows:
        assert [r[0] for r in rows] == [r[0] for r in con.execute("SELECT name FROM items ORDER BY price, name")
                                        .fetchall()]


def test_top_n_changelog_sequence_as_flink() -> None:
    """Top-2 by v DESC of key 'a' over 1, 5, 3, 9 (worked by hand): with the rank number each rank that
    changes is -U old/+U new (+I for a rank filled the first time); without it, -D of the row pushed out
    then +I of the new one; a row outside the top emits nothing."""
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.create_temporary_view("s", t_env.from_elements([("a", 1), ("a", 5), ("a", 3), ("a", 9), ("a", 2)],
                                                         ["k", "v"]))
    sub = "(SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM s)"
    with t_env.execute_sql(f"SELECT v, rn FROM {sub} WHERE rn <= 2").collect() as rows:
        got = [(r.get_row_kind(), tuple(r)) for r in rows]
    i, ub, ua = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER
    assert got == [(i, (1, 1)),
                   (ub, (1, 1)), (ua, (5, 1)), (i, (1, 2)),
                   (ub, (1, 2)), (ua, (3, 2)),
                   (ub, (5, 1)), (ua, (9, 1)), (ub, (3, 2)), (ua, (5, 2))]
    with t_env.execute_sql(f"SELECT v FROM {sub} WHERE rn <= 2").collect() as rows:
        got = [(r.get_row_kind(), r[0]) for r in rows]
    assert got == [(i, 1), (i, 5), (RowKind.DELETE, 1), (i, 3), (RowKind.DELETE, 3), (i, 9)]


EVENTS = [("a", 1, 3000), ("b", 2, 1000), ("a", 3, 1000), ("b", 4, 5000), ("a", 5, 2000), ("c", 6, 4000)]


def _events_env() -> StreamTableEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    ds = env.from_collection(EVENTS, type_info=Types.ROW_NAMED(["k", "v", "ms"],
                                                                 [Types.STRING(), Types.INT(), Types.LONG()]))
    schema = (Schema.new_builder().column_by_expression("ts", "TO_TIMESTAMP_LTZ(ms, 3)")
              .column_by_expression("pt", "PROCTIME()").watermark("ts", "ts - INTERVAL '10' SECOND").build())
    t_env.create_temporary_view("events", t_env.from_data_stream(ds, schema))
    return t_env


@pytest.mark.parametrize(
    ("order", "expected", "kinds"),
    [
        # processing time: arrival order (one source subtask, per-key order kept)
        ("pt ASC", {("a", 1): 1, ("b", 2): 1, ("c", 6): 1}, {RowKind.INSERT}),
        ("pt DESC", {("a", 5): 1, ("b", 4): 1, ("c", 6): 1}, None),
        # event time: the earliest/latest timestamp per key, whatever the arrival order
        ("ts ASC", {("a", 3): 1, ("b", 2): 1, ("c", 6): 1}, None),
        ("ts DESC", {("a", 1): 1, ("b", 4): 1, ("c", 6): 1}, None),
    ],
)
def test_deduplication_keeps_first_or_last_row(order: str, expected: dict[tuple[str, int], int],
                                               kinds: set[RowKind] | None) -> None:
    t_env = _events_env()
    query = f"SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY {order}) AS rn FROM events) " \
            f"WHERE rn = 1"
    with t_env.execute_sql(query).collect() as rows:
        rows = list(rows)
    assert reduce_changelog(rows) == expected
    if kinds is not None:
        assert {r.get_row_kind() for r in rows} == kinds  # keep-first by processing time is insert-only


def test_deduplication_is_planned_as_flink_plans_it() -> None:
    t_env = _events_env()
    plan = t_env.sql_query("SELECT k FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn "
                           "FROM events) WHERE rn = 1").explain()
    assert "Deduplicate(keep=[lastRow], key=[k], order=[ts DESC])" in plan
    plan = t_env.sql_query("SELECT k FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn "
                           "FROM events) WHERE rn = 1").explain()
    assert "Rank(rankType=[ROW_NUMBER], rankRange=[rankStart=1, rankEnd=1]" in plan


def test_top_n_errors() -> None:
    t_env = _t_env(True)
    with pytest.raises(NotSupportedYet) as e:
        t_env.execute_sql("SELECT ROW_NUMBER() OVER (PARTITION BY category ORDER BY price) FROM items")
    assert "OVER windows" in str(e.value)
    with pytest.raises(NotSupportedYet) as e:
        t_env.execute_sql(f"SELECT * FROM {TOP_N} WHERE rn >= 2")
    assert "rank range (rn >= 2)" in str(e.value)
    with pytest.raises(NotSupportedYet) as e:
        t_env.execute_sql(f"SELECT * FROM {TOP_N} WHERE rn <= 3 AND rn = 2")
    assert "rank range" in str(e.value)
    with pytest.raises(NotSupportedYet) as e:
        t_env.execute_sql("SELECT * FROM (SELECT *, NTILE(2) OVER (ORDER BY price) AS r FROM items) WHERE r <= 2")
    assert "OVER windows" in str(e.value)
    with pytest.raises(TableException) as e:
        t_env.execute_sql("SELECT name FROM items ORDER BY price")
    assert str(e.value) == "Sort on a non-time-attribute field is not supported."
    with pytest.raises(TableException) as e:
        t_env.execute_sql("SELECT name FROM items ORDER BY nope LIMIT 2")
    assert "unknown column 'nope'" in str(e.value)


def test_table_api_order_by_fetch_and_limit() -> None:
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE items (name VARCHAR, category VARCHAR, price INTEGER, amount INTEGER)")
    con.executemany("INSERT INTO items VALUES (?, ?, ?, ?)", ROWS)
    from strom.table.expressions import col

    streaming = _t_env(True).from_path("items")
    with streaming.order_by(col("amount").desc).fetch(3).select(col("name")).execute().collect() as rows:
        got = reduce_changelog(list(rows))
    assert got == duckdb_table({"items": (COLUMNS, ROWS)}, "SELECT name FROM items ORDER BY amount DESC LIMIT 3")
    with pytest.raises(TableException):
        streaming.order_by(col("amount")).execute()
    batch = _t_env(False).from_path("items")
    with batch.order_by(col("price").asc, col("name").desc).execute().collect() as rows:
        assert [tuple(r) for r in rows] == con.execute("SELECT * FROM items ORDER BY price, name DESC").fetchall()
    with batch.where(col("price") > 3).limit(2).execute().collect() as rows:
        assert len(list(rows)) == 2
