"""Top-N over an updating input (Flink's retract Top-N) and RANK()/DENSE_RANK() Top-N: streaming changelogs
reduce to DuckDB's table over the same rows, BATCH equals it too; one changelog worked by hand."""

from __future__ import annotations

from typing import Any

import pytest
from strom.common.row import RowKind
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment

from .reference import duckdb_table, reduce_changelog

COLUMNS = [("shop", "VARCHAR"), ("item", "VARCHAR"), ("qty", "INTEGER")]
# per (shop, item) the final SUM(qty) is distinct within a shop; along the way ranks change and tie
SALES = [
    ("s1", "a", 5), ("s1", "b", 3), ("s1", "c", 4), ("s2", "a", 1), ("s1", "b", 4), ("s2", "b", 2),
    ("s1", "d", 1), ("s2", "c", 7), ("s1", "a", -4), ("s2", "a", 3), ("s1", "c", 5), ("s2", "b", 1),
    ("s1", "d", 2), ("s2", "d", 2), ("s1", "a", 1), ("s2", "c", -5),
]
# ties: RANK and DENSE_RANK differ
SCORES = [("x", "p", 3), ("x", "q", 3), ("x", "r", 2), ("x", "s", 1), ("y", "p", 5), ("y", "q", 4), ("y", "r", 4),
          ("y", "s", 4), ("y", "t", 1)]

TOTALS = "(SELECT shop, item, SUM(qty) AS total FROM sales GROUP BY shop, item)"
QUERIES = [
    f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY shop ORDER BY total DESC) AS rn FROM {TOTALS}) "
    "WHERE rn <= 2",
    f"SELECT shop, item, total FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY shop ORDER BY total DESC) AS rn "
    f"FROM {TOTALS}) WHERE rn <= 2",
    "SELECT * FROM (SELECT *, RANK() OVER (PARTITION BY shop ORDER BY qty DESC) AS r FROM scores) WHERE r <= 2",
    "SELECT * FROM (SELECT *, DENSE_RANK() OVER (PARTITION BY shop ORDER BY qty DESC) AS r FROM scores) WHERE r <= 2",
    "SELECT shop, item FROM (SELECT *, RANK() OVER (ORDER BY qty) AS r FROM scores) WHERE r <= 3",
    f"SELECT * FROM (SELECT *, DENSE_RANK() OVER (PARTITION BY shop ORDER BY total) AS r FROM {TOTALS}) "
    "WHERE r <= 2",
]


def _t_env(streaming: bool) -> TableEnvironment:
    t_env = TableEnvironment.create(
        EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "2")
    schema = DataTypes.ROW([DataTypes.FIELD("shop", DataTypes.STRING()), DataTypes.FIELD("item", DataTypes.STRING()),
                            DataTypes.FIELD("qty", DataTypes.INT())])
    t_env.create_temporary_view("sales", t_env.from_elements(SALES, schema))
    t_env.create_temporary_view("scores", t_env.from_elements(SCORES, schema))
    return t_env


def _duckdb(query: str) -> Any:
    return duckdb_table({"sales": (COLUMNS, SALES), "scores": (COLUMNS, SCORES)}, query)


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "batch"])
@pytest.mark.parametrize("query", QUERIES)
def test_ranking_equals_duckdb(query: str, streaming: bool) -> None:
    with _t_env(streaming).execute_sql(query).collect() as rows:
        rows = list(rows)
    if not streaming:
        assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}
    assert reduce_changelog(rows) == _duckdb(query)


def test_order_by_limit_over_an_updating_input() -> None:
    query = f"SELECT item, total FROM {TOTALS} ORDER BY total DESC LIMIT 3"
    with _t_env(True).execute_sql(query).collect() as rows:
        assert reduce_changelog(list(rows)) == _duckdb(query)


def test_retract_top_n_changelog_by_hand() -> None:
    """Top-1 per shop over running totals of one shop, rank number selected, worked by hand:
    a=5 -> +I(a,5,1); b=3 (below) -> nothing; a=5-4=1: the aggregate sends -U(a,5) +U(a,1): after -U the top
    is b (-U(a,5,1) +U(b,3,1)), after +U(a,1) it stays b (nothing)."""
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    schema = DataTypes.ROW([DataTypes.FIELD("shop", DataTypes.STRING()), DataTypes.FIELD("item", DataTypes.STRING()),
                            DataTypes.FIELD("qty", DataTypes.INT())])
    t_env.create_temporary_view("sales", t_env.from_elements([("s", "a", 5), ("s", "b", 3), ("s", "a", -4)], schema))
    query = (f"SELECT item, total, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY shop ORDER BY total DESC) "
             f"AS rn FROM {TOTALS}) WHERE rn <= 1")
    with t_env.execute_sql(query).collect() as rows:
        got = [(r.get_row_kind(), tuple(r)) for r in rows]
    assert got == [(RowKind.INSERT, ("a", 5, 1)), (RowKind.UPDATE_BEFORE, ("a", 5, 1)),
                   (RowKind.UPDATE_AFTER, ("b", 3, 1))]
