"""Sources and sinks of batch SQL on Spark (filesystem csv/json, partitioned, datagen, print), Top-N and
deduplication, Python UDFs, EXPLAIN, and the routing: what falls back to the streaming runtime (with the
reason logged) and `table.exec.batch.runner`. References are plain Python over the same rows."""

from __future__ import annotations

import csv
import json
import os

import pytest
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment
from strom.table.udf import udaf, udf

CSV_ROWS = [("a,1", "x", "3"), ("", "y", ""), ('q"uote', "x", "-2"), ("b", "", "7")]


def _t_env() -> TableEnvironment:
    return TableEnvironment.create(EnvironmentSettings.in_batch_mode())


def _rows(t_env: TableEnvironment, sql: str) -> list[tuple]:
    with t_env.execute_sql(sql).collect() as rows:
        return [tuple(r) for r in rows]


def test_csv_source_reads_as_flinks_csv_format(spark, fallbacks, tmp_path) -> None:
    """Quoted delimiters and quotes, '' is '' for STRING and NULL for INT (Strom's csv format, Flink's rule)."""
    with open(tmp_path / "t.csv", "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(CSV_ROWS)
    t_env = _t_env()
    t_env.execute_sql(f"CREATE TABLE t (s STRING, g STRING, n INT) WITH ('connector' = 'filesystem', "
                      f"'path' = '{tmp_path}', 'format' = 'csv')")
    got = sorted(_rows(t_env, "SELECT s, g, n FROM t"), key=repr)
    assert fallbacks == []
    assert got == sorted(((s, g, int(n) if n else None) for s, g, n in CSV_ROWS), key=repr)


def test_csv_field_that_is_not_a_number_fails_naming_the_column(spark, tmp_path) -> None:
    (tmp_path / "t.csv").write_text("a,1\nb,1.5\n")
    t_env = _t_env()
    t_env.execute_sql(f"CREATE TABLE t (s STRING, n INT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}', "
                      "'format' = 'csv')")
    with pytest.raises(Exception, match="table 't': csv field 'n' is not a INT: '1.5'"):
        _rows(t_env, "SELECT SUM(n) FROM t")


def test_partitioned_csv_insert_and_json_read_back(spark, fallbacks, tmp_path) -> None:
    """INSERT INTO a partitioned filesystem table writes dt=<value>/ directories with Strom's encoder; the files
    read back through plain Python csv; a json table is read through Strom's decoder."""
    src = tmp_path / "src"
    src.mkdir()
    data = [{"user": "u1", "dt": "2026-11-25", "amount": 5}, {"user": "u2", "dt": "2026-11-26", "amount": 7},
            {"user": "u1", "dt": "2026-11-26", "amount": 1}]
    (src / "part.json").write_text("".join(json.dumps(d) + "\n" for d in data))
    out = tmp_path / "out"
    t_env = _t_env()
    t_env.execute_sql(f"CREATE TABLE src (`user` STRING, dt STRING, amount INT) WITH ('connector' = 'filesystem', "
                      f"'path' = '{src}', 'format' = 'json')")
    t_env.execute_sql(f"CREATE TABLE sink (`user` STRING, total INT, dt STRING) PARTITIONED BY (dt) WITH ("
                      f"'connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv', "
                      "'sink.partition-commit.policy.kind' = 'success-file')")
    t_env.execute_sql("INSERT INTO sink SELECT `user`, SUM(amount), dt FROM src GROUP BY `user`, dt").wait()
    assert fallbacks == []
    written = {}
    for d in sorted(os.listdir(out)):
        files = os.listdir(out / d)
        assert "_SUCCESS" in files and not any(f.startswith(".") for f in files)
        for name in files:
            if name.startswith("part-"):
                with open(out / d / name) as f:
                    written.update({(d, r[0]): int(r[1]) for r in csv.reader(f)})
    expected: dict[tuple[str, str], int] = {}
    for r in data:
        key = (f"dt={r['dt']}", r["user"])
        expected[key] = expected.get(key, 0) + r["amount"]
    assert written == expected
    # the partitioned table reads back (partition values from the directory names)
    assert sorted(_rows(t_env, "SELECT dt, `user`, total FROM sink")) == sorted(
        (d[3:], u, n) for (d, u), n in expected.items())


def test_datagen_sequence_and_print_sink(spark, fallbacks, capsys) -> None:
    t_env = _t_env()
    t_env.execute_sql("CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', "
                      "'fields.id.start' = '1', 'fields.id.end' = '100')")
    assert _rows(t_env, "SELECT COUNT(*), SUM(id), SUM(id % 3) FROM g") == [
        (100, sum(range(1, 101)), sum(i % 3 for i in range(1, 101)))]
    t_env.execute_sql("CREATE TABLE p (n BIGINT, s BIGINT) WITH ('connector' = 'print')")
    t_env.execute_sql("INSERT INTO p SELECT id % 2, SUM(id) FROM g GROUP BY id % 2").wait()
    printed = sorted(line for line in capsys.readouterr().out.splitlines() if line.startswith("+I["))
    assert printed == [f"+I[0, {sum(range(2, 101, 2))}]", f"+I[1, {sum(range(1, 101, 2))}]"]
    assert fallbacks == []


def test_top_n_and_deduplication(spark, fallbacks) -> None:
    rows = [("a", 5, 1), ("a", 9, 2), ("a", 7, 3), ("b", 1, 4), ("b", 3, 5), (None, 2, 6)]
    t_env = _t_env()
    t_env.create_temporary_view("t", t_env.from_elements(rows, DataTypes.ROW([
        DataTypes.FIELD("k", DataTypes.STRING()), DataTypes.FIELD("v", DataTypes.INT()),
        DataTypes.FIELD("i", DataTypes.INT())])))
    top = _rows(t_env, "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn "
                       "FROM t) WHERE rn <= 2")
    expected = []
    for key in {r[0] for r in rows}:
        vs = sorted((r[1] for r in rows if r[0] == key), reverse=True)[:2]
        expected += [(key, v, n + 1) for n, v in enumerate(vs)]
    assert sorted(top, key=repr) == sorted(expected, key=repr)
    assert _rows(t_env, "SELECT k, v FROM t ORDER BY v DESC LIMIT 3") == [("a", 9), ("a", 7), ("a", 5)]
    assert fallbacks == []


def test_python_udf_runs_in_spark(spark, fallbacks) -> None:
    @udf(result_type=DataTypes.STRING())
    def shout(s):
        return None if s is None else s.upper() + "!"

    t_env = _t_env()
    t_env.create_temporary_function("shout", shout)
    t_env.create_temporary_view("t", t_env.from_elements([("hi",), (None,)], ["s"]))
    assert sorted(_rows(t_env, "SELECT shout(s) FROM t"), key=repr) == [("HI!",), (None,)]
    assert fallbacks == []


def test_explain_in_batch_shows_the_spark_plan(spark, fallbacks) -> None:
    t_env = _t_env()
    t_env.create_temporary_view("t", t_env.from_elements([(1, "a")], ["n", "s"]))
    (text,) = _rows(t_env, "EXPLAIN SELECT s, SUM(n) FROM t GROUP BY s")[0]
    assert "== Optimized Physical Plan ==" in text and "== Spark Physical Plan ==" in text
    assert "HashAggregate" in text
    assert fallbacks == []


def test_a_python_aggregate_function_falls_back_to_the_streaming_runtime_with_the_reason(spark, fallbacks) -> None:
    from strom.table.udf import AggregateFunction

    class Total(AggregateFunction):
        def create_accumulator(self):
            return [0]

        def accumulate(self, acc, v):
            acc[0] += v

        def get_value(self, acc):
            return acc[0]

    t_env = _t_env()
    t_env.create_temporary_function("total", udaf(Total(), result_type=DataTypes.BIGINT(),
                                                  accumulator_type=DataTypes.ARRAY(DataTypes.BIGINT())))
    t_env.create_temporary_view("t", t_env.from_elements([(1, "a"), (2, "a"), (5, "b")], ["n", "s"]))
    assert sorted(_rows(t_env, "SELECT s, total(n) FROM t GROUP BY s")) == [("a", 3), ("b", 5)]
    assert len(fallbacks) == 1 and "Python aggregate function" in fallbacks[0], fallbacks


def test_runner_strom_keeps_the_streaming_runtime_and_a_bad_value_is_refused(spark, fallbacks) -> None:
    t_env = _t_env()
    t_env.create_temporary_view("t", t_env.from_elements([(1, "a"), (2, "a")], ["n", "s"]))
    t_env.get_config().set("table.exec.batch.runner", "strom")
    assert _rows(t_env, "SELECT s, SUM(n) FROM t GROUP BY s") == [("a", 3)]
    (text,) = _rows(t_env, "EXPLAIN SELECT s FROM t")[0]
    assert "Spark" not in text
    with pytest.raises(Exception, match="invalid value 'flink' for 'table.exec.batch.runner': expected one of SPARK"):
        t_env.get_config().set("table.exec.batch.runner", "flink")
    assert fallbacks == []  # a chosen runner is no fallback
