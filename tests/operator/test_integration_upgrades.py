"""The operator running real jobs (process kubelet) with savepoints in a real S3 server (weed mini).

The job sums values per key (a rate-limited bounded source -> key_by -> reduce -> file sink). A
spec change with `upgradeMode: savepoint` stops it with a savepoint in S3 and deploys the new
spec from it; the new job's sums continue from that state, so its output ends at the
plain-Python reference only if the state was carried over exactly (lost state gives smaller
sums, state restored twice larger ones).
"""

from __future__ import annotations

import base64
import os
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.s3_server import (
    S3Server,
    s3_server_fixture,  # noqa: F401 - registers `s3_server`
)
from tests.operator.operator_harness import Cluster, RunningOperator, wait_until

COUNT = 9000
RATE = 1000.0  # records/s: the job runs ~9 s, long enough to upgrade it in the middle


def reference(count: int) -> dict[int, int]:
    sums: Counter[int] = Counter()
    for i in range(count):
        sums[i % 13] += i
    return dict(sums)


def final_sums(out_dir: Path) -> dict[int, int]:
    finals: dict[int, int] = {}
    for root, _, files in os.walk(out_dir):
        for f in files:
            if f.startswith("."):
                continue  # in-progress files
            for line in open(os.path.join(root, f)):
                k, v = map(int, line.split())
                finals[k] = max(finals.get(k, 0), v)
    return finals


def sums_job(path: Path) -> Path:
    path.write_text(textwrap.dedent(f"""
        import sys
        from strom.common import Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner

        out = sys.argv[1]
        env = StreamExecutionEnvironment.get_execution_environment()
        src = env.from_source(DataGeneratorSource(lambda i: (i % 13, i), {COUNT}, {RATE!r}),
                              WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
        sums = src.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("sums")
        sink = (FileSink.for_row_format(out, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        sums.map(lambda s: f"{{s[0]}} {{s[1]}}").uid("format").sink_to(sink).uid("sink")
        env.execute("sums")
    """))
    return path


def s3_objects(s3: S3Server, prefix: str) -> list[str]:
    answer = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix=prefix)
    return [o["Key"] for o in answer.get("Contents") or ()]


def flinkjob(name: str, namespace: str, entry: Path, out: Path, s3: S3Server, **job: Any) -> dict[str, Any]:
    return {
        "apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "image": "strom/runtime:test",
            "job": {"entry": str(entry), "args": [str(out)], "parallelism": 2, "upgradeMode": "savepoint", **job},
            "taskManager": {"slots": 2},
            "checkpointing": {"interval": "500 ms", "dir": f"s3://{s3.bucket}/{name}/chk"},
            "savepoints": {"dir": f"s3://{s3.bucket}/{name}/sp"},
            "s3": {"endpoint": s3.endpoint, "credentialsSecret": f"{name}-s3"},
            "flinkConfiguration": {"s3.path.style.access": "true", "s3.region": s3.region},
        },
    }


def s3_secret(name: str, namespace: str, s3: S3Server) -> dict[str, Any]:
    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "data": {"AWS_ACCESS_KEY_ID": b64(s3.access_key), "AWS_SECRET_ACCESS_KEY": b64(s3.secret_key)}}


def lifecycle(k8s: Cluster, name: str) -> str | None:
    return k8s.status(name).get("lifecycleState")


@pytest.fixture
def job_file(tmp_path: Path) -> Path:
    return sums_job(tmp_path / "sums.py")


def test_savepoint_upgrade_lands_in_s3_and_the_new_job_continues_the_keyed_sums(
        k8s: Cluster, operator: RunningOperator, kubelet: Any, s3_server: S3Server, job_file: Path, tmp_path: Path):
    name = "upgraded"
    k8s.call(lambda k: k.create(s3_secret(f"{name}-s3", k8s.namespace, s3_server)))
    first, second = tmp_path / "out-1", tmp_path / "out-2"
    k8s.call(lambda k: k.create(flinkjob(name, k8s.namespace, job_file, first, s3_server)))
    def details() -> str:
        status = k8s.status(name)
        return f"{status}\n{operator.log()}\n{kubelet.logs()}"
    wait_until(lambda: lifecycle(k8s, name) == "STABLE", timeout=60, what="the first job RUNNING", details=details)
    wait_until(lambda: s3_objects(s3_server, f"{name}/chk/"), timeout=30, what="a checkpoint in S3", details=details)

    # the upgrade: a new output directory is a deployment-relevant change
    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, name, {"spec": {"job": {"args": [str(second)]}}}))
    wait_until(lambda: lifecycle(k8s, name) in ("DEPLOYED", "STABLE") and
               k8s.status(name)["reconciliation"]["lastReconciledSpec"]["job"]["args"] == [str(second)]
               and k8s.status(name).get("savepoints", {}).get("last"),
               timeout=90, what="the upgrade deployed", details=details)
    status = k8s.status(name)
    savepoint = status["savepoints"]["last"]
    assert savepoint["kind"] == "upgrade"
    prefix = savepoint["path"].removeprefix(f"s3://{s3_server.bucket}/").rstrip("/")
    assert prefix.startswith(f"{name}/sp/")
    assert f"{prefix}/_metadata" in s3_objects(s3_server, prefix + "/")
    # the new JobManager starts from that savepoint
    jm = k8s.get("Deployment", f"{name}-jobmanager")
    assert jm is not None
    args = jm["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--from-savepoint") + 1] == savepoint["path"]
    assert status["restoredFrom"]["kind"] == "savepoint" and status["restoredFrom"]["path"] == savepoint["path"]

    # the second job ends its bounded input: its sums are the reference over ALL records
    expected = reference(COUNT)
    wait_until(lambda: final_sums(second) == expected, timeout=90, what="the restored job's final sums",
               details=lambda: f"{final_sums(second)} != {expected}\n{details()}")
    before = final_sums(first)
    assert before and all(before[k] < expected[k] for k in before)  # the first job was stopped midway

    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
    wait_until(lambda: k8s.get("FlinkJob", name) is None, timeout=30, what="the FlinkJob deleted", details=details)
