"""Window joins (Flink's example shape: two TUMBLE TVFs joined ON window_start, window_end and a key),
INNER/LEFT/RIGHT/FULL: insert-only, each window joined once when the watermark passes its end; equal
DuckDB's join of the same rows bucketed into the same windows. The rows are out of order only within the
watermark delay, so no row is late (the join's watermark is the lower of both inputs')."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.datastream import StreamExecutionEnvironment
from strom.table import Schema, StreamTableEnvironment

from .reference import duckdb_table, reduce_changelog

EPOCH = datetime.datetime(1970, 1, 1)
# (time ms, num, id)
LEFT = [(2000, 1, "L1"), (6000, 2, "L2"), (5500, 3, "L3"), (8000, 4, "L4"), (12000, 5, "L5"), (11000, 2, "L6"),
        (16000, 6, "L7")]
RIGHT = [(1000, 2, "R1"), (3000, 1, "R2"), (7000, 2, "R3"), (6000, 3, "R4"), (9000, 7, "R5"), (13000, 5, "R6"),
         (14500, 5, "R7"), (17000, 8, "R8")]


def _t_env() -> StreamTableEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    for name, rows in (("LeftTable", LEFT), ("RightTable", RIGHT)):
        ds = env.from_collection(rows, type_info=Types.ROW_NAMED(["ms", "num", "id"], [Types.LONG(), Types.INT(),
                                                                                        Types.STRING()]))
        schema = (Schema.new_builder().column_by_expression("row_time", "TO_TIMESTAMP_LTZ(ms, 3)")
                  .watermark("row_time", "row_time - INTERVAL '2' SECOND").build())
        t_env.create_temporary_view(name, t_env.from_data_stream(ds.set_parallelism(1), schema))
    return t_env


def _duckdb(kind: str) -> Any:
    def rows(data: list[tuple]) -> list[tuple]:
        return [(EPOCH + datetime.timedelta(milliseconds=ms), num, i) for ms, num, i in data]

    cols = [("row_time", "TIMESTAMP"), ("num", "INTEGER"), ("id", "VARCHAR")]
    window = ("(SELECT num, id, time_bucket(INTERVAL 5 SECOND, row_time, TIMESTAMP '1970-01-01') AS window_start "
              "FROM {t})")
    return duckdb_table({"l": (cols, rows(LEFT)), "r": (cols, rows(RIGHT))},
                        f"SELECT L.num, L.id, R.num, R.id, COALESCE(L.window_start, R.window_start) "
                        f"FROM {window.format(t='l')} L {kind} JOIN {window.format(t='r')} R "
                        f"ON L.window_start = R.window_start AND L.num = R.num")


@pytest.mark.parametrize("kind", ["INNER", "LEFT", "RIGHT", "FULL"])
def test_window_join_equals_duckdb(kind: str) -> None:
    sql = (f"SELECT L.num, L.id, R.num AS rnum, R.id AS rid, COALESCE(L.window_start, R.window_start) AS ws FROM "
           f"(SELECT * FROM TABLE(TUMBLE(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' SECOND))) L "
           f"{kind} JOIN "
           f"(SELECT * FROM TABLE(TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' SECOND))) R "
           f"ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end")
    with _t_env().execute_sql(sql).collect() as it:
        rows = list(it)
    assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}  # a window join is insert-only
    assert reduce_changelog(rows) == _duckdb(kind)
