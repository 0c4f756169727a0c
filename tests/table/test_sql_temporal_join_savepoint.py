"""An event-time temporal join across a savepoint: orders joined FOR SYSTEM_TIME AS OF their rowtime with a
versioned view of rates (keep-last-by-rowtime deduplication), on a session cluster of real processes,
stopped with a savepoint mid-input and restored at another parallelism.

By construction (plain Python): rates is a versioned table keyed by id (PRIMARY KEY and a watermark),
rate k valid from 10 k ms; order o (at 10 o + 5 ms) asks for rate o - o % 5, valid since before it. Across
both runs every order appears exactly once, joined with that rate: waiting orders and the kept versions
came back from the savepoint, redistributed by key group.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

from .savepoint_flow import changelog_lines, stop_and_restore

COUNT = 2000


def temporal_job(tmp_path: Path, name: str, parallelism: int) -> tuple[str, Path]:
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
        for name, offset, key in (("rates", 0, ", PRIMARY KEY (id) NOT ENFORCED"), ("order_gen", 5, "")):
            t_env.execute_sql(
                f"CREATE TABLE {{name}} (id BIGINT, ts AS TO_TIMESTAMP_LTZ(id * 10 + {{offset}}, 3){{key}}, "
                "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'datagen', "
                "'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '{COUNT - 1}', "
                "'rows-per-second' = '400')"
            )
        joined = t_env.sql_query(
            "SELECT o.id, r.id FROM (SELECT id, id - id % 5 AS rate_id, ts FROM order_gen) AS o "
            "JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.rate_id = r.id"
        )
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        (t_env.to_data_stream(joined)
         .map(lambda r: f"{{r.get_row_kind().value}} {{r[0]}} {{r[1]}}").uid("format")
         .sink_to(sink).uid("sink"))
        env.execute("sql temporal join {name}")
    """))
    return str(job), out


def test_temporal_join_restores_from_a_savepoint_at_another_parallelism(tmp_path: Path) -> None:
    first, second = stop_and_restore(tmp_path, temporal_job, lambda out: len(changelog_lines(out)) >= 50,
                                     "committed rows of the first joined orders")
    assert first and second, "the savepoint should fall in the middle of the input"
    got = Counter(first + second)
    assert got == Counter(f"0 {o} {o - o % 5}" for o in range(COUNT))  # +I, each order with its rate, exactly once
