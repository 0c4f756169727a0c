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


def test_suspend_takes_a_savepoint_and_removes_the_pods_and_resume_continues_from_it(platform: Platform):
    """Scenario 3: `state: suspended` -> savepoint into S3, no pods, SUSPENDED; `running` -> restored from it."""
    name = "e2e-suspend"
    out = output_dir(platform, name)
    phases = [(2500, 250.0)]
    platform.create(keyed_counts_flinkjob(platform, name, out, phases=phases, parallelism=2, slots=2))
    platform.wait_running(name)
    platform.wait(name, lambda: indexes_written(out) >= 300, timeout=60, what="output under way")

    platform.patch_spec(name, {"job": {"state": "suspended"}})
    status = platform.wait_lifecycle(name, "SUSPENDED", timeout=90)
    assert status["jobStatus"]["state"] == "SUSPENDED"
    savepoint = status["savepoints"]["last"]
    assert savepoint["kind"] == "suspend"
    prefix = savepoint["path"].removeprefix(f"s3://{platform.s3.bucket}/").rstrip("/")
    assert f"{prefix}/_metadata" in platform.s3_keys(prefix + "/")
    conditions = platform.conditions(name)
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "Suspended")
    platform.wait(name, lambda: not [o for o in platform.owned_objects(name) if o[0] in ("Deployment", "Pod")],
                  timeout=30, what="no Deployments and no pods while suspended")
    suspended_at = indexes_written(out)
    assert 0 < suspended_at < total_records(phases)

    platform.patch_spec(name, {"job": {"state": "running"}})
    status = platform.wait_running(name)
    assert status["restoredFrom"]["kind"] == "savepoint" and status["restoredFrom"]["path"] == savepoint["path"]
    assert_exactly_once(platform, name, out, total_records(phases))
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)


def test_deleting_a_flinkjob_removes_everything_it_owns_after_a_final_savepoint(platform: Platform):
    """Scenario 7: with `savepoints.onDeletion: true` the job stops with a savepoint, then everything goes."""
    name = "e2e-delete"
    out = output_dir(platform, name)
    platform.create(keyed_counts_flinkjob(platform, name, out, phases=[(5000, 250.0)], parallelism=2, slots=2,
                                          savepoints={"onDeletion": True}))
    platform.wait_running(name)
    platform.wait(name, lambda: indexes_written(out) >= 300, timeout=60, what="output under way")
    assert {kind for kind, _ in platform.owned_objects(name)} == {"Deployment", "Pod", "Service", "ConfigMap",
                                                                   "NetworkPolicy"}

    platform.delete("FlinkJob", name)
    platform.wait_gone(name, timeout=90)
    deleted = [e["message"] for e in platform.events(name) if e.get("reason") == "Deleted"]
    assert deleted and deleted[-1].startswith("deleted after savepoint s3://"), deleted
    path = deleted[-1].removeprefix("deleted after savepoint ")
    prefix = path.removeprefix(f"s3://{platform.s3.bucket}/").rstrip("/")
    assert prefix.startswith(f"{name}/savepoints/")
    assert f"{prefix}/_metadata" in platform.s3_keys(prefix + "/"), "the final savepoint is not in S3"
    # wait_gone waited for the owned Pods too; a Pod object goes only once its processes ended (graceful
    # termination: SIGTERM, terminationGracePeriodSeconds, SIGKILL), on a cluster as with the process kubelet
    if platform.kubelet is not None:  # so no process of the job is left
        assert not platform.kubelet.pids_of(f"{name}-jobmanager") and not platform.kubelet.pids_of(
            f"{name}-taskmanager")
    # the output is an exact prefix of the reference: the records before the savepoint, each once
    lines = read_output(out)
    n = max(i for _, _, i, _ in lines) + 1
    report = exactly_once_report(lines, n, KEYS)
    assert report == "", report
