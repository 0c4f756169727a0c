"""Scenario 6: kill -9 a TaskManager process; the job recovers from its latest checkpoint.

The process kubelet restarts the killed container (restartCount 1), the JobManager restarts the
job from its latest completed checkpoint, and the exactly-once FileSink output still equals the
plain-Python reference: records after the checkpoint are replayed into state and output once.
"""

from __future__ import annotations

import pytest

from e2e.flinkjobs import exactly_once_report, indexes_written, keyed_counts_flinkjob, output_dir, read_output
from e2e.platform import Platform, jobmanager_rest

pytestmark = pytest.mark.timeout(240)

KEYS = 7
PHASES = [(3000, 250.0)]


def test_taskmanager_killed_with_sigkill_is_restarted_and_the_job_recovers_from_its_checkpoint(platform: Platform):
    name = "e2e-tmkill"
    out = output_dir(platform, name)
    # two TaskManagers of one slot each: the killed one runs a share of the keyed counts
    platform.create(keyed_counts_flinkjob(platform, name, out, phases=PHASES, parallelism=2, slots=1))
    status = platform.wait_running(name)
    job_id = status["jobStatus"]["jobId"]
    platform.wait(name, lambda: indexes_written(out) >= 500, timeout=60, what="output under way")
    platform.wait(name, lambda: platform.status(name)["jobStatus"].get("lastCheckpoint"), timeout=30,
                  what="a completed checkpoint")

    pid = platform.kill_pod_process(f"{name}-taskmanager")
    print(f"\nkill -9 TaskManager pid {pid}")
    platform.wait(name, lambda: sum(platform.restart_counts(f"{name}-taskmanager")) >= 1, timeout=60,
                  what="the killed TaskManager container restarted (restartCount 1)")

    def restored() -> dict | None:
        answer = jobmanager_rest(platform, name, f"/jobs/{job_id}/checkpoints")
        return ((answer or {}).get("latest") or {}).get("restored") if platform.kubelet is not None else {"id": 0}

    restore = platform.wait(name, restored, timeout=60, what="the job restored from a checkpoint")
    print(f"restored from checkpoint {restore.get('id')}")
    n = sum(count for count, _ in PHASES)
    platform.wait(name, lambda: indexes_written(out) >= n, timeout=90, what=f"all {n} records in the output")
    report = exactly_once_report(read_output(out), n, KEYS)
    assert report == "", report
    status = platform.wait_running(name, timeout=30)
    assert status["jobStatus"]["jobId"] == job_id  # the same job recovered, not a new deployment
    assert status.get("restoredFrom", {}).get("kind") == "none"  # the operator did not redeploy it
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)
