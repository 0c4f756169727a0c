"""Async I/O under kill -9: requests in flight at a checkpoint are restored and issued again.

A rate-limited generator feeds an unordered async function that answers after 50-250 ms (so about a
hundred requests are in flight at every checkpoint, elements the source has already passed) into an
exactly-once FileSink; checkpoints every 300 ms. The TaskManager running the job is killed with
SIGKILL twice, each time after a checkpoint completed since the previous kill, and replaced. Every
input element must produce exactly one output line: an in-flight element missing from the
checkpoint would be lost, one emitted before the barrier and restored again would be duplicated.
"""

from __future__ import annotations

import random
import textwrap
from collections import Counter
from pathlib import Path

from tests.engine.chaos_testing import kill_taskmanagers_until_finished, published
from tests.engine.cluster_testing import SessionCluster
from tests.engine.test_cluster import submit

COUNT = 3_000
RATE = 500.0  # elements/s: ~6 s of input
KILLS = 2


def async_job(tmp_path: Path, out: Path) -> str:
    conf = {
        "execution.checkpointing.interval": "300 ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "20",
        "restart-strategy.fixed-delay.delay": "200 ms",
        "state.checkpoints.dir": f"file://{tmp_path / 'chk'}",
    }
    job = tmp_path / "async_job.py"
    job.write_text(textwrap.dedent(f"""
        import asyncio

        from strom.common import Configuration, Encoder, Types, WatermarkStrategy
        from strom.datastream import AsyncDataStream, AsyncFunction, StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import BucketAssigner, FileSink

        class SlowLookup(AsyncFunction):
            async def async_invoke(self, value):
                await asyncio.sleep(0.05 + (value * 7919 % 11) / 50)
                return ["%d %d" % (value, value * 2)]

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.configure(Configuration({conf!r}))
        src = env.from_source(DataGeneratorSource(lambda i: i, {COUNT}, {RATE!r}), WatermarkStrategy.no_watermarks(),
                              "numbers").uid("numbers")
        looked_up = AsyncDataStream.unordered_wait(src, SlowLookup(), 30_000, 200, Types.STRING()).uid("lookup")
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        looked_up.sink_to(sink).uid("sink")
        env.execute("async restore")
    """))
    return str(job)


def test_every_input_gives_exactly_one_output_across_kill_9_with_requests_in_flight(tmp_path):
    out = tmp_path / "out"
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        job_id = submit(cluster, async_job(tmp_path, out))
        kill_taskmanagers_until_finished(cluster, job_id, kills=KILLS, rng=rng, slots=2)
    finally:
        cluster.close()
    assert published(out) == Counter(f"{i} {2 * i}" for i in range(COUNT)), f"seed {seed}"
