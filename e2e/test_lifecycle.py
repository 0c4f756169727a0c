"""Scenarios 1, 3 and 7: a FlinkJob applied, suspended and resumed, deleted.

Every scenario ends by checking the job's exactly-once output against the plain-Python reference
(flinkjobs.reference_lines): whatever the operator did, each record was counted once, in order.
"""

from __future__ import annotations

import pytest

from e2e.flinkjobs import (
    exactly_once_report,
    indexes_written,
    keyed_counts_flinkjob,
    output_dir,
    read_output,
    total_records,
)
from e2e.platform import Platform

pytestmark = pytest.mark.timeout(240)

KEYS = 7


def lifecycle_events(platform: Platform, name: str) -> list[str]:
    return [e["message"] for e in sorted(platform.events(name), key=lambda e: e["metadata"]["creationTimestamp"])
            if e.get("reason") == "LifecycleState"]


def assert_exactly_once(platform: Platform, name: str, out: object, n: int, *, timeout: float = 60) -> None:
    platform.wait(name, lambda: indexes_written(out) >= n, timeout=timeout,  # type: ignore[arg-type]
                  what=f"all {n} records in the committed output")
    report = exactly_once_report(read_output(out), n, KEYS)  # type: ignore[arg-type]
    assert report == "", report


def test_applied_flinkjob_starts_jobmanager_and_taskmanagers_and_reports_running(platform: Platform):
    """Scenario 1: apply -> JobManager + TaskManagers (ceil(3 / 2) = 2) -> job RUNNING, status and conditions."""
    name = "e2e-apply"
    out = output_dir(platform, name)
    phases = [(1500, 300.0)]
    created = platform.create(keyed_counts_flinkjob(platform, name, out, phases=phases, parallelism=3, slots=2))

    status = platform.wait_running(name)
    jm, tm = platform.get("Deployment", f"{name}-jobmanager"), platform.get("Deployment", f"{name}-taskmanager")
    assert jm is not None and tm is not None
    assert jm["spec"]["replicas"] == 1 and tm["spec"]["replicas"] == 2
    for obj in (jm, tm):
        assert [(o["kind"], o["uid"]) for o in obj["metadata"]["ownerReferences"]] == [
            ("FlinkJob", created["metadata"]["uid"])]
    platform.wait(name, lambda: all(p["status"].get("phase") == "Running" for p in
                                    platform.list("Pod", **{"app.kubernetes.io/instance": name}))
                  and len(platform.list("Pod", **{"app.kubernetes.io/instance": name})) == 3,
                  timeout=30, what="one JobManager and two TaskManager pods Running")
    assert status["jobStatus"]["jobId"]
    assert status["scaling"]["parallelism"] == 3
    assert status["scaling"]["taskManagers"] == 2 and status["scaling"]["slotsTotal"] == 4
    assert status["observedGeneration"] == 1
    assert status["restoredFrom"]["kind"] == "none"
    conditions = platform.conditions(name)
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("True", "JobRunning")
    assert (conditions["Progressing"]["status"], conditions["Progressing"]["reason"]) == ("False", "Stable")
    assert "Degraded" not in conditions or conditions["Degraded"]["status"] == "False"
    assert status["reconciliation"]["lastStableSpec"] == status["reconciliation"]["lastReconciledSpec"]
    platform.wait(name, lambda: lifecycle_events(platform, name)[:3] == [
        "(new) -> CREATED", "CREATED -> DEPLOYED", "DEPLOYED -> STABLE"], timeout=15, what="the lifecycle events")
    # the JobManager checkpoints into S3 and the operator reports the latest checkpoint
    platform.wait(name, lambda: (platform.status(name).get("jobStatus") or {}).get("lastCheckpoint"), timeout=30,
                  what="status.jobStatus.lastCheckpoint")
    assert any(k.endswith("/_metadata") for k in platform.s3_keys(f"{name}/checkpoints/"))

    assert_exactly_once(platform, name, out, total_records(phases))
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)
