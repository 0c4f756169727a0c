"""Checkpoints on the cluster of real processes: periodic checkpoints through RPC, failover of a
killed TaskManager restoring the latest completed checkpoint, and `/jobs/:jobid/checkpoints`.

The job sums values per key; its FileSink output is read as the largest sum seen per key, so
outputs replayed after the restore do not matter, but lost or double-counted records do: the
result must equal the plain-Python reference exactly.
"""

from __future__ import annotations

import glob
import os
import textwrap

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import final_sums, reference, submit

COUNT = 6000
RATE = 1500.0  # records/s over both source subtasks: the job runs ~4 s, long enough to kill a TaskManager


def checkpointed_job(tmp_path, *, checkpoints_dir: str | None) -> str:
    out = tmp_path / "out"
    job = tmp_path / "job.py"
    conf = {
        "execution.checkpointing.interval": "200 ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": 3,
        "restart-strategy.fixed-delay.delay": "200 ms",
    }
    if checkpoints_dir is not None:
        conf["state.checkpoints.dir"] = checkpoints_dir
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.configure(Configuration({conf!r}))
        src = env.from_source(DataGeneratorSource(lambda i: (i % 13, i), {COUNT}, {RATE!r}),
                              WatermarkStrategy.no_watermarks(), "numbers")
        sums = src.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        sums.map(lambda s: f"{{s[0]}} {{s[1]}}").sink_to(sink)
        env.execute("checkpointed sums")
    """)
    )
    return str(job)


def test_killed_taskmanager_restores_the_latest_checkpoint_exactly(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    cluster = SessionCluster(taskmanagers=3, slots=2)
    try:
        job_id = submit(cluster, checkpointed_job(tmp_path, checkpoints_dir=f"file://{checkpoints}"))
        stats = wait_until(
            lambda: (s := cluster.get(f"/jobs/{job_id}/checkpoints"))["counts"]["completed"] >= 1 and s,
            timeout=30,
            what="a completed checkpoint",
        )
        assert stats["latest"]["completed"]["status"] == "COMPLETED"
        assert stats["latest"]["completed"]["external_path"]
        wait_until(
            lambda: glob.glob(str(checkpoints / job_id / "chk-*" / "_metadata")), what="a checkpoint's _metadata"
        )
        used = {
            st["taskmanager-id"]
            for v in cluster.get(f"/jobs/{job_id}")["vertices"]
            for st in cluster.get(f"/jobs/{job_id}/vertices/{v['id']}")["subtasks"]
            if st.get("taskmanager-id")
        }
        victim = sorted(used)[0]
        cluster.kill_taskmanager(cluster.tms[int(victim.split("-")[1])])
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=60) == "FINISHED"

        stats = cluster.get(f"/jobs/{job_id}/checkpoints")
        restored = stats["latest"]["restored"]
        assert restored is not None and stats["counts"]["restored"] >= 1, stats
        assert restored["id"] >= 1 and restored["external_path"].endswith(f"{job_id}/chk-{restored['id']}")
        assert restored["is_savepoint"] is False
        assert stats["counts"]["completed"] >= 1
        assert {h["status"] for h in stats["history"]} <= {"COMPLETED", "FAILED", "IN_PROGRESS"}
        assert cluster.get(f"/jobs/{job_id}")["vertices"]  # the job is still described after the failover
        names = (
            "numberOfCompletedCheckpoints,lastCheckpointDuration,numRestarts,lastCheckpointSize,"
            "numberOfFailedCheckpoints"
        )
        metrics = {m["id"]: float(m["value"]) for m in cluster.get(f"/jobs/{job_id}/metrics?get={names}")}
        assert metrics["numberOfCompletedCheckpoints"] == stats["counts"]["completed"]
        assert metrics["lastCheckpointDuration"] == stats["latest"]["completed"]["end_to_end_duration"]
        # the bytes written: every subtask's state file (keyed sums of 13 keys, source positions) is non-empty
        assert stats["latest"]["completed"]["state_size"] > 0
        assert metrics["lastCheckpointSize"] == stats["latest"]["completed"]["state_size"]
        assert metrics["numberOfFailedCheckpoints"] == stats["counts"]["failed"]
        assert metrics["numRestarts"] >= 1

        assert final_sums(tmp_path / "out") == reference(COUNT)
    finally:
        cluster.close()


def test_checkpointing_without_a_checkpoint_directory_is_refused(tmp_path):
    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        proc = cluster.cli("submit", checkpointed_job(tmp_path, checkpoints_dir=None))
        assert proc.returncode != 0
        assert "state.checkpoints.dir" in proc.stdout + proc.stderr
        assert cluster.get("/jobs/overview")["jobs"] == []
    finally:
        cluster.close()


def test_checkpoints_of_a_job_without_checkpointing_are_empty(tmp_path):
    from tests.engine.test_cluster import keyed_job

    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        job_id = submit(cluster, keyed_job(tmp_path, parallelism=1, count=100))
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED")) == "FINISHED"
        stats = cluster.get(f"/jobs/{job_id}/checkpoints")
        assert stats["counts"] == {"restored": 0, "total": 0, "in_progress": 0, "completed": 0, "failed": 0}
        assert stats["latest"] == {"completed": None, "savepoint": None, "failed": None, "restored": None}
        assert os.path.isdir(tmp_path / "out")
    finally:
        cluster.close()
