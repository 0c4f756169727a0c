"""OVER aggregations (ROWS/RANGE .. PRECEDING AND CURRENT ROW, ordered by a time attribute) against DuckDB
over the out-of-order bids of test_windows_vs_duckdb. A rowtime OVER row is late, and dropped, when its
timestamp is at or behind the watermark it meets (worked out in plain Python there); DuckDB computes the
same windows over the rows that are not late. The result is insert-only."""

from __future__ import annotations

import pytest
from strom.common.row import RowKind
from strom.table import NotSupportedYet, TableException

from .reference import reduce_changelog
from .test_windows_vs_duckdb import _duckdb, _t_env

NOT_LATE = "(SELECT * FROM bids WHERE wm IS NULL OR ts > wm)"

QUERIES = [
    (
        "SELECT item, price, SUM(price) OVER (PARTITION BY item ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND "
        "PRECEDING AND CURRENT ROW) AS s FROM bids",
        f"SELECT item, price, SUM(price) OVER (PARTITION BY item ORDER BY ts RANGE BETWEEN INTERVAL 10 SECOND "
        f"PRECEDING AND CURRENT ROW) FROM {NOT_LATE}",
    ),
    (
        "SELECT item, MAX(price) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), "
        "COUNT(*) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM bids WHERE price > 1",
        f"SELECT item, MAX(price) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), "
        f"COUNT(*) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM {NOT_LATE} WHERE price > 1",
    ),
    (
        "SELECT item, ts, MIN(price) OVER (PARTITION BY item ORDER BY ts) + 100 AS m FROM bids",
        f"SELECT item, ts, MIN(price) OVER (PARTITION BY item ORDER BY ts) + 100 FROM {NOT_LATE}",
    ),
    (
        "SELECT price, SUM(price * 2) OVER (PARTITION BY item ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING "
        "AND CURRENT ROW) FROM bids",
        f"SELECT price, SUM(price * 2) OVER (PARTITION BY item ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING "
        f"AND CURRENT ROW) FROM {NOT_LATE}",
    ),
]


@pytest.mark.parametrize(("query", "reference"), QUERIES, ids=["range-interval", "rows-n", "range-unbounded",
                                                               "rows-unbounded"])
def test_over_aggregates_equal_duckdb_without_late_rows(query: str, reference: str) -> None:
    with _t_env().execute_sql(query).collect() as rows:
        rows = list(rows)
    assert {r.get_row_kind() for r in rows} == {RowKind.INSERT}
    assert reduce_changelog(rows) == _duckdb(reference)


def test_over_aggregate_errors() -> None:
    t_env = _t_env()
    with pytest.raises(TableException) as e:
        t_env.execute_sql("SELECT SUM(price) OVER (ORDER BY price) FROM bids")
    assert "must be defined on a time attribute" in str(e.value)
    with pytest.raises(NotSupportedYet) as e:
        t_env.execute_sql("SELECT SUM(price) OVER (ORDER BY ts), COUNT(*) OVER (ORDER BY ts ROWS BETWEEN 1 "
                          "PRECEDING AND CURRENT ROW) FROM bids")
    assert "different windows" in str(e.value)
    with pytest.raises(NotSupportedYet) as e:
        t_env.execute_sql("SELECT SUM(price) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM bids")
    assert "only ... PRECEDING AND CURRENT ROW" in str(e.value)


def test_over_aggregate_over_an_updating_input_is_refused_as_flink_refuses_it() -> None:
    """Nexmark q6's official shape: an OVER window over a Top-N, whose rank updates retract earlier rows."""
    with pytest.raises(TableException) as e:
        _t_env().execute_sql(
            "SELECT item, AVG(price) OVER (PARTITION BY item ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) "
            "FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY item ORDER BY price DESC) AS rn FROM bids) WHERE rn <= 1")
    assert "OverAggregate doesn't support consuming update and delete changes which is produced by node Rank(" \
        in str(e.value)
