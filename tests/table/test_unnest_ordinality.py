"""UNNEST .. WITH ORDINALITY (the 1-based position as a last INT NOT NULL column) and UNNEST of a MAP (one row
per entry: key, value), against DuckDB's unnest WITH ORDINALITY and its map_entries; Flink's LEFT JOIN ..
ON TRUE row of NULLs and default column name (ORDINALITY) worked by hand."""

from __future__ import annotations

import pytest
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment
from strom.table.errors import ValidationException

from .reference import duckdb_table, reduce_changelog

ROWS = [(1, ["a", "b", "a"], {"x": 1, "y": 2}), (2, [], {}), (3, None, None), (4, [None, "c"], {"z": None})]
DUCK_COLUMNS = [("id", "INTEGER"), ("tags", "VARCHAR[]"), ("m", "MAP(VARCHAR, INTEGER)")]

SAME_AS_DUCKDB = [
    ("SELECT id, tag, n FROM t CROSS JOIN UNNEST(tags) WITH ORDINALITY AS u(tag, n)",
     "SELECT id, tag, n FROM t, unnest(tags) WITH ORDINALITY AS u(tag, n)"),
    ("SELECT tag, MIN(n), COUNT(*) FROM t CROSS JOIN UNNEST(tags) WITH ORDINALITY AS u(tag, n) GROUP BY tag",
     "SELECT tag, min(n), count(*) FROM t, unnest(tags) WITH ORDINALITY AS u(tag, n) GROUP BY tag"),
    ("SELECT id, k, v FROM t CROSS JOIN UNNEST(m) AS u(k, v)",
     "SELECT id, e.key, e.value FROM t, unnest(map_entries(m)) AS u(e)"),
]


def _t_env(streaming: bool) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                    else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "2")
    schema = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()),
                            DataTypes.FIELD("tags", DataTypes.ARRAY(DataTypes.STRING())),
                            DataTypes.FIELD("m", DataTypes.MAP(DataTypes.STRING(), DataTypes.INT()))])
    t_env.create_temporary_view("t", t_env.from_elements(ROWS, schema))
    return t_env


@pytest.mark.parametrize(("flink", "duck"), SAME_AS_DUCKDB)
def test_unnest_with_ordinality_and_of_maps_equal_duckdb(flink: str, duck: str) -> None:
    with _t_env(True).execute_sql(flink).collect() as rows:
        got = reduce_changelog(list(rows))
    assert got == duckdb_table({"t": (DUCK_COLUMNS, ROWS)}, duck)


def test_left_join_with_ordinality_keeps_a_row_of_nulls_and_names_the_column_ordinality() -> None:
    t_env = _t_env(True)
    table = t_env.sql_query("SELECT id, `EXPR$0`, ORDINALITY FROM t LEFT JOIN UNNEST(tags) WITH ORDINALITY ON TRUE")
    assert [str(t) for t in table.get_schema().get_field_data_types()] == ["INT", "STRING", "INT"]
    with table.execute().collect() as rows:
        got = sorted((tuple(r) for r in rows), key=repr)
    expected = [(i, tag, n) for i, tags, _ in ROWS for n, tag in enumerate(tags or [], 1)]
    expected += [(i, None, None) for i, tags, _ in ROWS if not tags]
    assert got == sorted(expected, key=repr)
    inner = t_env.sql_query("SELECT n FROM t CROSS JOIN UNNEST(tags) WITH ORDINALITY AS u(tag, n)")
    assert str(inner.get_schema().get_field_data_types()[0]) == "INT NOT NULL"


def test_unnest_of_a_scalar_and_wrong_names_are_refused() -> None:
    t_env = _t_env(True)
    with pytest.raises(ValidationException, match=r"UNNEST\(id\): id is INT, not an ARRAY or a MAP"):
        t_env.execute_sql("SELECT * FROM t CROSS JOIN UNNEST(id) AS u(x)")
    with pytest.raises(ValidationException, match=r"gives 2 columns, got 1 names"):
        t_env.execute_sql("SELECT * FROM t CROSS JOIN UNNEST(m) AS u(k)")
