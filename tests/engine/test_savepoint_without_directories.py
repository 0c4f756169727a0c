"""`strom savepoint JOBID DIR` for a job submitted without any state directory (issue 16 item 6).

Flink accepts it: a job without `state.checkpoints.dir` keeps its snapshots in the JobManager
(JobManagerCheckpointStorage) and the savepoint goes to the DIR of the request. Here the tasks send
their state inside their acknowledgements, the JobManager stages it in memory and writes the
savepoint to DIR. The check is the restore: a job restored from that savepoint (after the first one
was cancelled) ends with the per-key sums of a plain-Python computation over all the numbers, which
it reaches only if the savepoint held the reduce's state and the source's position exactly.
"""

from __future__ import annotations

from strom.runtime.checkpoint.memory_storage import JobManagerCheckpointStorage
from strom.runtime.checkpoint.task_snapshots import OperatorStateHandle, inline_state_handle, stage_inline_state


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
