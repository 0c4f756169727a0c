"""ARRAY values (ARRAY[..], array[i], CARDINALITY, ARRAY<T> columns) and UNNEST in FROM, against DuckDB
where the semantics agree and hand-worked rows where Flink's differ (LEFT JOIN UNNEST .. ON TRUE keeps a
row of NULLs for an empty or NULL array; array[i] outside the array is NULL)."""

from __future__ import annotations

import pytest
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment, ValidationException

from .reference import duckdb_table, reduce_changelog

ROWS = [(1, ["a", "b"]), (2, []), (3, None), (4, ["c", None, "a"])]
COLUMNS = [("id", "INTEGER"), ("tags", "VARCHAR[]")]

SAME_AS_DUCKDB = [
    ("SELECT id, tag FROM t CROSS JOIN UNNEST(tags) AS u(tag)", "SELECT id, tag FROM t, unnest(t.tags) AS u(tag)"),
    ("SELECT id, x FROM t, UNNEST(ARRAY[id, id * 10]) AS u(x)", "SELECT id, x FROM t, unnest([id, id * 10]) AS u(x)"),
    ("SELECT tag, COUNT(*) FROM t CROSS JOIN UNNEST(tags) AS u(tag) GROUP BY tag",
     "SELECT tag, count(*) FROM t, unnest(t.tags) AS u(tag) GROUP BY tag"),
    ("SELECT id, CARDINALITY(tags), tags[1] FROM t", "SELECT id, len(tags), tags[1] FROM t"),
]


def _t_env(streaming: bool) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                    else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "2")
    schema = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()),
                            DataTypes.FIELD("tags", DataTypes.ARRAY(DataTypes.STRING()))])
    t_env.create_temporary_view("t", t_env.from_elements(ROWS, schema))
    return t_env


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "batch"])
@pytest.mark.parametrize(("flink", "duck"), SAME_AS_DUCKDB)
def test_unnest_and_arrays_equal_duckdb(streaming: bool, flink: str, duck: str) -> None:
    with _t_env(streaming).execute_sql(flink).collect() as rows:
        got = reduce_changelog(list(rows))
    assert got == duckdb_table({"t": (COLUMNS, ROWS)}, duck)


def test_where_flink_differs() -> None:
    t_env = _t_env(False)
    with t_env.execute_sql("SELECT id, tag FROM t LEFT JOIN UNNEST(tags) AS u(tag) ON TRUE").collect() as rows:
        got = sorted((tuple(r) for r in rows), key=repr)
    assert got == sorted([(1, "a"), (1, "b"), (2, None), (3, None), (4, "c"), (4, None), (4, "a")], key=repr)
    with t_env.execute_sql("SELECT id, tags[5], CAST(tags AS STRING) FROM t WHERE id = 4").collect() as rows:
        assert [tuple(r) for r in rows] == [(4, None, "[c, NULL, a]")]


def test_unnest_of_rows_gives_their_fields() -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    point = DataTypes.ROW([DataTypes.FIELD("x", DataTypes.INT()), DataTypes.FIELD("y", DataTypes.INT())])
    schema = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("ps", DataTypes.ARRAY(point))])
    t_env.create_temporary_view("p", t_env.from_elements([(1, [(1, 2), (3, 4)])], schema, verify_schema=False))
    with t_env.execute_sql("SELECT id, a + b FROM p CROSS JOIN UNNEST(ps) AS q(a, b)").collect() as rows:
        assert sorted(tuple(r) for r in rows) == [(1, 3), (1, 7)]


@pytest.mark.parametrize(("sql", "needle"), [
    ("SELECT id, x FROM t CROSS JOIN UNNEST(id) AS u(x)", "UNNEST(id): id is INT, not an ARRAY"),
    ("SELECT id FROM t CROSS JOIN UNNEST(tags) AS u(id)", "column 'id' already exists"),
    ("SELECT id FROM t CROSS JOIN UNNEST(tags) AS u(a, b)", "gives 1 columns, got 2 names"),
    ("SELECT CARDINALITY(id) FROM t", "not an ARRAY"),
    ("SELECT ARRAY[1, 'a'] FROM t", "expected INT"),
])
def test_bad_array_input_is_refused(sql: str, needle: str) -> None:
    with pytest.raises(ValidationException) as e:
        _t_env(False).execute_sql(sql)
    assert needle in str(e.value) and "\n" not in str(e.value)
