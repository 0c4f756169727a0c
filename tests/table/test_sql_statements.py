"""SQL statements that act on the session (SET/RESET, USE, SHOW, SHOW CREATE TABLE, ALTER TABLE, CREATE
TABLE .. LIKE), INSERT with a column list and INSERT OVERWRITE, statement sets (one job, several sinks,
shared sources) and table.local-time-zone. Expected values are worked by hand from Flink's documentation;
INSERT results are read back from the print sinks' lines."""

from __future__ import annotations

import datetime
import threading

import pytest
from strom.common.row import Row, RowKind
from strom.common.typeinfo import Types
from strom.datastream import StreamExecutionEnvironment
from strom.table import (
    ChangelogMode,
    DataTypes,
    EnvironmentSettings,
    FormatDescriptor,
    NotSupportedYet,
    Schema,
    SqlParserException,
    StreamTableEnvironment,
    TableDescriptor,
    TableEnvironment,
    ValidationException,
)
from strom.table.expressions import col
from strom.table.table_result import ResultKind
from strom.table.udf import udf

SRC = ("CREATE TABLE src (id INT, name STRING) WITH ('connector'='datagen', 'number-of-rows'='5', "
       "'fields.id.kind'='sequence', 'fields.id.start'='1', 'fields.id.end'='5', 'fields.name.length'='3')")


def _batch() -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql(SRC)
    return t_env


def _print_sink(t_env: TableEnvironment, name: str, columns: str) -> None:
    t_env.execute_sql(f"CREATE TABLE {name} ({columns}) WITH ('connector'='print', 'print-identifier'='{name}')")


def _lines(out: str, sink: str) -> list[str]:
    """What the print sink `sink` printed (Flink's '<identifier>> +I[..]' lines), sorted."""
    return sorted(line[len(sink) + 2:] for line in out.splitlines() if line.startswith(f"{sink}> "))


def _rows(result) -> list[tuple]:  # type: ignore[no-untyped-def]
    with result.collect() as rows:
        return [tuple(r) for r in rows]


def test_set_reset_and_listing() -> None:
    t_env = _batch()
    assert t_env.execute_sql("SET 'table.local-time-zone' = 'Asia/Tokyo'").get_result_kind() == ResultKind.SUCCESS
    t_env.execute_sql("SET 'table.exec.state.ttl' = '1 h'")
    assert _rows(t_env.execute_sql("SET")) == [("parallelism.default", "1"), ("table.exec.state.ttl", "1 h"),
                                               ("table.local-time-zone", "Asia/Tokyo")]
    assert t_env.get_config().get_local_timezone() == "Asia/Tokyo"
    assert t_env._state_ttl_ms() == 3_600_000  # the same configuration the planner reads
    t_env.execute_sql("RESET 'table.exec.state.ttl'")
    assert t_env._state_ttl_ms() == 0
    assert _rows(t_env.execute_sql("SET")) == [("parallelism.default", "1"), ("table.local-time-zone", "Asia/Tokyo")]
    t_env.execute_sql("RESET")
    assert _rows(t_env.execute_sql("SET")) == [] and t_env.get_config().get_local_timezone() == "default"
    with pytest.raises(ValidationException, match="unknown time zone 'Nowhere/Land'"):
        t_env.execute_sql("SET 'table.local-time-zone' = 'Nowhere/Land'")
    with pytest.raises(ValidationException, match="unknown configuration key 'table.no-such-key'"):
        t_env.execute_sql("SET 'table.no-such-key' = '1'")
    with pytest.raises(SqlParserException, match="SET 'key' = 'value'"):
        t_env.execute_sql("SET table.x")


def test_use_and_show_catalog_objects() -> None:
    t_env = _batch()
    for sql in ("USE default_database", "USE default_catalog.default_database", "USE CATALOG default_catalog"):
        assert t_env.execute_sql(sql).get_result_kind() == ResultKind.SUCCESS
    with pytest.raises(ValidationException, match=r"database with name \[other\] does not exist.*'default_database'"):
        t_env.execute_sql("USE other")
    with pytest.raises(ValidationException, match=r"catalog with name \[hive\] does not exist.*'default_catalog'"):
        t_env.execute_sql("USE CATALOG hive")
    assert _rows(t_env.execute_sql("SHOW CATALOGS")) == [("default_catalog",)]
    assert _rows(t_env.execute_sql("SHOW DATABASES")) == [("default_database",)]
    assert _rows(t_env.execute_sql("SHOW CURRENT CATALOG")) == [("default_catalog",)]
    assert _rows(t_env.execute_sql("SHOW CURRENT DATABASE")) == [("default_database",)]
    t_env.create_temporary_function("plus_one", udf(lambda x: x + 1, result_type=DataTypes.INT()))
    assert _rows(t_env.execute_sql("SHOW USER FUNCTIONS")) == [("plus_one",)]
    functions = [r[0] for r in _rows(t_env.execute_sql("SHOW FUNCTIONS"))]
    assert {"plus_one", "date_format", "json_value", "upper"} <= set(functions) and functions == sorted(functions)


def test_show_create_table_and_alter_table() -> None:
    t_env = _batch()
    t_env.execute_sql("CREATE TABLE w (id INT NOT NULL, id2 AS id * 2, ts TIMESTAMP(3), "
                      "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector'='datagen', "
                      "'number-of-rows'='1')")
    (ddl,), = _rows(t_env.execute_sql("SHOW CREATE TABLE w"))
    assert ddl == ("CREATE TABLE `default_catalog`.`default_database`.`w` (\n  `id` INT NOT NULL,\n"
                   "  `id2` AS (id * 2),\n  `ts` TIMESTAMP(3),\n  WATERMARK FOR `ts` AS (ts - INTERVAL '5' SECOND)\n"
                   ") WITH (\n  'connector' = 'datagen',\n  'number-of-rows' = '1'\n)\n")
    t_env.execute_sql("ALTER TABLE w SET ('number-of-rows' = '3', 'fields.id.min' = '7', 'fields.id.max' = '7')")
    assert _rows(t_env.execute_sql("SELECT id, id2 FROM w")) == [(7, 14)] * 3
    t_env.execute_sql("ALTER TABLE w RESET ('fields.id.min', 'fields.id.max')")
    assert "fields.id.min" not in t_env._catalog.get("w").options
    t_env.execute_sql("ALTER TABLE w RENAME TO w2")
    assert [r[0] for r in _rows(t_env.execute_sql("SHOW TABLES"))] == ["src", "w2"]
    with pytest.raises(ValidationException, match="'nope' not found"):
        t_env.execute_sql("ALTER TABLE nope RENAME TO x")
    assert t_env.execute_sql("ALTER TABLE IF EXISTS nope RENAME TO x").get_result_kind() == ResultKind.SUCCESS
    with pytest.raises(ValidationException, match="'src' already exists"):
        t_env.execute_sql("ALTER TABLE w2 RENAME TO src")
    with pytest.raises(ValidationException, match="rows-per-secnd"):
        t_env.execute_sql("ALTER TABLE w2 SET ('rows-per-secnd' = '5')")  # checked as at CREATE


def test_create_table_like_merges_as_flink() -> None:
    t_env = _batch()
    t_env.execute_sql("CREATE TABLE base (id INT, ts TIMESTAMP(3), c AS id + 1, WATERMARK FOR ts AS ts) "
                      "WITH ('connector'='datagen', 'number-of-rows'='2', 'fields.id.min'='1', 'fields.id.max'='1')")
    # default INCLUDING ALL OVERWRITING OPTIONS: base columns first, then the new ones; new options win
    t_env.execute_sql("CREATE TABLE d1 (extra STRING) WITH ('number-of-rows'='3') LIKE base")
    d1 = t_env._catalog.get("d1")
    assert [n for n, _ in d1.columns] == ["id", "ts", "extra"] and d1.order == ["id", "ts", "c", "extra"]
    assert d1.options["number-of-rows"] == "3" and d1.options["connector"] == "datagen"
    assert d1.watermark is not None and d1.watermark[0] == "ts"
    assert _rows(t_env.execute_sql("SELECT id, c FROM d1")) == [(1, 2)] * 3
    t_env.execute_sql("CREATE TABLE d2 WITH ('connector'='blackhole') LIKE base (EXCLUDING OPTIONS "
                      "EXCLUDING GENERATED EXCLUDING WATERMARKS)")
    d2 = t_env._catalog.get("d2")
    assert d2.options == {"connector": "blackhole"} and d2.computed == [] and d2.watermark is None
    t_env.execute_sql("CREATE TABLE d3 (WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) LIKE base "
                      "(OVERWRITING WATERMARKS)")
    assert t_env._catalog.get("d3").watermark[1].sql() == "(ts - INTERVAL '1' SECOND)"
    with pytest.raises(ValidationException, match="already exists a watermark spec for column 'ts'"):
        t_env.execute_sql("CREATE TABLE d4 (WATERMARK FOR ts AS ts) LIKE base")
    with pytest.raises(ValidationException, match="A column named 'id' already exists in the base table"):
        t_env.execute_sql("CREATE TABLE d5 (id INT) LIKE base")
    with pytest.raises(ValidationException, match=r"already exists an option \['connector'"):
        t_env.execute_sql("CREATE TABLE d6 WITH ('connector'='blackhole') LIKE base (INCLUDING OPTIONS)")
    with pytest.raises(SqlParserException, match="LIKE option 'INCLUDING NOTHING'"):
        t_env.execute_sql("CREATE TABLE d7 LIKE base (INCLUDING NOTHING)")


def test_insert_with_a_column_list_fills_nullable_columns(capfd: pytest.CaptureFixture[str]) -> None:
    t_env = _batch()
    _print_sink(t_env, "out", "a INT, b STRING, c INT")
    t_env.execute_sql("INSERT INTO out (c, a) SELECT id * 10, id FROM src WHERE id <= 2").wait()
    assert _lines(capfd.readouterr().out, "out") == ["+I[1, null, 10]", "+I[2, null, 20]"]  # b: NULL
    _print_sink(t_env, "strict", "a INT NOT NULL, b STRING")
    with pytest.raises(ValidationException, match="column 'a' is NOT NULL and not in the column list"):
        t_env.execute_sql("INSERT INTO strict (b) SELECT name FROM src")
    with pytest.raises(ValidationException, match="unknown target column 'z'; the table's columns: a, b, c"):
        t_env.execute_sql("INSERT INTO out (z) SELECT id FROM src")
    with pytest.raises(ValidationException, match="the query has 2 columns, the column list 1"):
        t_env.execute_sql("INSERT INTO out (a) SELECT id, name FROM src")


def test_insert_overwrite_needs_a_sink_that_supports_it() -> None:
    for t_env in (_batch(), TableEnvironment.create(EnvironmentSettings.in_streaming_mode())):
        t_env.execute_sql("CREATE TABLE IF NOT EXISTS src (id INT) WITH ('connector'='datagen')")
        t_env.execute_sql("CREATE TABLE bh (id INT) WITH ('connector'='blackhole')")
        with pytest.raises(ValidationException, match="'default_catalog.default_database.bh' implements the "
                                                      "SupportsOverwrite interface"):
            t_env.execute_sql("INSERT OVERWRITE bh SELECT id FROM src")


_calls = {"n": 0}
_lock = threading.Lock()


def _tick(ids):  # type: ignore[no-untyped-def]  # a pandas UDF: counts the rows it computes
    with _lock:
        _calls["n"] += len(ids)
    return ids


def test_statement_set_runs_one_job_with_shared_source(capfd: pytest.CaptureFixture[str]) -> None:
    """Two INSERTs reading one view run as ONE job in which the view's Calc (a pandas UDF counting the
    rows it computes) runs once for both sinks: the shared sub-plan is translated once."""
    t_env = _batch()
    t_env.create_temporary_function("tick", udf(_tick, result_type=DataTypes.INT(), func_type="pandas"))
    t_env.create_temporary_view("v", t_env.sql_query("SELECT tick(id) AS id, name FROM src"))
    _print_sink(t_env, "a", "id INT")
    _print_sink(t_env, "b", "id INT, n INT")
    statement_set = t_env.create_statement_set()
    statement_set.add_insert_sql("INSERT INTO a SELECT id FROM v WHERE id > 3")
    statement_set.add_insert("b", t_env.sql_query("SELECT id, id * 10 FROM v"))
    plan = statement_set.explain()
    assert plan.count("Sink(table=") == 2 and "default_database.a" in plan and "default_database.b" in plan
    _calls["n"] = 0
    result = statement_set.execute()
    assert result.get_result_kind() == ResultKind.SUCCESS_WITH_CONTENT
    assert [n for n, _ in result._columns] == ["default_catalog.default_database.a",
                                               "default_catalog.default_database.b"]
    result.get_job_client().wait(60)
    out = capfd.readouterr().out
    assert _lines(out, "a") == ["+I[4]", "+I[5]"]
    assert _lines(out, "b") == sorted(f"+I[{i}, {i * 10}]" for i in range(1, 6))
    assert _calls["n"] == 5  # one source for both sinks, not one per sink
    with pytest.raises(ValidationException, match="add_insert_sql takes an INSERT statement"):
        statement_set.add_insert_sql("SELECT 1")
    with pytest.raises(ValidationException, match="no INSERT"):
        statement_set.execute()  # executed sets are cleared, as Flink's


def test_execute_statement_set_and_the_sql_clients_begin_end(capfd: pytest.CaptureFixture[str]) -> None:
    t_env = _batch()
    _print_sink(t_env, "a", "id INT")
    _print_sink(t_env, "b", "id INT")
    result = t_env.execute_sql("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT id FROM src WHERE id = 1; "
                               "INSERT INTO b SELECT id FROM src WHERE name <> ';'; END;")
    result.wait()
    out = capfd.readouterr().out
    assert _lines(out, "a") == ["+I[1]"] and len(_lines(out, "b")) == 5
    _print_sink(t_env, "c", "id INT")
    _print_sink(t_env, "d", "id INT")
    assert t_env.execute_sql("BEGIN STATEMENT SET;").get_result_kind() == ResultKind.SUCCESS
    t_env.execute_sql("INSERT INTO c SELECT id FROM src WHERE id = 2;")
    with pytest.raises(ValidationException, match="only INSERT statements can be added to a statement set"):
        t_env.execute_sql("SELECT id FROM src")
    t_env.execute_sql("INSERT INTO d SELECT id + 100 FROM src WHERE id = 3;")
    assert _lines(capfd.readouterr().out, "c") == []  # nothing runs before END
    result = t_env.execute_sql("END;")
    assert result.get_job_client() is not None
    result.wait()
    out = capfd.readouterr().out
    assert _lines(out, "c") == ["+I[2]"] and _lines(out, "d") == ["+I[103]"]
    with pytest.raises(ValidationException, match="END without BEGIN STATEMENT SET"):
        t_env.execute_sql("END")
    with pytest.raises(ValidationException, match="holds only INSERT statements"):
        t_env.execute_sql("EXECUTE STATEMENT SET BEGIN SELECT 1; END")


def test_local_time_zone_changes_ltz_display_and_wall_clock_functions() -> None:
    t_env = _batch()
    t_env.get_config().set("table.local-time-zone", "Asia/Shanghai")  # UTC+8, no daylight saving
    assert _rows(t_env.execute_sql(
        "SELECT CAST(TO_TIMESTAMP_LTZ(0, 3) AS STRING), FROM_UNIXTIME(0), UNIX_TIMESTAMP('1970-01-01 08:00:00'), "
        "HOUR(TO_TIMESTAMP_LTZ(0, 0)), DATE_FORMAT(TO_TIMESTAMP_LTZ(0, 0), 'yyyy-MM-dd HH') FROM src WHERE id = 1"
    )) == [("1970-01-01 08:00:00.000", "1970-01-01 08:00:00", 0, 8, "1970-01-01 08")]
    ((local, instant),) = _rows(t_env.execute_sql("SELECT LOCALTIMESTAMP, CURRENT_TIMESTAMP FROM src WHERE id = 1"))
    utc_now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert abs(local - (utc_now + datetime.timedelta(hours=8))) < datetime.timedelta(minutes=1)
    assert abs(instant - utc_now) < datetime.timedelta(minutes=1)  # an instant; the zone changes only its display
    assert _rows(t_env.execute_sql(
        "SELECT CAST(TO_TIMESTAMP_LTZ(0, 3) AS TIMESTAMP(3)), "
        "CAST(CAST(TIMESTAMP '1970-01-01 08:00:00' AS TIMESTAMP_LTZ(3)) AS STRING) FROM src WHERE id = 1"
    )) == [(datetime.datetime(1970, 1, 1, 8), "1970-01-01 08:00:00.000")]  # the wall clock <-> instant, at +8
    t_env.get_config().set("table.local-time-zone", "GMT-03:30")
    assert _rows(t_env.execute_sql("SELECT FROM_UNIXTIME(0) FROM src WHERE id = 1")) == [("1969-12-31 20:30:00",)]


def test_unsupported_statements_are_named() -> None:
    t_env = _batch()
    with pytest.raises(NotSupportedYet, match="CREATE DATABASE"):
        t_env.execute_sql("CREATE DATABASE db2")
    with pytest.raises(NotSupportedYet, match="ALTER TABLE t RENAME TO"):
        t_env.execute_sql("ALTER TABLE src ADD (c INT)")


def test_table_descriptor_declares_tables_as_create_table_does(capfd: pytest.CaptureFixture[str]) -> None:
    t_env = _batch()
    schema = (Schema.new_builder().column("id", DataTypes.INT()).column("name", DataTypes.STRING())
              .column_by_expression("id3", "id * 3").build())
    source = (TableDescriptor.for_connector("datagen").schema(schema).option("number-of-rows", 3)
              .option("fields.id.kind", "sequence").option("fields.id.start", "1").option("fields.id.end", "3")
              .build())
    t_env.create_temporary_table("gen", source)
    assert source.get_options()["number-of-rows"] == "3"
    assert _rows(t_env.from_path("gen").select(col("id"), col("id3")).execute()) == [(1, 3), (2, 6), (3, 9)]
    with pytest.raises(ValidationException, match="Temporary table 'default_catalog.default_database.gen' already"):
        t_env.create_temporary_table("gen", source)
    sink = (TableDescriptor.for_connector("print").schema(Schema.new_builder().column("id", DataTypes.INT()).build())
            .option("print-identifier", "desc").build())
    t_env.create_table("printed", sink)
    t_env.sql_query("SELECT id FROM gen WHERE id > 1").execute_insert("printed").wait()
    t_env.sql_query("SELECT id3 FROM gen WHERE id = 1").execute_insert(sink).wait()  # an anonymous table
    assert _lines(capfd.readouterr().out, "desc") == ["+I[2]", "+I[3]", "+I[3]"]
    assert "printed" in t_env.list_tables() and len(t_env.list_tables()) == 3  # the anonymous one is gone
    csv = (TableDescriptor.for_connector("filesystem").schema(schema)
           .format(FormatDescriptor.for_format("csv").option("field-delimiter", "|").build()).build())
    assert csv.get_options() == {"connector": "filesystem", "format": "csv", "csv.field-delimiter": "|"}
    with pytest.raises(ValidationException, match="rows-per-secnd"):
        t_env.create_temporary_table("bad", TableDescriptor.for_connector("datagen").schema(schema)
                                     .option("rows-per-secnd", "1").build())
    with pytest.raises(ValidationException, match="needs a schema"):
        t_env.create_temporary_table("bad2", TableDescriptor.for_connector("datagen").build())


def _row(kind: RowKind, *values: object) -> Row:
    row = Row(*values)
    row.set_row_kind(kind)
    return row


def test_from_changelog_stream_keeps_row_kinds() -> None:
    """Flink's documented example: a changelog of +I/-U/+U rows summed per name."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)
    changes = [_row(RowKind.INSERT, "Bob", 5), _row(RowKind.INSERT, "Alice", 12),
               _row(RowKind.UPDATE_BEFORE, "Alice", 12), _row(RowKind.UPDATE_AFTER, "Alice", 100)]
    ds = env.from_collection(changes, type_info=Types.ROW_NAMED(["name", "score"], [Types.STRING(), Types.INT()]))
    table = t_env.from_changelog_stream(ds)
    t_env.create_temporary_view("input_table", table)
    with t_env.execute_sql("SELECT name, SUM(score) FROM input_table GROUP BY name").collect() as rows:
        final: dict[str, int] = {}
        for r in rows:
            if r.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
                final[r[0]] = r[1]
            else:
                final.pop(r[0], None)
    assert final == {"Bob": 5, "Alice": 100}
    assert "changelogMode=[I,UB,UA,D]" in table.explain()
    with pytest.raises(NotSupportedYet, match="ChangelogMode.all"):
        t_env.from_changelog_stream(ds, None, ChangelogMode.upsert())
