"""INSERT OVERWRITE into filesystem tables in BATCH mode on Strom's runtime: an unpartitioned table is replaced
whole; a partitioned one loses only the partitions the job writes (Flink's dynamic partition overwrite);
streaming refuses as Flink does. The expected table is the rows of the last INSERT (plus untouched partitions),
computed in plain Python; the files are read back by DuckDB's CSV reader."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.errors import ValidationException


def _batch() -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("table.exec.batch.runner", "strom")  # this test is about Strom's own sink
    t_env.get_config().set("parallelism.default", "2")
    return t_env


def _files_rows(path: Path) -> list[tuple]:
    files = [str(p) for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
    if not files:
        return []
    rows = duckdb.sql(f"SELECT * FROM read_csv({files!r}, header=false, hive_partitioning=true, "
                      "columns={'id': 'INTEGER', 'name': 'VARCHAR'})").fetchall()
    return sorted(rows)


def test_overwrite_replaces_an_unpartitioned_table(tmp_path: Path) -> None:
    t_env = _batch()
    t_env.execute_sql(f"CREATE TABLE t (id INT, name STRING) WITH ('connector'='filesystem', 'path'='{tmp_path}', "
                      "'format'='csv')")
    t_env.execute_sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')").wait()
    t_env.execute_sql("INSERT INTO t VALUES (4, 'd')").wait()
    assert _files_rows(tmp_path) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    t_env.execute_sql("INSERT OVERWRITE t VALUES (10, 'x'), (11, 'y')").wait()
    assert _files_rows(tmp_path) == [(10, "x"), (11, "y")]
    with t_env.execute_sql("SELECT id, name FROM t").collect() as rows:
        assert sorted(tuple(r) for r in rows) == [(10, "x"), (11, "y")]


def test_overwrite_of_a_partitioned_table_replaces_the_written_partitions_only(tmp_path: Path) -> None:
    t_env = _batch()
    t_env.execute_sql(f"CREATE TABLE p (id INT, dt STRING) PARTITIONED BY (dt) WITH ('connector'='filesystem', "
                      f"'path'='{tmp_path}', 'format'='csv')")
    before = [(1, "2024-01-01"), (2, "2024-01-01"), (3, "2024-01-02"), (4, "2024-01-03")]
    t_env.execute_sql("INSERT INTO p VALUES " + ", ".join(f"({i}, '{d}')" for i, d in before)).wait()
    new = [(7, "2024-01-02"), (8, "2024-01-04")]
    t_env.execute_sql("INSERT OVERWRITE p VALUES " + ", ".join(f"({i}, '{d}')" for i, d in new)).wait()
    written = {d for _, d in new}
    expected = sorted([r for r in before if r[1] not in written] + new)
    with t_env.execute_sql("SELECT id, dt FROM p").collect() as rows:
        assert sorted(tuple(r) for r in rows) == expected


def test_streaming_and_other_connectors_refuse_overwrite_as_flink(tmp_path: Path) -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.execute_sql(f"CREATE TABLE t (id INT) WITH ('connector'='filesystem', 'path'='{tmp_path}', 'format'='csv')")
    with pytest.raises(ValidationException, match="Streaming mode not support overwrite"):
        t_env.execute_sql("INSERT OVERWRITE t VALUES (1)")
    batch = _batch()
    batch.execute_sql("CREATE TABLE b (id INT) WITH ('connector'='blackhole')")
    with pytest.raises(ValidationException, match="implements the SupportsOverwrite interface"):
        batch.execute_sql("INSERT OVERWRITE b VALUES (1)")


def test_static_partition_spec_fills_the_column_and_overwrites_that_partition(tmp_path: Path) -> None:
    t_env = _batch()
    t_env.execute_sql(f"CREATE TABLE p (id INT, name STRING, dt STRING) PARTITIONED BY (dt) WITH ("
                      f"'connector'='filesystem', 'path'='{tmp_path}', 'format'='csv')")
    t_env.execute_sql("INSERT INTO p PARTITION (dt = '2024-01-01') VALUES (1, 'a'), (2, 'b')").wait()
    t_env.execute_sql("INSERT INTO p PARTITION (dt = '2024-01-02') VALUES (3, 'c')").wait()
    assert (tmp_path / "dt=2024-01-01").is_dir() and (tmp_path / "dt=2024-01-02").is_dir()
    t_env.execute_sql("INSERT OVERWRITE p PARTITION (dt = '2024-01-01') SELECT id * 10, name FROM p "
                      "WHERE dt = '2024-01-01'").wait()
    with t_env.execute_sql("SELECT id, name, dt FROM p").collect() as rows:
        assert sorted(tuple(r) for r in rows) == [(3, "c", "2024-01-02"), (10, "a", "2024-01-01"),
                                                  (20, "b", "2024-01-01")]
    with pytest.raises(ValidationException, match="'name' is not a partition column of p"):
        t_env.execute_sql("INSERT INTO p PARTITION (name = 'x') VALUES (1, 'd')")
    with pytest.raises(ValidationException, match="the query has 3 columns, the table's other columns are 2"):
        t_env.execute_sql("INSERT INTO p PARTITION (dt = 'x') VALUES (1, 'a', 'b')")
