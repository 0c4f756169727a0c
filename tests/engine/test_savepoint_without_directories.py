"""`strom savepoint JOBID DIR` for a job submitted without any state directory (issue 16 item 6).

Flink accepts it: a job without `state.checkpoints.dir` keeps its snapshots in the JobManager
(JobManagerCheckpointStorage) and the savepoint goes to the DIR of the request. Here the tasks send
their state inside their acknowledgements, the JobManager stages it in memory and writes the
savepoint to DIR. The check is the restore: a job restored from that savepoint (after the first one
was cancelled) ends with the per-key sums of a plain-Python computation over all the numbers, which
it reaches only if the savepoint held the reduce's state and the source's position exactly.
"""

from __future__ import annotations

from pathlib import Path

from strom.runtime.checkpoint.memory_storage import JobManagerCheckpointStorage
from strom.runtime.checkpoint.task_snapshots import OperatorStateHandle, inline_state_handle, stage_inline_state

from tests.engine.cluster_testing import SessionCluster
from tests.engine.test_cluster import final_sums, reference, submit
from tests.engine.test_savepoints import COUNT, local, sums_job


def test_inline_state_moves_from_the_task_to_the_jobmanagers_staging():
    task_side, jobmanager_side = JobManagerCheckpointStorage("slot"), JobManagerCheckpointStorage("jm")
    task_side.write_bytes("job/chk-3/sums-0", b"state")
    task_side.write_bytes("job/shared/sst-1", b"sst")
    handle = OperatorStateHandle("sums", 0, 2, 128, None, "sums-0", ("../shared/sst-1",), 8)
    shipped = inline_state_handle(task_side, "job/chk-3", handle)
    assert shipped.inline == (("sums-0", b"state"), ("../shared/sst-1", b"sst"))
    assert len(task_side) == 0  # nothing stays behind in the slot process
    [staged] = stage_inline_state(jobmanager_side, "job/chk-3", [shipped])
    assert staged == handle  # the coordinator sees the plain handle
    assert jobmanager_side.read_bytes("job/chk-3/sums-0") == b"state"
    assert jobmanager_side.read_bytes("job/shared/sst-1") == b"sst"


def test_savepoint_of_a_job_without_state_directories_restores_exactly(tmp_path: Path):
    cluster = SessionCluster(taskmanagers=1, slots=2)  # no state.checkpoints.dir, no state.savepoints.dir
    try:
        job, _ = sums_job(tmp_path, "plain", keyed_parallelism=2, checkpointing=False)
        job_id = submit(cluster, job)
        cluster.wait_for_state(job_id, ("RUNNING",))
        target = tmp_path / "given-dir"
        proc = cluster.cli("savepoint", job_id, f"file://{target}")
        assert proc.returncode == 0, proc.stderr
        location = proc.stdout.strip().splitlines()[-1].removeprefix("Savepoint completed. Path: ")
        assert local(location).parent == target
        # the savepoint alone: nothing was staged on disk
        assert [p.name for p in target.iterdir()] == [local(location).name]
        proc = cluster.cli("cancel", job_id)
        assert proc.returncode == 0, proc.stderr
        cluster.wait_for_state(job_id, ("CANCELED",))
        path, out = sums_job(tmp_path, "restored", keyed_parallelism=1, checkpointing=False)
        proc = cluster.cli("submit", path, "--from-savepoint", location)
        assert proc.returncode == 0, proc.stderr
        restored = proc.stdout.strip().split()[-1]
        assert cluster.wait_for_state(restored, ("FINISHED", "FAILED")) == "FINISHED"
        assert final_sums(out) == reference(COUNT)
    finally:
        cluster.close()
