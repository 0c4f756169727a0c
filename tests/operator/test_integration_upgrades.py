"""Upgrades of real jobs (process kubelet) with savepoints in a real S3 server (weed mini).

A spec change with `upgradeMode: savepoint` stops the job with a savepoint in S3 and deploys the
new spec from it; an upgrade whose job never starts is rolled back to the last stable spec from
that same savepoint. Either way the job's keyed sums end at the plain-Python reference
(running_jobs.py): state lost or restored twice would show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.s3_server import S3Server
from tests.operator.operator_harness import Cluster, RunningOperator, wait_until
from tests.operator.running_jobs import (
    failing_job,
    final_sums,
    flinkjob,
    jobmanager_args,
    lifecycle,
    reference,
    restored_from,
    s3_key_prefix,
    s3_objects,
    s3_secret,
    sums_job,
)

COUNT = 9000
RATE = 1000.0  # records/s: the job runs ~9 s, long enough to upgrade it in the middle


def _details(k8s: Cluster, name: str, operator: RunningOperator, kubelet: Any) -> Any:
    return lambda: f"{k8s.status(name)}\n{operator.log()}\n{kubelet.logs()}"


def _plant_stale_ha_job(k8s: Cluster, name: str, s3: S3Server, details: Any) -> str:
    """Copy the running job's HA data (job graph, checkpoint pointer) under another job id, as a
    JobManager deleted while its job still ran would leave it; the S3 key prefix of the copy. Left
    there, the next JobManager would resume that job instead of starting from the upgrade's savepoint."""
    ha = f"{name}/chk/_ha/{name}/jobs/"
    wait_until(lambda: any(k.endswith("/checkpoint") for k in s3_objects(s3, ha)), timeout=30,
               what="the job's checkpoint pointer in the HA data", details=details)
    client = s3.client()
    stale = f"{ha}{'5' * 32}/"
    for key in s3_objects(s3, ha):
        body = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
        client.put_object(Bucket=s3.bucket, Key=stale + key[len(ha):].split("/", 1)[1], Body=body)
    assert s3_objects(s3, stale)
    return stale


@pytest.mark.timeout(300)  # a loaded machine slows every process start and savepoint down
def test_savepoint_upgrade_lands_in_s3_and_the_new_job_continues_the_keyed_sums(
        k8s: Cluster, operator: RunningOperator, kubelet: Any, s3_server: S3Server, tmp_path: Path):
    name = "upgraded"
    job_file = sums_job(tmp_path / "sums.py", count=COUNT, rate=RATE)
    k8s.call(lambda k: k.create(s3_secret(f"{name}-s3", k8s.namespace, s3_server)))
    first, second = tmp_path / "out-1", tmp_path / "out-2"
    k8s.call(lambda k: k.create(flinkjob(name, k8s.namespace, job_file, first, s3_server)))
    details = _details(k8s, name, operator, kubelet)
    wait_until(lambda: lifecycle(k8s, name) == "STABLE", timeout=60, what="the first job RUNNING", details=details)
    wait_until(lambda: s3_objects(s3_server, f"{name}/chk/"), timeout=30, what="a checkpoint in S3", details=details)
    stale = _plant_stale_ha_job(k8s, name, s3_server, details)

    # the upgrade: a new output directory is a deployment-relevant change
    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, name, {"spec": {"job": {"args": [str(second)]}}}))
    wait_until(lambda: lifecycle(k8s, name) in ("DEPLOYED", "STABLE") and
               k8s.status(name)["reconciliation"]["lastReconciledSpec"]["job"]["args"] == [str(second)]
               and k8s.status(name).get("savepoints", {}).get("last"),
               timeout=90, what="the upgrade deployed", details=details)
    status = k8s.status(name)
    savepoint = status["savepoints"]["last"]
    assert savepoint["kind"] == "upgrade"
    prefix = s3_key_prefix(s3_server, savepoint["path"])
    assert prefix.startswith(f"{name}/sp/")
    assert f"{prefix}_metadata" in s3_objects(s3_server, prefix)
    # the new JobManager starts from that savepoint: HA data an earlier JobManager left is gone first
    assert not s3_objects(s3_server, stale)
    assert restored_from(jobmanager_args(k8s, name)) == savepoint["path"]
    assert status["restoredFrom"]["kind"] == "savepoint" and status["restoredFrom"]["path"] == savepoint["path"]

    # the second job ends its bounded input: its sums are the reference over ALL records
    expected = reference(COUNT)
    wait_until(lambda: final_sums(second) == expected, timeout=90, what="the restored job's final sums",
               details=lambda: f"{final_sums(second)} != {expected}\n{details()}")
    before = final_sums(first)
    assert before and all(before[k] < expected[k] for k in before)  # the first job was stopped midway

    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
    wait_until(lambda: k8s.get("FlinkJob", name) is None, timeout=30, what="the FlinkJob deleted", details=details)


@pytest.mark.timeout(300)
def test_upgrade_whose_job_never_runs_is_rolled_back_to_the_last_stable_spec_from_the_upgrade_savepoint(
        k8s: Cluster, operator: RunningOperator, kubelet: Any, s3_server: S3Server, tmp_path: Path):
    name = "rollback"
    good, broken = sums_job(tmp_path / "sums.py", count=COUNT, rate=RATE), failing_job(tmp_path / "broken.py")
    out = tmp_path / "out"
    k8s.call(lambda k: k.create(s3_secret(f"{name}-s3", k8s.namespace, s3_server)))
    # a short readiness timeout: the broken version is given up on quickly
    conf = {"kubernetes.operator.deployment.readiness.timeout": "4 s"}
    k8s.call(lambda k: k.create(flinkjob(name, k8s.namespace, good, out, s3_server, flink_configuration=conf)))
    details = _details(k8s, name, operator, kubelet)
    wait_until(lambda: lifecycle(k8s, name) == "STABLE", timeout=60, what="the first job RUNNING", details=details)
    stable_args = jobmanager_args(k8s, name)

    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, name, {"spec": {"job": {"entry": str(broken)}}}))
    wait_until(lambda: lifecycle(k8s, name) == "ROLLED_BACK", timeout=90, what="the rollback", details=details)
    status = k8s.status(name)
    savepoint = status["savepoints"]["last"]
    assert savepoint["kind"] == "upgrade"
    assert "was not RUNNING within 4 s" in status["error"]
    assert "rolling back to the last stable spec" in status["reconciliation"]["reason"]
    # the broken spec stays the reconciled one (no loop of retries); the stable one runs again
    assert status["reconciliation"]["lastReconciledSpec"]["job"]["entry"] == str(broken)
    args = jobmanager_args(k8s, name)
    assert args[args.index("--job") + 1] == str(good)
    assert restored_from(args) == savepoint["path"] and restored_from(stable_args) is None
    assert status["restoredFrom"]["path"] == savepoint["path"]
    assert any(e.get("reason") == "RollingBack" and e.get("type") == "Warning" for e in k8s.events(name))

    # the rolled-back job continues from the upgrade's savepoint: the sums end at the reference
    expected = reference(COUNT)
    wait_until(lambda: final_sums(out) == expected, timeout=90, what="the rolled-back job's final sums",
               details=lambda: f"{final_sums(out)} != {expected}\n{details()}")
    assert lifecycle(k8s, name) == "ROLLED_BACK"

    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
    wait_until(lambda: k8s.get("FlinkJob", name) is None, timeout=30, what="the FlinkJob deleted", details=details)
