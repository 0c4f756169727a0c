"""A SQL GROUP BY job on a session cluster of real processes, stopped with a savepoint and restored at
another parallelism: the changelogs of both runs, reduced to a table, equal the plain-Python result.

Lost aggregate state would make the restored run emit +I for groups that exist (two rows per group
after reduction); state applied twice would give larger counts. Both runs write through the
exactly-once FileSink, so the files hold exactly the committed changelog.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

from .savepoint_flow import changelog_lines, stop_and_restore

COUNT = 6000
KEYS = 13


def sql_job(tmp_path: Path, name: str, parallelism: int) -> tuple[str, Path]:
    out = tmp_path / f"out-{name}"
    job = tmp_path / f"{name}.py"
    conf = {"execution.checkpointing.interval": "200 ms", "state.checkpoints.dir": f"file://{tmp_path / 'chk'}"}
    job.write_text(textwrap.dedent(f"""
        from strom.common import Configuration, Encoder
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors.file_system import BucketAssigner, FileSink
        from strom.table import StreamTableEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism({parallelism})
        env.configure(Configuration({conf!r}))
        t_env = StreamTableEnvironment.create(env)
        t_env.execute_sql(
            "CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', "
            "'fields.id.start' = '0', 'fields.id.end' = '{COUNT - 1}', 'rows-per-second' = '2000')"
        )
        counts = t_env.sql_query("SELECT id % {KEYS} AS k, COUNT(*) AS c, SUM(id) AS s FROM gen GROUP BY id % {KEYS}")
        kinds = {{0: "+I", 1: "-U", 2: "+U", 3: "-D"}}
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        (t_env.to_changelog_stream(counts)
         .map(lambda r: f"{{kinds[r.get_row_kind().value]}} {{r[0]}} {{r[1]}} {{r[2]}}").uid("format")
         .sink_to(sink).uid("sink"))
        env.execute("sql counts {name}")
    """))
    return str(job), out


def reduce(lines: list[str]) -> Counter:
    """Order-free (part files of a subtask roll): a retraction of a row never inserted stays negative."""
    table: Counter = Counter()
    for line in lines:
        kind, *values = line.split()
        table[tuple(int(v) for v in values)] += 1 if kind in ("+I", "+U") else -1
    return Counter({row: n for row, n in table.items() if n != 0})


def test_group_by_job_restores_from_its_savepoint_at_another_parallelism(tmp_path: Path) -> None:
    # stop once every group exists in committed output, so that each continues after the restore
    first, second = stop_and_restore(
        tmp_path, sql_job, lambda out: len({line.split()[1] for line in changelog_lines(out)}) == KEYS,
        "committed changelog rows for every group")
    expected = Counter()
    for k in range(KEYS):
        ids = [i for i in range(COUNT) if i % KEYS == k]
        expected[(k, len(ids), sum(ids))] = 1
    assert 0 < len(first) and 0 < len(second), "the savepoint should fall in the middle of the input"
    assert not any(line.startswith("+I") for line in second), "restored groups continue with -U/+U"
    assert reduce(first + second) == expected
