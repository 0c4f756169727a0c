"""A windowed SQL job (WATERMARK FOR + TUMBLE window aggregation) on a session cluster of real processes,
stopped with a savepoint mid-input and restored at another parallelism: every window appears exactly once
across both runs, with the plain-Python count and sum.

A window that fired before the stop must not fire again after the restore (its state is gone) and one
pending at the stop must fire after it with all its rows (its partial aggregate and the pending timer
came back from the savepoint); the sink is the exactly-once FileSink, so its files hold exactly what was
committed.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

from .savepoint_flow import changelog_lines, stop_and_restore

COUNT = 3000
PER_WINDOW = 100  # ids are 10 ms of event time apart; windows are 1 s


def windowed_job(tmp_path: Path, name: str, parallelism: int) -> tuple[str, Path]:
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
            "CREATE TABLE gen (id BIGINT, ts AS TO_TIMESTAMP_LTZ(id * 10, 3), "
            "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'datagen', "
            "'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '{COUNT - 1}', "
            "'rows-per-second' = '500')"
        )
        windows = t_env.sql_query(
            "SELECT window_start, COUNT(*) AS c, SUM(id) AS s "
            "FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end"
        )
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        (t_env.to_data_stream(windows)
         .map(lambda r: f"{{r.get_row_kind().value}} {{r[0].isoformat()}} {{r[1]}} {{r[2]}}").uid("format")
         .sink_to(sink).uid("sink"))
        env.execute("sql windows {name}")
    """))
    return str(job), out


def test_windowed_sql_job_restores_from_its_savepoint_at_another_parallelism(tmp_path: Path) -> None:
    first, second = stop_and_restore(tmp_path, windowed_job, lambda out: len(changelog_lines(out)) >= 3,
                                     "committed rows of the first windows")
    assert first and second, "the savepoint should fall in the middle of the input"
    got = Counter(first + second)
    assert all(n == 1 for n in got.values()), "a window emitted twice"
    want = Counter()
    for w in range(COUNT // PER_WINDOW):
        ids = range(w * PER_WINDOW, (w + 1) * PER_WINDOW)
        start = f"1970-01-01T00:{w // 60:02d}:{w % 60:02d}"
        want[f"0 {start} {len(ids)} {sum(ids)}"] = 1  # RowKind 0: +I, window aggregation is insert-only
    assert got == want
