"""Event-time temporal joins (`JOIN r FOR SYSTEM_TIME AS OF o.ts ON ..`) against a versioned view (rates
deduplicated keep-last by rowtime, Flink's versioned view), compared with DuckDB's ASOF JOIN: each order
joins the rate whose time is the latest at or before the order's time.

Why the reference holds for the engine's timing: both inputs are one subtask each, rates arrive in time
order and orders are out of order only within the 2 s watermark delay, so when the join's watermark
(the lower of both inputs') passes an order's time, every rate at or before that time has arrived.
"""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

import pytest
from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.datastream import StreamExecutionEnvironment
from strom.table import Schema, StreamTableEnvironment, ValidationException

from .reference import duckdb_table, reduce_changelog

EPOCH = datetime.datetime(1970, 1, 1)
# (currency, rate, time ms), in time order
RATES = [("EUR", 114, 1000), ("USD", 102, 1500), ("EUR", 116, 5000), ("YEN", 1, 6000), ("EUR", 119, 9000),
         ("USD", 105, 12000)]
# (order id, currency, amount, time ms); order 7 is out of order within the delay
ORDERS = [(1, "EUR", 2, 500), (2, "EUR", 3, 2000), (3, "USD", 1, 3000), (4, "EUR", 5, 5000), (5, "GBP", 1, 6000),
          (6, "EUR", 1, 8000), (7, "YEN", 10, 7000), (8, "EUR", 2, 9500), (9, "USD", 1, 11000), (10, "USD", 4, 13000)]

VERSIONED = ("CREATE TEMPORARY VIEW versioned_rates AS SELECT currency, rate, rate_time FROM (SELECT *, "
             "ROW_NUMBER() OVER (PARTITION BY currency ORDER BY rate_time DESC) AS rn FROM rates) WHERE rn = 1")


def _t_env() -> StreamTableEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    for name, rows, fields, types in (
        ("rates", RATES, ["currency", "rate", "ms"], [Types.STRING(), Types.INT(), Types.LONG()]),
        ("orders", ORDERS, ["id", "currency", "amount", "ms"], [Types.INT(), Types.STRING(), Types.INT(),
                                                                 Types.LONG()]),
    ):
        time = "rate_time" if name == "rates" else "order_time"
        ds = env.from_collection(rows, type_info=Types.ROW_NAMED(fields, types)).set_parallelism(1)
        schema = (Schema.new_builder().column_by_expression(time, "TO_TIMESTAMP_LTZ(ms, 3)")
                  .watermark(time, f"{time} - INTERVAL '2' SECOND").build())
        t_env.create_temporary_view(name, t_env.from_data_stream(ds, schema))
    t_env.execute_sql(VERSIONED)
    return t_env


def _duckdb(sql: str) -> Counter:
    def ts(ms: int) -> datetime.datetime:
        return EPOCH + datetime.timedelta(milliseconds=ms)

    return duckdb_table({
        "rates": ([("currency", "VARCHAR"), ("rate", "INTEGER"), ("rate_time", "TIMESTAMP")],
                  [(c, r, ts(ms)) for c, r, ms in RATES]),
        "orders": ([("id", "INTEGER"), ("currency", "VARCHAR"), ("amount", "INTEGER"), ("order_time", "TIMESTAMP")],
                   [(i, c, a, ts(ms)) for i, c, a, ms in ORDERS]),
    }, sql)


def _rows(t_env: StreamTableEnvironment, sql: str) -> Counter:
    with t_env.execute_sql(sql).collect() as it:
        rows: list[Any] = list(it)
    assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}  # a temporal join is insert-only
    return reduce_changelog(rows)


@pytest.mark.parametrize("kind", ["", "LEFT"])
def test_orders_join_the_rate_valid_at_their_time(kind: str) -> None:
    got = _rows(_t_env(), f"SELECT o.id, o.order_time, o.amount * r.rate AS conv, r.rate_time FROM orders AS o "
                          f"{kind} JOIN versioned_rates FOR SYSTEM_TIME AS OF o.order_time AS r "
                          f"ON o.currency = r.currency")
    want = _duckdb(f"SELECT o.id, o.order_time, o.amount * r.rate, r.rate_time FROM orders o ASOF {kind} JOIN rates r "
                   f"ON o.currency = r.currency AND o.order_time >= r.rate_time")
    assert got == want
    # by hand: order 1 (EUR at 0.5 s) precedes every EUR rate; order 4 at 5 s sees the 5 s rate (116)
    ids = {row[0]: row for row in got}
    assert (1 in ids) == (kind == "LEFT") and ids[4][2] == 5 * 116 and ids[6][2] == 116


def test_residual_condition_and_left_padding() -> None:
    got = _rows(_t_env(), "SELECT o.id, r.rate FROM orders AS o LEFT JOIN versioned_rates FOR SYSTEM_TIME AS OF "
                          "o.order_time AS r ON o.currency = r.currency AND r.rate > 110")
    want = _duckdb("SELECT o.id, CASE WHEN r.rate > 110 THEN r.rate END FROM orders o ASOF LEFT JOIN rates r "
                   "ON o.currency = r.currency AND o.order_time >= r.rate_time")
    assert got == want


@pytest.mark.parametrize(("sql", "needle"), [
    ("SELECT * FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency",
     "requires primary key"),
    ("SELECT * FROM orders AS o FULL JOIN versioned_rates FOR SYSTEM_TIME AS OF o.order_time AS r "
     "ON o.currency = r.currency", "INNER or LEFT"),
    ("SELECT * FROM orders AS o JOIN versioned_rates FOR SYSTEM_TIME AS OF o.order_time AS r ON o.amount = r.rate",
     r"primary key \[currency\] must be included"),
    ("SELECT * FROM orders AS o JOIN versioned_rates FOR SYSTEM_TIME AS OF o.amount AS r "
     "ON o.currency = r.currency", "not a time attribute"),
])
def test_temporal_join_errors(sql: str, needle: str) -> None:
    with pytest.raises(ValidationException, match=needle):
        _t_env().execute_sql(sql)


def test_a_table_with_primary_key_and_watermark_is_a_versioned_table() -> None:
    t_env = _t_env()
    t_env.execute_sql("CREATE TABLE pk_rates (currency STRING, rate INT, ts TIMESTAMP(3), PRIMARY KEY (currency, rate) "
                      "NOT ENFORCED, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector'='datagen', "
                      "'number-of-rows'='5')")
    join = ("SELECT o.id, r.rate FROM orders AS o JOIN pk_rates FOR SYSTEM_TIME AS OF o.order_time AS r "
            "ON o.currency = r.currency {}")
    plan = t_env.sql_query(join.format("AND o.amount = r.rate"))._node.digest()
    assert "TemporalJoin(joinType=[INNER], asOf=[order_time]" in plan
    with pytest.raises(ValidationException, match=r"primary key \[currency, rate\] must be included"):
        t_env.sql_query(join.format(""))
