"""'connector' = 'filesystem': INSERT from VALUES and datagen into csv/json/raw files (partitioned
directories, part files as Flink names them, success files), read back by Strom, by DuckDB
(read_csv/read_json with hive partitioning over the same files) and by plain Python; format options
and refusals. The kill -9 exactly-once test lives in test_filesystem_exactly_once.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.errors import NotSupportedYet, TableException, ValidationException

ROWS = [(1, "a", 2.5, "2026-11-26", 10), (2, "b,c", None, "2026-11-26", 11), (3, 'q"x', -1.0, None, 10),
        (4, "", 7.25, "2026-11-27", 10)]
VALUES = ("(VALUES (1, 'a', 2.5, '2026-11-26', 10), (2, 'b,c', CAST(NULL AS DOUBLE), '2026-11-26', 11), "
          "(3, 'q\"x', -1.0, CAST(NULL AS STRING), 10), (4, '', 7.25, '2026-11-27', 10)) AS v(id, name, score, dt, hr)")
PART_FILE = re.compile(r"part-[0-9a-f-]{36}-\d+-\d+")


def _t_env(parallelism: int = 2, streaming: bool = True) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                    else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    return t_env


def _create(t_env: TableEnvironment, name: str, path: Path, fmt: str, extra: str = "") -> None:
    t_env.execute_sql(f"CREATE TABLE {name} (id BIGINT, name STRING, score DOUBLE, dt STRING, hr INT) "
                      f"PARTITIONED BY (dt, hr) WITH ('connector'='filesystem', 'path'='{path}', "
                      f"'format'='{fmt}'{extra})")


def _files(path: Path) -> list[Path]:
    return sorted(f for f in path.rglob("*") if f.is_file())


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_partitioned_insert_is_read_back_equal_by_strom_duckdb_and_python(tmp_path: Path, fmt: str) -> None:
    t_env = _t_env()
    _create(t_env, "out", tmp_path, fmt, ", 'sink.partition-commit.policy.kind'='success-file'")
    t_env.execute_sql(f"INSERT INTO out SELECT * FROM {VALUES}").wait()
    files = _files(tmp_path)
    dirs = {str(f.parent.relative_to(tmp_path)) for f in files}
    assert dirs == {"dt=2026-11-26/hr=10", "dt=2026-11-26/hr=11", "dt=__DEFAULT_PARTITION__/hr=10",
                    "dt=2026-11-27/hr=10"}
    assert all(f.name == "_SUCCESS" or PART_FILE.fullmatch(f.name) for f in files), files
    assert {f.parent for f in files if f.name == "_SUCCESS"} == {tmp_path / d for d in dirs}
    expected = sorted(ROWS, key=lambda r: r[0])

    # Strom reads its own files back
    _create(t_env, "back", tmp_path, fmt)
    with t_env.execute_sql("SELECT * FROM back").collect() as rows:
        assert sorted((tuple(r) for r in rows), key=lambda r: r[0]) == expected

    # plain Python: the partition from the directory names, the rest from each line
    parts = [f for f in files if f.name != "_SUCCESS"]
    python_rows = []
    for f in parts:
        dt, hr = (seg.split("=", 1)[1] for seg in f.parent.relative_to(tmp_path).parts)
        for line in f.read_text().splitlines():
            if fmt == "json":
                obj = json.loads(line)
                values = (obj["id"], obj["name"], obj["score"])
            else:
                import csv

                i, n, s = next(csv.reader([line]))
                values = (int(i), n, float(s) if s else None)
            python_rows.append((*values, None if dt == "__DEFAULT_PARTITION__" else dt, int(hr)))
    assert sorted(python_rows, key=lambda r: r[0]) == expected

    # DuckDB over the same files, hive partitioning
    glob = f"{tmp_path}/*/*/part-*"
    if fmt == "csv":
        source = (f"read_csv('{glob}', header=false, hive_partitioning=true, quote='\"', escape='\"', "
                  "columns={'id': 'BIGINT', 'name': 'VARCHAR', 'score': 'DOUBLE'})")
    else:
        source = (f"read_json('{glob}', format='newline_delimited', hive_partitioning=true, "
                  "columns={'id': 'BIGINT', 'name': 'VARCHAR', 'score': 'DOUBLE'})")
    duck = duckdb.sql(f"SELECT id, name, score, CASE WHEN dt = '__DEFAULT_PARTITION__' THEN NULL ELSE dt END, "
                      f"CAST(hr AS INT) FROM {source} ORDER BY id").fetchall()
    # DuckDB's CSV reader reads an empty unquoted field as NULL; Flink's csv writes '' that way too
    assert [tuple(r) for r in duck] == [(i, n if n or fmt == "json" else None, s, d, h) for i, n, s, d, h in expected]


def test_unpartitioned_datagen_into_raw_files_with_small_rolling_parts(tmp_path: Path) -> None:
    t_env = _t_env(parallelism=2)
    t_env.execute_sql("CREATE TABLE gen (id BIGINT) WITH ('connector'='datagen', 'fields.id.kind'='sequence', "
                      "'fields.id.start'='1', 'fields.id.end'='500')")
    t_env.execute_sql(f"CREATE TABLE lines (line STRING) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                      "'format'='raw', 'sink.rolling-policy.file-size'='1kb')")
    t_env.execute_sql("INSERT INTO lines SELECT CONCAT('row-', CAST(id AS STRING)) FROM gen").wait()
    files = _files(tmp_path)
    assert all(PART_FILE.fullmatch(f.name) for f in files)
    assert len(files) > 2, "1 kb parts of ~4 kb of lines per subtask roll several times"
    subtasks = {f.name.rsplit("-", 2)[1] for f in files}
    assert subtasks == {"0", "1"}
    lines = sorted(line for f in files for line in f.read_text().splitlines())
    assert lines == sorted(f"row-{i}" for i in range(1, 501))
    duck = duckdb.sql(f"SELECT count(*), count(DISTINCT column0) FROM read_csv('{tmp_path}/part-*', header=false, "
                      "columns={'column0': 'VARCHAR'})").fetchall()
    assert duck == [(500, 500)]


def test_parse_errors_fail_or_are_skipped_by_the_format_options(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("1,a\nnot-a-number,b\n3,c\n")
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "data.json").write_text('{"id": 1, "name": "a"}\n{broken\n{"id": 3}\n')
    t_env = _t_env(parallelism=1, streaming=False)
    csv_path = tmp_path / "data.csv"
    t_env.execute_sql(f"CREATE TABLE c (id BIGINT, name STRING) WITH ('connector'='filesystem', "
                      f"'path'='{csv_path}', 'format'='csv')")
    with pytest.raises(Exception, match="csv field 'id' is not a BIGINT: 'not-a-number'"):
        with t_env.execute_sql("SELECT * FROM c").collect() as rows:
            list(rows)
    t_env.execute_sql(f"CREATE TABLE c2 (id BIGINT, name STRING) WITH ('connector'='filesystem', "
                      f"'path'='{csv_path}', 'format'='csv', 'csv.ignore-parse-errors'='true')")
    with t_env.execute_sql("SELECT * FROM c2").collect() as rows:
        # the bad field reads as NULL, its row kept (Flink: "fields are set to null in case of errors")
        assert sorted((tuple(r) for r in rows), key=str) == [(1, "a"), (3, "c"), (None, "b")]
    t_env.execute_sql(f"CREATE TABLE j (id BIGINT, name STRING) WITH ('connector'='filesystem', "
                      f"'path'='{tmp_path / 'j'}', 'format'='json', 'json.ignore-parse-errors'='true')")
    with t_env.execute_sql("SELECT * FROM j").collect() as rows:
        assert sorted((tuple(r) for r in rows), key=str) == [(1, "a"), (3, None)]
    t_env.execute_sql(f"CREATE TABLE j2 (id BIGINT, name STRING) WITH ('connector'='filesystem', "
                      f"'path'='{tmp_path / 'j'}', 'format'='json', 'json.fail-on-missing-field'='true')")
    with pytest.raises(Exception, match="failed to deserialize JSON"):
        with t_env.execute_sql("SELECT * FROM j2").collect() as rows:
            list(rows)


def test_csv_field_delimiter_and_null_literal(tmp_path: Path) -> None:
    t_env = _t_env(parallelism=1)
    t_env.execute_sql(f"CREATE TABLE t (id INT, name STRING) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                      "'format'='csv', 'csv.field-delimiter'='|', 'csv.null-literal'='N/A')")
    t_env.execute_sql("INSERT INTO t SELECT * FROM (VALUES (1, 'x|y'), (2, CAST(NULL AS STRING))) AS v(id, name)"
                      ).wait()
    lines = sorted(line for f in _files(tmp_path) for line in f.read_text().splitlines())
    assert lines == ['1|"x|y"', "2|N/A"]
    with t_env.execute_sql("SELECT * FROM t").collect() as rows:
        assert sorted(tuple(r) for r in rows) == [(1, "x|y"), (2, None)]


def test_options_are_validated_with_flinks_names(tmp_path: Path) -> None:
    t_env = _t_env()
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("CREATE TABLE t (a INT) WITH ('connector'='filesystem', 'format'='csv')")
    assert "needs option 'path'" in str(e.value)
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql(f"CREATE TABLE t (a INT) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                          "'format'='csv', 'csv.field-delimitr'=';')")
    message = str(e.value)
    assert "unsupported option 'csv.field-delimitr'" in message and "csv.field-delimiter" in message
    assert "sink.rolling-policy.file-size" in message  # the connector's own options are listed too
    with pytest.raises(ValidationException, match="json.ignore-parse-errors"):  # another format's option
        t_env.execute_sql(f"CREATE TABLE t (a INT) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                          "'format'='csv', 'json.ignore-parse-errors'='true')")
    with pytest.raises(ValidationException, match="unknown format 'parquet'; available: .*csv, json, raw"):
        t_env.execute_sql(f"CREATE TABLE t (a INT) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                          "'format'='parquet')")
    with pytest.raises(ValidationException, match="raw format supports a single physical column"):
        t_env.execute_sql(f"CREATE TABLE t (a STRING, b STRING) WITH ('connector'='filesystem', "
                          f"'path'='{tmp_path}', 'format'='raw')")
    with pytest.raises(ValidationException, match="PARTITIONED BY column 'x' is not a physical column"):
        t_env.execute_sql(f"CREATE TABLE t (a INT) PARTITIONED BY (x) WITH ('connector'='filesystem', "
                          f"'path'='{tmp_path}', 'format'='csv')")
    with pytest.raises(NotSupportedYet, match="auto-compaction"):
        t_env.execute_sql(f"CREATE TABLE t (a INT) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                          "'format'='csv', 'auto-compaction'='true')")


def test_updating_query_into_filesystem_is_refused(tmp_path: Path) -> None:
    t_env = _t_env()
    t_env.execute_sql(f"CREATE TABLE t (name STRING, n BIGINT) WITH ('connector'='filesystem', "
                      f"'path'='{tmp_path}', 'format'='csv')")
    with pytest.raises(TableException, match="doesn't support consuming update changes"):
        t_env.execute_sql("INSERT INTO t SELECT name, COUNT(*) FROM (VALUES ('a'), ('a')) AS v(name) GROUP BY name")


def test_monitored_directory_is_read_continuously(tmp_path: Path) -> None:
    (tmp_path / "1.csv").write_text("1,a\n")
    t_env = _t_env(parallelism=1)
    t_env.execute_sql(f"CREATE TABLE t (id INT, name STRING) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                      "'format'='csv', 'source.monitor-interval'='100 ms')")
    with pytest.raises(ValidationException, match="unbounded; batch mode needs bounded sources"):
        _batch_select_of_a_monitored_table(tmp_path)
    with t_env.execute_sql("SELECT * FROM t").collect() as rows:
        it = iter(rows)
        assert tuple(next(it)) == (1, "a")
        (tmp_path / ".2.csv.tmp").write_text("2,b\n")
        (tmp_path / ".2.csv.tmp").rename(tmp_path / "2.csv")  # appears whole, as a committed part does
        assert tuple(next(it)) == (2, "b")


def _batch_select_of_a_monitored_table(tmp_path: Path) -> None:
    t_env = _t_env(streaming=False)
    t_env.execute_sql(f"CREATE TABLE m (id INT) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                      "'format'='csv', 'source.monitor-interval'='1 s')")
    t_env.execute_sql("SELECT * FROM m")
