"""A SQL LEFT JOIN with a Python UDF on a session cluster of real processes (the UDF travels to the
worker processes), stopped with a savepoint and restored at another parallelism: the changelogs of both
runs, reduced, equal the plain-Python result — every id joined once with its match, no NULL-padded row
left over. Lost join state would leave padded rows or miss joins; state applied twice would duplicate."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

from .savepoint_flow import changelog_lines, stop_and_restore

COUNT = 4000


def join_job(tmp_path: Path, name: str, parallelism: int) -> tuple[str, Path]:
    out = tmp_path / f"out-{name}"
    job = tmp_path / f"{name}.py"
    conf = {"execution.checkpointing.interval": "200 ms", "state.checkpoints.dir": f"file://{tmp_path / 'chk'}"}
    gen = ("(id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', "
           f"'fields.id.end' = '{COUNT - 1}', 'rows-per-second' = '{{rate}}')")
    job.write_text(textwrap.dedent(f"""
        from strom.common import Configuration, Encoder
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors.file_system import BucketAssigner, FileSink
        from strom.table import DataTypes, StreamTableEnvironment
        from strom.table.udf import udf

        @udf(result_type=DataTypes.BIGINT())
        def doubled(x):
            return None if x is None else x * 2  # a LEFT JOIN passes NULL until the match

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism({parallelism})
        env.configure(Configuration({conf!r}))
        t_env = StreamTableEnvironment.create(env)
        t_env.create_temporary_function("doubled", doubled)
        t_env.execute_sql("CREATE TABLE a {gen.format(rate=1500)}")
        t_env.execute_sql("CREATE TABLE b {gen.format(rate=1000)}")
        joined = t_env.sql_query("SELECT a.id, doubled(b.id) AS d FROM a LEFT JOIN b ON a.id = b.id")
        kinds = {{0: "+I", 1: "-U", 2: "+U", 3: "-D"}}
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        (t_env.to_changelog_stream(joined)
         .map(lambda r: f"{{kinds[r.get_row_kind().value]}} {{r[0]}} {{r[1]}}").uid("format")
         .sink_to(sink).uid("sink"))
        env.execute("sql join {name}")
    """))
    return str(job), out


def reduce(lines: list[str]) -> Counter:
    table: Counter = Counter()
    for line in lines:
        kind, a, d = line.split()
        table[(int(a), None if d == "None" else int(d))] += 1 if kind in ("+I", "+U") else -1
    return Counter({row: n for row, n in table.items() if n != 0})


def test_left_join_with_a_udf_restores_from_its_savepoint_at_another_parallelism(tmp_path: Path) -> None:
    first, second = stop_and_restore(tmp_path, join_job, lambda out: len(changelog_lines(out)) >= 500,
                                     "committed changelog rows")
    assert 0 < len(first) and 0 < len(second), "the savepoint should fall in the middle of the input"
    assert any(line.endswith(" None") for line in first), "a's rows run ahead: some wait with NULLs"
    assert reduce(first + second) == Counter({(i, 2 * i): 1 for i in range(COUNT)})
