"""JobManager high availability (`high-availability.type: file`): kill -9 the JobManager of a
running job, start another on the same ports, and the job goes on from its latest completed
checkpoint — its TaskManagers register with the new JobManager, which finds the job and its
checkpoint pointer under `high-availability.storageDir`. The output (an exactly-once FileSink of
running counts per key) holds every count exactly once, as a plain-Python count says.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

COUNT = 6000
RATE = 1500.0
KEYS = 7


def counting_job(tmp_path: Path) -> tuple[str, Path]:
    out = tmp_path / "out"
    job = tmp_path / "counting.py"
    conf = {
        "execution.checkpointing.interval": "300 ms",
        "state.checkpoints.dir": f"file://{tmp_path / 'chk'}",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "5",
        "restart-strategy.fixed-delay.delay": "200 ms",
    }
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Encoder, Types, WatermarkStrategy
        from strom.datastream import KeyedProcessFunction, StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner
        from strom.datastream.state import ValueStateDescriptor

        class CountPerKey(KeyedProcessFunction):
            def open(self, runtime_context):
                self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

            def process_element(self, value, ctx):
                n = (self.count.value() or 0) + 1
                self.count.update(n)
                yield f"{{ctx.get_current_key()}} {{n}}"

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.configure(Configuration({conf!r}))
        src = env.from_source(DataGeneratorSource(lambda i: i, {COUNT}, {RATE!r}),
                              WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        (src.key_by(lambda v: v % {KEYS}).process(CountPerKey()).uid("counts")
            .sink_to(sink).uid("sink"))
        env.execute("counting")
    """)
    )
    return str(job), out


def published_counts(out: Path) -> Counter[str]:
    return Counter(
        line
        for f in out.rglob("*")
        if f.is_file() and not f.name.startswith(".")
        for line in f.read_text().splitlines()
    )


def expected_counts() -> Counter[str]:
    per_key = Counter(i % KEYS for i in range(COUNT))
    return Counter(f"{k} {n}" for k, total in per_key.items() for n in range(1, total + 1))


def test_a_killed_jobmanager_is_replaced_and_the_job_continues_from_its_checkpoint(tmp_path):
    ha_dir = tmp_path / "ha"
    ha = ("-D", "high-availability.type=file", "-D", f"high-availability.storageDir=file://{ha_dir}")
    cluster = SessionCluster(taskmanagers=2, slots=2, extra=ha)
    try:
        path, out = counting_job(tmp_path)
        job_id = submit(cluster, path)
        assert (ha_dir / "default" / "jobs" / job_id / "jobgraph").is_file()
        wait_until(
            lambda: cluster.get(f"/jobs/{job_id}/checkpoints")["counts"]["completed"] >= 2,
            timeout=60,
            what="two completed checkpoints",
        )
        pointer = ha_dir / "default" / "jobs" / job_id / "checkpoint"
        assert pointer.is_file()
        cluster.kill_jobmanager()
        cluster.restart_jobmanager()
        # the new JobManager knows the job before any TaskManager is back
        assert cluster.get(f"/jobs/{job_id}")["jid"] == job_id
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED"), timeout=120) == "FINISHED"
        restored = cluster.get(f"/jobs/{job_id}/checkpoints")["latest"]["restored"]
        assert restored is not None and restored["id"] >= 2
        assert published_counts(out) == expected_counts()
        # an ended job is not recovered again
        wait_until(lambda: not (ha_dir / "default" / "jobs" / job_id).exists(), what="the job's HA data removed")
    finally:
        cluster.close()


def test_stop_with_savepoint_completes_after_the_tasks_committed_their_output(tmp_path):
    """A client that tears the cluster down the moment a stop-with-savepoint completed (the Kubernetes
    operator deleting a FlinkJob) finds every record before the savepoint published: the operation
    completes only once the tasks heard of the savepoint and committed its pending files."""
    from tests.engine.test_savepoints import post, savepoint_location

    cluster = SessionCluster(taskmanagers=2, slots=2)
    try:
        path, out = counting_job(tmp_path)
        job_id = submit(cluster, path)
        wait_until(
            lambda: cluster.get(f"/jobs/{job_id}/checkpoints")["counts"]["completed"] >= 1,
            timeout=60,
            what="a completed checkpoint",
        )
        status, answer = post(cluster, f"/jobs/{job_id}/stop", {"targetDirectory": str(tmp_path / "sp")})
        assert status == 202, answer
        savepoint_location(cluster, job_id, answer["request-id"])
        assert cluster.job_state(job_id) == "FINISHED"
        # tear everything down at once, as a client deleting the deployment would
        cluster.kill_jobmanager()
        for tm in cluster.tms:
            cluster.kill_taskmanager(tm)
    finally:
        cluster.close()
    published = published_counts(out)
    assert published, "nothing was published before the stop"
    by_key: dict[str, list[int]] = {}
    for line in published:
        key, n = line.split()
        by_key.setdefault(key, []).append(int(n))
    for key, counts in by_key.items():
        # a contiguous prefix 1..max per key, each once: nothing before the savepoint left unpublished
        assert sorted(counts) == list(range(1, max(counts) + 1)), f"key {key}: gaps in {sorted(counts)[:20]}..."


def test_high_availability_type_kubernetes_is_refused_with_what_to_use():
    """No name that silently means something else: Flink's Kubernetes HA (Leases, standby JobManagers)
    is not implemented, so `kubernetes` fails with one line naming the key and the working setting."""
    import pytest
    from strom.common.config_options import ConfigError
    from strom.common.configuration import Configuration
    from strom.runtime.jobmanager.high_availability import ha_services_for

    with pytest.raises(ConfigError) as refused:
        ha_services_for(Configuration({"high-availability.type": "kubernetes", "state.checkpoints.dir": "file:///x"}))
    assert "'high-availability.type: kubernetes'" in str(refused.value)
    message = str(refused.value)
    assert "'high-availability.type: file'" in message and "high-availability.storageDir" in message
