"""Session mode takes the cluster's configuration: a submitted job runs with the JobManager's
configuration (its `-D` and config file) with the job's own settings over it, for every key.

Each test starts a real session cluster (`strom jobmanager` and `strom taskmanager` processes on
loopback), submits a job file with `strom submit`, and checks what the job really did: where its
checkpoints went, whether RocksDB wrote SST files, whether a killed TaskManager restarted it or
failed it — and, second, what `/jobs/:jobid/config` and `/jobs/:jobid/jobmanager/config` say.
Sums per key are compared with a plain-Python reference.
"""

from __future__ import annotations

import glob
import textwrap
from collections import defaultdict
from pathlib import Path

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

COUNT = 6000
RATE = 1500.0  # records/s over both source subtasks: ~4 s, long enough to kill a TaskManager mid-run
KEYS = 13


def job_file(tmp_path: Path, *, checkpointing: bool, own_settings: dict[str, object] | None = None) -> str:
    """Keyed running sums into a FileSink; checkpointing on or off in the program; `own_settings` are
    the job's own configuration (none by default: everything else comes from the cluster)."""
    out = tmp_path / "out"
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        if {checkpointing!r}:
            env.enable_checkpointing(200)
        env.configure(Configuration({own_settings or {}!r}))
        src = env.from_source(DataGeneratorSource(lambda i: (i % {KEYS}, i), {COUNT}, {RATE!r}),
                              WatermarkStrategy.no_watermarks(), "numbers")
        sums = src.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        sums.map(lambda s: f"{{s[0]}} {{s[1]}}").sink_to(sink)
        env.execute("sums")
    """)
    )
    return str(job)


def reference_sums() -> dict[int, int]:
    sums: dict[int, int] = defaultdict(int)
    for i in range(COUNT):
        sums[i % KEYS] += i
    return dict(sums)


def largest_sums(out: Path) -> dict[int, int]:
    """The largest running sum seen per key in the published files (replays after a restore repeat
    smaller sums; lost or double-counted records change the largest)."""
    best: dict[int, int] = {}
    for path in glob.glob(str(out / "**" / "*"), recursive=True):
        if Path(path).is_file() and not Path(path).name.startswith("."):
            for line in Path(path).read_text().splitlines():
                key, value = map(int, line.split())
                best[key] = max(best.get(key, 0), value)
    return best


def kill_a_taskmanager_running(cluster: SessionCluster, job_id: str) -> None:
    used = wait_until(
        lambda: {
            st["taskmanager-id"]
            for v in cluster.get(f"/jobs/{job_id}")["vertices"]
            for st in cluster.get(f"/jobs/{job_id}/vertices/{v['id']}")["subtasks"]
            if st.get("taskmanager-id")
        },
        what="subtasks deployed",
    )
    cluster.kill_taskmanager(cluster.tms[int(sorted(used)[0].split("-")[1])])


def job_configuration(cluster: SessionCluster, job_id: str) -> dict[str, str]:
    return {e["key"]: e["value"] for e in cluster.get(f"/jobs/{job_id}/jobmanager/config")}


def test_cluster_checkpoint_dir_restart_strategy_and_state_backend_apply_to_a_job_that_sets_none(tmp_path):
    checkpoints = tmp_path / "cluster-checkpoints"
    cluster = SessionCluster(taskmanagers=2, slots=2, extra=(
        "-D", f"state.checkpoints.dir=file://{checkpoints}",
        "-D", "restart-strategy.type=fixed-delay",
        "-D", "restart-strategy.fixed-delay.attempts=4",
        "-D", "restart-strategy.fixed-delay.delay=300 ms",
        "-D", "state.backend.type=rocksdb",
        "-D", "state.backend.incremental=true",
    ))
    try:
        # without the cluster's state.checkpoints.dir this submission is refused (checkpointing on)
        job_id = submit(cluster, job_file(tmp_path, checkpointing=True))
        wait_until(lambda: glob.glob(str(checkpoints / job_id / "chk-*" / "_metadata")), timeout=30,
                   what="a checkpoint in the cluster's state.checkpoints.dir")
        # RocksDB with incremental checkpoints uploads SST files to <dir>/<job-id>/shared/
        wait_until(lambda: glob.glob(str(checkpoints / job_id / "shared" / "*")), timeout=30,
                   what="RocksDB's shared SST files (the cluster's state.backend.type)")
        kill_a_taskmanager_running(cluster, job_id)
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=90) == "FINISHED"
        assert largest_sums(tmp_path / "out") == reference_sums()
        restarts = {m["id"]: m["value"] for m in cluster.get(f"/jobs/{job_id}/metrics?get=numRestarts")}
        assert float(restarts["numRestarts"]) >= 1

        shown = cluster.get(f"/jobs/{job_id}/config")
        assert shown["jid"] == job_id and shown["name"] == "sums"
        assert shown["execution-config"]["restart-strategy"] == (
            "Restart with fixed delay (300 ms). #4 restart attempts.")
        assert shown["execution-config"]["job-parallelism"] == 2
        effective = job_configuration(cluster, job_id)
        assert effective["state.checkpoints.dir"] == f"file://{checkpoints}"
        assert effective["state.backend.type"].lower() == "rocksdb"
        assert effective["execution.checkpointing.interval"] == "200"  # the job's own
    finally:
        cluster.close()


def test_the_jobs_own_settings_win_over_the_clusters(tmp_path):
    cluster_dir, job_dir = tmp_path / "cluster-checkpoints", tmp_path / "job-checkpoints"
    cluster = SessionCluster(taskmanagers=2, slots=2, extra=(
        "-D", f"state.checkpoints.dir=file://{cluster_dir}",
        "-D", "restart-strategy.type=fixed-delay",
        "-D", "restart-strategy.fixed-delay.attempts=4",
        "-D", "state.backend.type=rocksdb",
    ))
    try:
        job_id = submit(cluster, job_file(tmp_path, checkpointing=True, own_settings={
            "state.checkpoints.dir": f"file://{job_dir}",
            "restart-strategy.type": "none",
            "state.backend.type": "hashmap",
        }))
        wait_until(lambda: glob.glob(str(job_dir / job_id / "chk-*" / "_metadata")), timeout=30,
                   what="a checkpoint in the job's own state.checkpoints.dir")
        kill_a_taskmanager_running(cluster, job_id)
        # the job's restart strategy 'none' wins over the cluster's fixed-delay: the job fails
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=60) == "FAILED"
        assert not (cluster_dir / job_id).exists()
        assert cluster.get(f"/jobs/{job_id}/config")["execution-config"]["restart-strategy"] == "Restart deactivated."
        effective = job_configuration(cluster, job_id)
        assert effective["state.backend.type"].lower() == "hashmap"
        assert effective["state.checkpoints.dir"] == f"file://{job_dir}"
    finally:
        cluster.close()


def test_a_job_without_checkpointing_restarts_by_the_clusters_restart_strategy(tmp_path):
    """The issue's case: without its own strategy and without checkpointing (Flink's default: no
    restarts), a job on a cluster configured with fixed-delay survives a killed TaskManager."""
    cluster = SessionCluster(taskmanagers=2, slots=2, extra=(
        "-D", "restart-strategy.type=fixed-delay",
        "-D", "restart-strategy.fixed-delay.attempts=3",
        "-D", "restart-strategy.fixed-delay.delay=200 ms",
    ))
    try:
        job_id = submit(cluster, job_file(tmp_path, checkpointing=False))
        kill_a_taskmanager_running(cluster, job_id)
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=90) == "FINISHED"
        restarts = {m["id"]: m["value"] for m in cluster.get(f"/jobs/{job_id}/metrics?get=numRestarts")}
        assert float(restarts["numRestarts"]) >= 1
        # no checkpoint to restore: the restarted job ran from the start, so its final sums are complete
        assert largest_sums(tmp_path / "out") == reference_sums()
    finally:
        cluster.close()


def test_secrets_of_the_effective_configuration_are_masked(tmp_path):
    cluster = SessionCluster(taskmanagers=1, slots=2, extra=("-D", "s3.secret-key=hunter2"))
    try:
        job_id = submit(cluster, job_file(tmp_path, checkpointing=False))
        effective = job_configuration(cluster, job_id)
        assert effective["s3.secret-key"] == "******"
        assert "hunter2" not in str(cluster.get(f"/jobs/{job_id}/config"))
    finally:
        cluster.close()


def test_effective_configuration_layers_job_over_cluster_and_keeps_restore_keys_per_submission():
    from strom.common.configuration import Configuration
    from strom.runtime.jobmanager.job_configuration import effective_job_configuration

    cluster = Configuration({"state.checkpoints.dir": "file:///cluster", "restart-strategy.type": "fixed-delay",
                             "execution.savepoint.path": "file:///sp/savepoint-1",
                             "execution.savepoint.ignore-unclaimed-state": True})
    job = Configuration({"restart-strategy.type": "none", "pipeline.name": "mine"})
    effective = effective_job_configuration(cluster, job).to_dict()
    assert effective["state.checkpoints.dir"] == "file:///cluster"  # inherited
    assert str(effective["restart-strategy.type"]).lower() == "none"  # the job's own wins
    assert effective["pipeline.name"] == "mine"
    # a session cluster's restore path is not every job's restore path
    assert "execution.savepoint.path" not in effective
    assert "execution.savepoint.ignore-unclaimed-state" not in effective
    with_own = effective_job_configuration(cluster, Configuration({"execution.savepoint.path": "file:///x"}))
    assert with_own.to_dict()["execution.savepoint.path"] == "file:///x"
    unchanged = Configuration({"restart-strategy.type": "fixed-delay"}).to_dict()["restart-strategy.type"]
    assert cluster.to_dict()["restart-strategy.type"] == unchanged  # the cluster's is not changed
