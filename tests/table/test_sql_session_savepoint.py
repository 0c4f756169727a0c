"""SESSION windows across a savepoint: a SQL session-window aggregation (window TVF with PARTITION BY) on a
session cluster of real processes, stopped with a savepoint mid-input and restored at another parallelism:
every session appears exactly once across both runs with the plain-Python count and sum.

Sessions still open at the stop come back from the savepoint as merged windows (their merging-window
set, partial aggregates and end-of-session timers, redistributed by key group) and must keep merging
with the rows after the restore; a session that fired before the stop must not fire again.
"""

from __future__ import annotations

import datetime
import textwrap
from collections import Counter
from pathlib import Path

from .savepoint_flow import changelog_lines, stop_and_restore

COUNT = 3000
BLOCK = 100  # ids 10 ms of event time apart; the last 10 ids of every block of 100 are left out (a 110 ms gap)


def session_job(tmp_path: Path, name: str, parallelism: int) -> tuple[str, Path]:
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
        t_env.execute_sql("CREATE TEMPORARY VIEW v AS SELECT id, id % 2 AS k, ts FROM gen WHERE id % {BLOCK} < 90")
        sessions = t_env.sql_query(
            "SELECT k, window_start, window_end, COUNT(*) AS c, SUM(id) AS s FROM TABLE(SESSION(TABLE v "
            "PARTITION BY k, DESCRIPTOR(ts), INTERVAL '0.05' SECOND)) GROUP BY k, window_start, window_end"
        )
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        (t_env.to_data_stream(sessions)
         .map(lambda r: f"{{r.get_row_kind().value}} {{r[0]}} {{r[1].isoformat()}} {{r[2].isoformat()}} "
                        f"{{r[3]}} {{r[4]}}").uid("format")
         .sink_to(sink).uid("sink"))
        env.execute("sql sessions {name}")
    """))
    return str(job), out


def _iso(ms: int) -> str:
    return (datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)).isoformat()


def test_session_windows_restore_from_a_savepoint_at_another_parallelism(tmp_path: Path) -> None:
    first, second = stop_and_restore(tmp_path, session_job, lambda out: len(changelog_lines(out)) >= 4,
                                     "committed rows of the first sessions")
    assert first and second, "the savepoint should fall in the middle of the input"
    got = Counter(first + second)
    assert all(n == 1 for n in got.values()), "a session emitted twice"
    want: Counter = Counter()
    for block in range(COUNT // BLOCK):
        for k in (0, 1):
            ids = [i for i in range(block * BLOCK, block * BLOCK + 90) if i % 2 == k]
            start, end = ids[0] * 10, ids[-1] * 10 + 50  # [first row, last row + gap)
            want[f"0 {k} {_iso(start)} {_iso(end)} {len(ids)} {sum(ids)}"] = 1
    assert got == want
