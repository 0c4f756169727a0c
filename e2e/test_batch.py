"""Scenario 8: batch FlinkJobs (spec.mode batch) run their Spark driver pod to COMPLETED or FAILED.

Two FlinkJobs of e2e/jobs/batch_counts.py are applied together: one counts 20,000 generated
records per key, the other's program raises on one record. The operator creates each one's
driver pod (restartPolicy Never); the process kubelet runs it (Spark in local mode, see
tests/operator/kubelet.py; a real cluster runs it from the image, Spark-on-Kubernetes with
executor pods). Checked as a user would: status.batch goes SUBMITTED/RUNNING -> COMPLETED with
the output equal to a plain-Python reference, and the failing job ends FAILED with the user's
error text in status.batch.reason, taken from the driver's termination message (its log's tail).
"""

from __future__ import annotations

import time

import pytest

from e2e.flinkjobs import batch_counts_flinkjob, output_dir, read_counts, reference_counts
from e2e.platform import Platform, wait_until

pytestmark = pytest.mark.timeout(300)

RECORDS, KEYS, POISONED = 20_000, 7, 4321
ORDER = ("SUBMITTED", "RUNNING", "COMPLETED", "FAILED")


def follow_batch_states(platform: Platform, names: list[str], *, timeout: float) -> dict[str, list[tuple[float, str]]]:
    """Each job's status.batch.state changes as (seconds since the call, state), until all have ended."""
    start = time.monotonic()
    seen: dict[str, list[tuple[float, str]]] = {name: [] for name in names}

    def all_ended() -> bool:
        for name in names:
            state = (platform.status(name).get("batch") or {}).get("state")
            if state and (not seen[name] or seen[name][-1][1] != state):
                seen[name].append((time.monotonic() - start, state))
        return all(seen[n] and seen[n][-1][1] in ("COMPLETED", "FAILED") for n in names)

    wait_until(all_ended, timeout=timeout, what=f"{', '.join(names)}: status.batch COMPLETED or FAILED",
               details=lambda: f"states seen: {seen}\n" + "\n".join(platform.details(n)() for n in names))
    return seen


def assert_in_order(states: list[str], *, ends: str) -> None:
    """The job was seen running and ended as expected, its states never going backwards."""
    assert states[-1] == ends and "RUNNING" in states, states
    assert [ORDER.index(s) for s in states] == sorted(ORDER.index(s) for s in states), states


def test_batch_flinkjobs_run_their_spark_driver_to_completed_and_to_failed_with_the_users_error(platform: Platform):
    ok, bad = "e2e-batch", "e2e-batch-fails"
    out_ok, out_bad = output_dir(platform, ok), output_dir(platform, bad)
    platform.create(batch_counts_flinkjob(platform, ok, out_ok, records=RECORDS, keys=KEYS))
    platform.create(batch_counts_flinkjob(platform, bad, out_bad, records=RECORDS, keys=KEYS, fail_on=POISONED))

    timeline = follow_batch_states(platform, [ok, bad], timeout=150 if platform.config.emulated else 400)
    print(f"\nbatch timeline (s since both were applied): {timeline}")

    # the counting job: COMPLETED, its output equal to the plain-Python reference
    assert_in_order([s for _, s in timeline[ok]], ends="COMPLETED")
    status = platform.status(ok)
    batch = status["batch"]
    assert (batch["driverPod"], batch["submission"], batch["exitCode"]) == (f"{ok}-driver-1", 1, 0)
    assert batch["startedAt"] <= batch["finishedAt"]
    assert (status["lifecycleState"], status["jobStatus"]["state"]) == ("STABLE", "COMPLETED")
    ready = platform.conditions(ok)["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "JobCompleted")
    driver = platform.get("Pod", f"{ok}-driver-1")
    assert driver is not None and driver["status"]["phase"] == "Succeeded"
    assert sorted(read_counts(out_ok)) == reference_counts(RECORDS, KEYS)

    # the failing job: FAILED (restartPolicy Never: one driver pod), the user's error in the reason
    assert_in_order([s for _, s in timeline[bad]], ends="FAILED")
    status = platform.status(bad)
    batch = status["batch"]
    assert (batch["driverPod"], batch["submission"], batch["exitCode"]) == (f"{bad}-driver-1", 1, 1)
    user_error = f"record {POISONED} is poisoned (batch_counts.py --fail-on {POISONED})"
    assert batch["reason"].startswith("Error, exit code 1: ") and user_error in batch["reason"], batch["reason"]
    assert status["lifecycleState"] == "FAILED" and user_error in status["error"]
    degraded = platform.conditions(bad)["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "JobFailed")
    driver = platform.get("Pod", f"{bad}-driver-1")
    assert driver is not None and driver["status"]["phase"] == "Failed"
    terminated = driver["status"]["containerStatuses"][0]["state"]["terminated"]
    assert user_error in terminated["message"] and driver["status"]["containerStatuses"][0]["restartCount"] == 0
    assert platform.get("Pod", f"{bad}-driver-2") is None
    assert read_counts(out_bad) == []  # a failed batch job publishes nothing

    for name in (ok, bad):
        platform.delete("FlinkJob", name)
    for name in (ok, bad):
        platform.wait_gone(name)
