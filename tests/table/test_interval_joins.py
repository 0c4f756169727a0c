"""Interval joins (issue 19): a join bounding one input's rowtime by the other's runs on the DataStream
interval join, insert-only, and its rows equal DuckDB's join with the same time predicates. Both inputs
are in event-time order up to their watermark delay, so no row is late whatever the interleaving of the
two sources (the join's watermark, the minimum of both inputs', never passes a row before it arrives)."""

from __future__ import annotations

import datetime

import pytest
from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.datastream import StreamExecutionEnvironment
from strom.table import Schema, StreamTableEnvironment
from strom.table.planner.plan import IntervalJoinNode, JoinNode

from .reference import duckdb_table, reduce_changelog

EPOCH = datetime.datetime(1970, 1, 1)
# (id, amount, ms): out of order by at most 1 s (the watermark delay is 2 s)
ORDERS = [(1, 5, 1000), (2, 3, 2500), (3, 8, 2000), (4, 1, 6000), (1, 7, 9000), (5, 2, 12000), (2, 4, 11500),
          (6, 9, 15000), (None, 1, 15500)]
# (order id, place, ms)
SHIPMENTS = [(1, "A", 1500), (3, "B", 4000), (2, "C", 3000), (4, "D", 12000), (1, "E", 10000), (5, "F", 13000),
             (2, "G", 14000), (6, "H", 15000), (None, "I", 16000)]


def _t_env() -> StreamTableEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    for name, rows, fields, types in (
        ("orders", ORDERS, ["id", "amount", "ms"], [Types.INT(), Types.INT(), Types.LONG()]),
        ("shipments", SHIPMENTS, ["oid", "place", "ms"], [Types.INT(), Types.STRING(), Types.LONG()]),
    ):
        ds = env.from_collection(rows, type_info=Types.ROW_NAMED(fields, types))
        schema = (Schema.new_builder().column_by_expression("ts", "TO_TIMESTAMP_LTZ(ms, 3)")
                  .watermark("ts", "ts - INTERVAL '2' SECOND").build())
        t_env.create_temporary_view(name, t_env.from_data_stream(ds, schema))
    return t_env


def _duck(sql: str):
    def ts(ms: int) -> datetime.datetime:
        return EPOCH + datetime.timedelta(milliseconds=ms)

    return duckdb_table({
        "orders": ([("id", "INTEGER"), ("amount", "INTEGER"), ("ms", "BIGINT"), ("ts", "TIMESTAMP")],
                   [(*r, ts(r[2])) for r in ORDERS]),
        "shipments": ([("oid", "INTEGER"), ("place", "VARCHAR"), ("ms", "BIGINT"), ("ts", "TIMESTAMP")],
                      [(*r, ts(r[2])) for r in SHIPMENTS]),
    }, sql)


QUERIES = [
    ("SELECT o.id, o.amount, s.place FROM orders o, shipments s "
     "WHERE o.id = s.oid AND o.ts BETWEEN s.ts - INTERVAL '5' SECOND AND s.ts",
     "SELECT o.id, o.amount, s.place FROM orders o, shipments s "
     "WHERE o.id = s.oid AND o.ts BETWEEN s.ts - INTERVAL 5 SECOND AND s.ts"),
    ("SELECT o.id, s.place, o.ms, s.ms FROM orders o JOIN shipments s ON o.id = s.oid AND s.ts > o.ts "
     "AND s.ts <= o.ts + INTERVAL '3' SECOND AND o.amount > 2",
     "SELECT o.id, s.place, o.ms, s.ms FROM orders o JOIN shipments s ON o.id = s.oid AND s.ts > o.ts "
     "AND s.ts <= o.ts + INTERVAL 3 SECOND AND o.amount > 2"),
]


@pytest.mark.parametrize("sql,duck", QUERIES, ids=["between", "strict-and-residual"])
def test_interval_join_rows_equal_duckdb_and_are_insert_only(sql: str, duck: str) -> None:
    t_env = _t_env()
    table = t_env.sql_query(sql)
    assert isinstance(table._node.input, IntervalJoinNode)
    with table.execute().collect() as it:
        rows = list(it)
    assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}
    assert reduce_changelog(rows) == _duck(duck)


def test_bounds_are_read_as_flink_reads_them() -> None:
    """s.ts > o.ts AND s.ts <= o.ts + 3 s  <=>  o.ts - s.ts in [-3000, -1] ms (the strict bound moves 1 ms)."""
    node = _t_env().sql_query(QUERIES[1][0])._node.input
    assert (node.lower, node.upper) == (-3000, -1)
    assert node.condition is not None and node.condition.sql() == "(amount > 2)"


@pytest.mark.parametrize("kind", ["LEFT", "RIGHT", "FULL"])
def test_outer_interval_joins_equal_duckdb_and_are_insert_only(kind: str) -> None:
    """Unpaired rows come out with NULLs once the watermark passes their interval (the NULL-key rows too)."""
    sql = (f"SELECT o.id, o.amount, s.oid, s.place FROM orders o {kind} JOIN shipments s ON o.id = s.oid "
           "AND o.ts BETWEEN s.ts - INTERVAL {d} SECOND AND s.ts AND o.amount > 2")
    with _t_env().execute_sql(sql.format(d="'2'")).collect() as rows:
        rows = list(rows)
    assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}
    got = reduce_changelog(rows)
    assert got == _duck(sql.format(d="2"))
    assert any(None in row for row in got)  # some rows found no partner


def test_one_sided_time_bound_is_a_regular_join() -> None:
    t_env = _t_env()
    regular = t_env.sql_query("SELECT o.id FROM orders o JOIN shipments s ON o.id = s.oid AND o.ts <= s.ts")
    assert isinstance(regular._node.input, JoinNode)
    assert all(t.time_attr is None for _, t in regular._node.input.columns)  # a regular join keeps no rowtime
    # MAX(ts) is no time attribute (as in Flink): joining on it is a regular join, which takes updates
    aggregated = t_env.sql_query("SELECT * FROM (SELECT id, MAX(ts) AS ts FROM orders GROUP BY id) o JOIN "
                                 "shipments s ON o.id = s.oid AND o.ts BETWEEN s.ts - INTERVAL '5' SECOND AND s.ts")
    assert isinstance(aggregated._node.input, JoinNode)
