"""Running jobs (process kubelet, S3 in weed mini) through suspension, invalid specs and savepoint pruning.

* `job.state: suspended` stops the job with a savepoint, removes its pods and keeps its
  configuration; `running` again resumes it from that savepoint, and the keyed sums end at the
  plain-Python reference (running_jobs.py), so nothing was lost or counted twice.
* An invalid spec change is reported while the last valid spec keeps running, periodic
  savepoints included; savepoints pruned from the history (maxHistory) are deleted from S3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.s3_server import S3Server
from tests.operator.operator_harness import Cluster, RunningOperator, wait_until
from tests.operator.running_jobs import (
    final_sums,
    flinkjob,
    jobmanager_args,
    lifecycle,
    pods_of,
    reference,
    restored_from,
    s3_key_prefix,
    s3_objects,
    s3_secret,
    sums_job,
)


def _details(k8s: Cluster, name: str, operator: RunningOperator, kubelet: Any) -> Any:
    return lambda: f"{k8s.status(name)}\n{operator.log()}\n{kubelet.logs()}"


def _delete(k8s: Cluster, name: str, details: Any) -> None:
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
    wait_until(lambda: k8s.get("FlinkJob", name) is None, timeout=30, what="the FlinkJob deleted", details=details)


@pytest.mark.timeout(300)
def test_suspend_takes_a_savepoint_and_removes_the_pods_and_resume_continues_the_sums_from_it(
        k8s: Cluster, operator: RunningOperator, kubelet: Any, s3_server: S3Server, tmp_path: Path):
    name, count = "suspended", 9000
    job_file, out = sums_job(tmp_path / "sums.py", count=count, rate=1000.0), tmp_path / "out"
    k8s.call(lambda k: k.create(s3_secret(f"{name}-s3", k8s.namespace, s3_server)))
    k8s.call(lambda k: k.create(flinkjob(name, k8s.namespace, job_file, out, s3_server)))
    details = _details(k8s, name, operator, kubelet)
    wait_until(lambda: lifecycle(k8s, name) == "STABLE", timeout=60, what="the job RUNNING", details=details)

    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, name, {"spec": {"job": {"state": "suspended"}}}))
    wait_until(lambda: lifecycle(k8s, name) == "SUSPENDED", timeout=60, what="the suspension", details=details)
    status = k8s.status(name)
    savepoint = status["savepoints"]["last"]
    assert savepoint["kind"] == "suspend"
    prefix = s3_key_prefix(s3_server, savepoint["path"])
    assert f"{prefix}_metadata" in s3_objects(s3_server, prefix)
    assert status["jobStatus"]["state"] == "SUSPENDED"
    assert k8s.get("Deployment", f"{name}-jobmanager") is None and k8s.get("Deployment", f"{name}-taskmanager") is None
    wait_until(lambda: not pods_of(k8s, name), timeout=30, what="the pods gone", details=details)
    assert k8s.get("ConfigMap", f"{name}-config") is not None  # the configuration is kept
    stopped_at = final_sums(out)
    expected = reference(count)
    assert all(stopped_at.get(k, 0) < expected[k] for k in expected)  # suspended midway

    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, name, {"spec": {"job": {"state": "running"}}}))
    wait_until(lambda: lifecycle(k8s, name) == "STABLE", timeout=60, what="the resumed job RUNNING",
               details=details)
    assert restored_from(jobmanager_args(k8s, name)) == savepoint["path"]
    assert k8s.status(name)["restoredFrom"]["path"] == savepoint["path"]
    wait_until(lambda: final_sums(out) == expected, timeout=90, what="the resumed job's final sums",
               details=lambda: f"{final_sums(out)} != {expected}\n{details()}")
    _delete(k8s, name, details)


@pytest.mark.timeout(300)  # a loaded machine slows every savepoint down
def test_invalid_spec_keeps_the_last_valid_one_running_and_pruned_savepoints_leave_s3(
        k8s: Cluster, operator: RunningOperator, kubelet: Any, s3_server: S3Server, tmp_path: Path):
    name = "pruned"
    # long enough to take several periodic savepoints; deleted before it ends
    job_file = sums_job(tmp_path / "sums.py", count=200_000, rate=1000.0)
    k8s.call(lambda k: k.create(s3_secret(f"{name}-s3", k8s.namespace, s3_server)))
    k8s.call(lambda k: k.create(flinkjob(name, k8s.namespace, job_file, tmp_path / "out", s3_server,
                                         savepoints={"periodicInterval": "1 s", "maxHistory": 1})))
    details = _details(k8s, name, operator, kubelet)
    try:
        _invalid_spec_and_pruning(k8s, name, s3_server, details)
    finally:  # an endless job left behind would slow every later test down
        _delete(k8s, name, details)


def _invalid_spec_and_pruning(k8s: Cluster, name: str, s3_server: S3Server, details: Any) -> None:
    wait_until(lambda: lifecycle(k8s, name) == "STABLE", timeout=60, what="the job RUNNING", details=details)
    job_id = k8s.status(name)["jobStatus"]["jobId"]
    deployments = {d: k8s.get("Deployment", f"{name}-{d}") for d in ("jobmanager", "taskmanager")}

    # valid for the CRD's schema (a real API server refuses slots: 0 itself), invalid for the operator
    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, name, {"spec": {"job": {"maxParallelism": 1}}}))
    condition = wait_until(lambda: next((c for c in k8s.status(name).get("conditions") or ()
                                         if c["type"] == "Degraded" and c["status"] == "True"), None),
                           timeout=30, what="the Degraded condition", details=details)
    assert condition["reason"] == "InvalidSpec"
    assert condition["message"].startswith("spec.job.parallelism: 2 exceeds spec.job.maxParallelism 1")

    seen: set[str] = set()

    def savepoints_pruned() -> bool:
        history = [s["path"] for s in (k8s.status(name).get("savepoints") or {}).get("history") or ()]
        seen.update(history)
        return len(seen) >= 3 and len(history) == 1

    wait_until(savepoints_pruned, timeout=90, what="three periodic savepoints, one kept", details=details)
    # the last valid spec kept running all along: same job, same Deployments
    status = k8s.status(name)
    assert status["jobStatus"]["jobId"] == job_id and status["jobStatus"]["state"] == "RUNNING"
    for d, before in deployments.items():
        after = k8s.get("Deployment", f"{name}-{d}")
        assert after is not None and before is not None and after["spec"] == before["spec"]
    assert status["reconciliation"]["lastReconciledSpec"]["taskManager"]["slots"] == 2
    kept = {s["path"] for s in status["savepoints"]["history"]}
    disposed = seen - kept
    assert len(kept) == 1 and len(disposed) >= 2
    wait_until(lambda: all(not s3_objects(s3_server, s3_key_prefix(s3_server, p)) for p in disposed), timeout=30,
               what="the pruned savepoints deleted from S3", details=details)

    def kept_savepoint_in_s3() -> bool:
        # the history moves on while the test looks (a periodic savepoint every second, maxHistory 1: the one `kept`
        # above may be pruned by now, as on a loaded machine live): the savepoint the history holds now has its files
        history = [s["path"] for s in k8s.status(name)["savepoints"]["history"]]
        prefixes = [s3_key_prefix(s3_server, p) for p in history]
        return len(history) == 1 and all(f"{p}_metadata" in s3_objects(s3_server, p) for p in prefixes)

    wait_until(kept_savepoint_in_s3, timeout=30, what="the kept savepoint's files in S3", details=details)
    disposals = [e["message"] for e in k8s.events(name) if e.get("reason") == "SavepointDisposed"]
    assert any(p in m for p in disposed for m in disposals)
