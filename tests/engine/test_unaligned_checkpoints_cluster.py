"""Unaligned checkpoints on a cluster of real processes: checkpoints complete under sustained back
pressure, and a TaskManager killed with kill -9 restores one with its in-flight data exactly once.

The slow operator runs in its own slot sharing group, so records reach it over a TCP channel from the
source's slot worker: the in-flight data of the checkpoints is serialized network buffers.
"""

from __future__ import annotations

import glob
import json
import os
import textwrap

import pytest

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

SEGMENT = 32 * 1024  # taskmanager.memory.segment-size (default)
CREDITS = 2 + 8  # buffers-per-channel + floating-buffers-per-gate of a one-channel gate (defaults)


def job_file(tmp_path, *, name: str, body: str, conf: dict) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(
        textwrap.dedent("""
        import time
        from strom.common import Configuration, Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner

        env = StreamExecutionEnvironment.get_execution_environment()
        env.configure(Configuration(CONF))
        """).replace("CONF", repr(conf))
        + textwrap.dedent(body)
    )
    return str(path)


# -- checkpoints under sustained back pressure --------------------------------------------------------
RECORD_BYTES = 1000
PER_RECORD_S = 0.01
RECORDS = 700  # ~7 s of the slow operator: the whole run is back-pressured


@pytest.mark.parametrize("timeout_ms", [0, 300])
def test_an_unaligned_checkpoint_completes_under_sustained_back_pressure(tmp_path, timeout_ms):
    """An aligned barrier waits behind the channel's in-flight buffers: CREDITS buffers of
    SEGMENT // RECORD_BYTES records at PER_RECORD_S each (3.2 s here), plus what the source's writer
    holds. An unaligned barrier overtakes them: the checkpoint waits for the batch in hand at each of
    the two tasks, so it must complete in less than that drain time, and before the job ends. With an
    aligned-checkpoint-timeout the barrier starts aligned and overtakes once the timeout passed."""
    records_per_buffer = SEGMENT // (RECORD_BYTES + 5)
    drain_s = CREDITS * records_per_buffer * PER_RECORD_S
    conf = {
        "execution.checkpointing.interval": "500 ms",
        "execution.checkpointing.unaligned.enabled": True,
        "execution.checkpointing.aligned-checkpoint-timeout": timeout_ms,
        "state.checkpoints.dir": f"file://{tmp_path / 'checkpoints'}",
    }
    body = f"""
        def slow(b):
            time.sleep({PER_RECORD_S})
            return len(b)

        src = env.from_source(DataGeneratorSource(lambda i: bytes({RECORD_BYTES}), {RECORDS}),
                              WatermarkStrategy.no_watermarks(), "records").set_parallelism(1)
        src.rebalance().map(slow).set_parallelism(1).slot_sharing_group("slow").print()
        env.execute("back pressure")
    """
    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        job_id = submit(cluster, job_file(tmp_path, name="bp", body=body, conf=conf))
        done = wait_until(
            lambda: (s := cluster.get(f"/jobs/{job_id}/checkpoints"))["counts"]["completed"] >= 1 and s,
            timeout=60,
            what="a completed checkpoint",
        )
        assert cluster.job_state(job_id) == "RUNNING"  # completed under back pressure, not at the end
        completed = done["latest"]["completed"]
        duration_s = completed["end_to_end_duration"] / 1000
        # the queues were full: the barrier overtook in-flight records, which the checkpoint stored
        assert completed["persisted_data"] > 0
        assert completed["checkpoint_type"] == ("UNALIGNED_CHECKPOINT" if timeout_ms == 0 else "CHECKPOINT")
        print(f"unaligned checkpoint under back pressure: {duration_s:.2f} s (aligned drain time {drain_s:.1f} s)")
        assert duration_s < drain_s
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=120) == "FINISHED"
    finally:
        cluster.close()


# -- exactly once across kill -9 -------------------------------------------------------------------
COUNT = 3000
RATE = 600.0  # records/s over both source subtasks: ~5 s, long enough to kill a TaskManager


def test_kill_9_restores_an_unaligned_checkpoint_with_every_record_exactly_once(tmp_path):
    """Every record is written once by an exactly-once FileSink: the output, sorted, must be exactly
    0..COUNT-1 (a record lost from the channel state would be missing, one replayed twice doubled)."""
    checkpoints = tmp_path / "checkpoints"
    out = tmp_path / "out"
    conf = {
        "execution.checkpointing.interval": "300 ms",
        "execution.checkpointing.unaligned.enabled": True,
        "state.checkpoints.dir": f"file://{checkpoints}",
        "state.checkpoints.num-retained": 3,
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": 3,
        "restart-strategy.fixed-delay.delay": "200 ms",
    }
    body = f"""
        def slow(i):
            time.sleep(0.004)  # ~250 records/s per subtask, below the source's rate: back pressure
            return str(i)

        env.set_parallelism(2)
        src = env.from_source(DataGeneratorSource(lambda i: i, {COUNT}, {RATE!r}),
                              WatermarkStrategy.no_watermarks(), "numbers")
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        src.rebalance().map(slow).slot_sharing_group("slow").sink_to(sink).slot_sharing_group("slow")
        env.execute("exactly once")
    """
    cluster = SessionCluster(taskmanagers=3, slots=2)
    try:
        job_id = submit(cluster, job_file(tmp_path, name="eo", body=body, conf=conf))

        seen: set[int] = set()  # ids of completed checkpoints that hold in-flight data

        def with_channel_state() -> set[int]:
            for path in glob.glob(str(checkpoints / job_id / "chk-*" / "_metadata")):
                try:
                    doc = json.loads(open(path).read())
                except (OSError, ValueError):
                    continue
                if any(op.get("channel_state") for op in doc["operators"].values()):
                    seen.add(doc["checkpoint_id"])
            return seen

        wait_until(with_channel_state, timeout=60, what="a completed checkpoint holding in-flight data")
        used = {
            st["taskmanager-id"]
            for v in cluster.get(f"/jobs/{job_id}")["vertices"]
            for st in cluster.get(f"/jobs/{job_id}/vertices/{v['id']}")["subtasks"]
            if st.get("taskmanager-id")
        }
        victim = sorted(used)[0]
        cluster.kill_taskmanager(cluster.tms[int(victim.split("-")[1])])

        def ended() -> bool:
            with_channel_state()  # keep noting them until the end: a finished job's checkpoints are deleted
            return cluster.job_state(job_id) in ("FINISHED", "FAILED")

        wait_until(ended, timeout=120, what="the job's end")
        assert cluster.job_state(job_id) == "FINISHED"
        stats = cluster.get(f"/jobs/{job_id}/checkpoints")
        assert stats["counts"]["restored"] >= 1, stats
        assert stats["latest"]["restored"]["id"] in seen  # the restore replayed in-flight data

        written = []
        for root, _, files in os.walk(out):
            for f in files:
                if not f.startswith("."):  # in-progress files of a failed attempt
                    written += [int(line) for line in open(os.path.join(root, f))]
        assert sorted(written) == list(range(COUNT))
    finally:
        cluster.close()
