"""SQL VALUES as a table source: results against DuckDB running the same VALUES query, the derived column
types, and the one-line errors for rows that do not fit together."""

from __future__ import annotations

from decimal import Decimal

import pytest
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.errors import TableException

from .reference import duckdb_table, reduce_changelog

QUERIES = [
    "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(id, name)",
    "SELECT t.id, name, id * 2.5 AS x FROM (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')) AS t(id, name) WHERE name <> 'b'",
    "SELECT k, COUNT(*), SUM(v) FROM (VALUES ('x', 1), ('y', 2), ('x', 3), ('x', -4)) AS t(k, v) GROUP BY k",
    "SELECT DISTINCT a FROM (VALUES (1), (2), (1)) AS t(a)",
    "SELECT a + 1 FROM (VALUES (1 + 2), (-5)) AS t(a) UNION ALL SELECT id FROM (VALUES (10)) AS u(id)",
    "SELECT UPPER(s), LENGTH(s) FROM (VALUES ('ab'), ('Cde'), (NULL)) AS t(s)",
]


def _t_env(streaming: bool = True) -> TableEnvironment:
    t_env = TableEnvironment.create(
        EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    )
    t_env.get_config().set("parallelism.default", "1")
    return t_env


@pytest.mark.parametrize("sql", QUERIES)
def test_values_queries_match_duckdb(sql: str) -> None:
    with _t_env().execute_sql(sql).collect() as rows:
        assert reduce_changelog(list(rows)) == duckdb_table({}, sql)


def test_values_column_types_and_names() -> None:
    t_env = _t_env()
    schema = t_env.sql_query("SELECT * FROM (VALUES (1, 2.5, 'a'), (NULL, 3, 'b')) AS v(a, b, c)").get_schema()
    assert schema.get_field_names() == ["a", "b", "c"]
    # a NULL makes its column nullable; 2.5 is DECIMAL(2, 1) as in Flink, and with an INT (DECIMAL(10, 0)) the
    # column holds 10 integer digits and 1 fractional: DECIMAL(11, 1)
    assert [str(t) for t in schema.get_field_data_types()] == ["INT", "DECIMAL(11, 1) NOT NULL", "STRING NOT NULL"]
    with t_env.execute_sql("VALUES (1, 2.5), (2, 3)").collect() as rows:
        got = list(rows)
    assert [r.as_dict() for r in got] == [{"EXPR$0": 1, "EXPR$1": Decimal("2.5")}, {"EXPR$0": 2, "EXPR$1": 3}]
    assert str(got[1][1]) == "3.0"
    with t_env.execute_sql("VALUES (1, 2.5E0), (2, 3)").collect() as rows:  # an exponent makes a DOUBLE
        assert [type(r[1]) for r in rows] == [float, float]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM (VALUES (1, 'a'), (2)) AS t(id, name)", "VALUES: row 2 has 1 values, row 1 has 2"),
        ("SELECT * FROM (VALUES (1, 'a')) AS t(id)", "VALUES: 1 column names (id) for rows of 2 values"),
        ("SELECT * FROM (VALUES (1), ('a')) AS t(id)", "VALUES: column 'id' mixes INT and STRING"),
        ("SELECT nope FROM (VALUES (1)) AS t(id)", "nope"),
    ],
)
def test_bad_values_are_refused_with_one_line(sql: str, message: str) -> None:
    with pytest.raises(TableException) as info:
        _t_env().execute_sql(sql)
    assert message in str(info.value) and "\n" not in str(info.value)
