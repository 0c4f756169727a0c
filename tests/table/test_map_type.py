"""MAP<K, V> values: DataTypes.MAP / MAP<K, V> columns, the MAP[k, v, ..] constructor, m[key], CARDINALITY,
MAP_KEYS/MAP_VALUES/MAP_ENTRIES/MAP_FROM_ARRAYS, CAST(map AS STRING) as Flink prints it, and the json format.
DuckDB computes the same lookups and sizes; Flink-only forms (its text form {a=1}) are worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment
from strom.table.errors import ValidationException

from .reference import duckdb_table, reduce_changelog

ROWS = [(1, {"a": 1, "b": 2}), (2, {}), (3, None), (4, {"a": None, "c": 30})]
DUCK_COLUMNS = [("id", "INTEGER"), ("m", "MAP(VARCHAR, INTEGER)")]

SAME_AS_DUCKDB = [
    ("SELECT id, m['a'], CARDINALITY(m) FROM t", "SELECT id, m['a'], cardinality(m) FROM t"),
    ("SELECT id, MAP['x', id, 'y', id * 2]['y'] FROM t", "SELECT id, MAP {'x': id, 'y': id * 2}['y'] FROM t"),
    ("SELECT id, CAST(MAP_KEYS(m) AS STRING), CAST(MAP_VALUES(m) AS STRING) FROM t",
     "SELECT id, map_keys(m)::VARCHAR, map_values(m)::VARCHAR FROM t"),
    ("SELECT m['c'], COUNT(*) FROM t GROUP BY m['c']", "SELECT m['c'], count(*) FROM t GROUP BY m['c']"),
]


def _t_env(streaming: bool = True) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                    else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "2")
    schema = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()),
                            DataTypes.FIELD("m", DataTypes.MAP(DataTypes.STRING(), DataTypes.INT()))])
    t_env.create_temporary_view("t", t_env.from_elements(ROWS, schema))
    return t_env


@pytest.mark.parametrize(("flink", "duck"), SAME_AS_DUCKDB)
def test_map_functions_equal_duckdb(flink: str, duck: str) -> None:
    with _t_env().execute_sql(flink).collect() as rows:
        got = reduce_changelog(list(rows))
    assert got == duckdb_table({"t": (DUCK_COLUMNS, ROWS)}, duck)


def test_map_type_text_and_entries_are_flinks() -> None:
    """Flink prints a MAP as {k=v, ..} (NULL values as NULL); MAP_ENTRIES gives ROW<key, value> elements."""
    t_env = _t_env()
    assert [str(t) for t in t_env.sql_query("SELECT m, MAP['x', id] FROM t").get_schema().get_field_data_types()] == [
        "MAP<STRING, INT>", "MAP<STRING NOT NULL, INT> NOT NULL"]
    with t_env.execute_sql("SELECT id, CAST(m AS STRING), MAP_ENTRIES(m) FROM t").collect() as rows:
        got = {r[0]: (r[1], [tuple(e) for e in r[2]] if r[2] is not None else None) for r in rows}
    assert got == {1: ("{a=1, b=2}", [("a", 1), ("b", 2)]), 2: ("{}", []), 3: (None, None),
                   4: ("{a=NULL, c=30}", [("a", None), ("c", 30)])}


def test_map_from_arrays_pairs_them_and_refuses_different_lengths() -> None:
    t_env = _t_env()
    with t_env.execute_sql("SELECT MAP_FROM_ARRAYS(ARRAY['k1', 'k2'], ARRAY[id, id + 1]) FROM t WHERE id = 1"
                           ).collect() as rows:
        assert [r[0] for r in rows] == [{"k1": 1, "k2": 2}]
    with pytest.raises(Exception, match="MAP_FROM_ARRAYS.*same length"):
        with t_env.execute_sql("SELECT MAP_FROM_ARRAYS(ARRAY['k1'], ARRAY[id, id]) FROM t").collect() as rows:
            list(rows)


def test_streaming_changelog_of_a_map_column_reduces_to_the_rows() -> None:
    with _t_env().execute_sql("SELECT id, m FROM t WHERE id > 1").collect() as rows:
        got = sorted((r[0], json.dumps(r[1], sort_keys=True)) for r in rows)
    assert got == sorted((i, json.dumps(m, sort_keys=True)) for i, m in ROWS if i > 1)


def test_json_format_reads_and_writes_maps(tmp_path: Path) -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "part-0.json").write_text('{"id": 1, "m": {"7": "x", "8": null}}\n{"id": 2, "m": null}\n')
    t_env.execute_sql(f"CREATE TABLE src (id INT, m MAP<INT, STRING>) WITH ('connector'='filesystem', "
                      f"'path'='{tmp_path / 'in'}', 'format'='json')")
    t_env.execute_sql(f"CREATE TABLE dst (id INT, m MAP<INT, STRING>) WITH ('connector'='filesystem', "
                      f"'path'='{tmp_path / 'out'}', 'format'='json')")
    with t_env.execute_sql("SELECT id, m[7], CARDINALITY(m) FROM src").collect() as rows:
        assert sorted(tuple(r) for r in rows) == [(1, "x", 2), (2, None, None)]
    t_env.execute_sql("INSERT INTO dst SELECT id, m FROM src").wait()
    written = [json.loads(line) for p in sorted((tmp_path / "out").rglob("*")) if p.is_file()
               and not p.name.startswith(".") for line in p.read_text().splitlines()]
    assert sorted(written, key=lambda o: o["id"]) == [{"id": 1, "m": {"7": "x", "8": None}}, {"id": 2, "m": None}]


@pytest.mark.parametrize(("sql", "needle"), [
    ("SELECT MAP['a'] FROM t", "even, non-zero number of arguments"),
    ("SELECT m[1] FROM t", "the key 1 is INT NOT NULL, the map's keys are STRING"),
    ("SELECT CARDINALITY(id) FROM t", "id is INT, not an ARRAY or a MAP"),
    ("SELECT MAP_KEYS(id) FROM t", "id is INT, not a MAP"),
])
def test_bad_map_uses_are_refused_naming_the_column(sql: str, needle: str) -> None:
    with pytest.raises(ValidationException, match=needle.replace("[", r"\[")):
        _t_env().execute_sql(sql)


def test_from_elements_checks_map_keys_and_values() -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    schema = DataTypes.ROW([DataTypes.FIELD("m", DataTypes.MAP(DataTypes.STRING(), DataTypes.INT()))])
    with pytest.raises(ValidationException, match=r"column \"m\['a'\]\" is INT but got 'x'"):
        t_env.from_elements([({"a": "x"},)], schema)
