"""Helpers of the integration tests that run real jobs (process kubelet) with savepoints in S3 (weed mini).

The job sums values per key: a rate-limited bounded source -> key_by -> reduce -> exactly-once
FileSink. Its last line per key is the running sum, so the final output equals the plain-Python
`reference` only if state was carried over exactly through every stop and restore (lost state
gives smaller sums, state restored twice larger ones).
"""

from __future__ import annotations

import base64
import os
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from tests.engine.s3_server import S3Server
from tests.operator.operator_harness import Cluster

KEYS = 13


def reference(count: int) -> dict[int, int]:
    """Final sum per key of records i = 0..count-1 keyed by i % KEYS, computed without the engine."""
    sums: Counter[int] = Counter()
    for i in range(count):
        sums[i % KEYS] += i
    return dict(sums)


def final_sums(out_dir: Path) -> dict[int, int]:
    """The largest (= latest, sums only grow) sum per key in the committed part files."""
    finals: dict[int, int] = {}
    for root, _, files in os.walk(out_dir):
        for f in files:
            if f.startswith("."):
                continue  # in-progress and pending files are not committed output
            with open(os.path.join(root, f)) as lines:
                for line in lines:
                    k, v = map(int, line.split())
                    finals[k] = max(finals.get(k, 0), v)
    return finals


def sums_job(path: Path, *, count: int, rate: float) -> Path:
    """Write the job's entry file; it takes the output directory as its one argument."""
    path.write_text(textwrap.dedent(f"""
        import sys
        from strom.common import Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner

        out = sys.argv[1]
        env = StreamExecutionEnvironment.get_execution_environment()
        src = env.from_source(DataGeneratorSource(lambda i: (i % {KEYS}, i), {count}, {rate!r}),
                              WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
        sums = src.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("sums")
        sink = (FileSink.for_row_format(out, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        sums.map(lambda s: f"{{s[0]}} {{s[1]}}").uid("format").sink_to(sink).uid("sink")
        env.execute("sums")
    """))
    return path


def failing_job(path: Path) -> Path:
    """An entry that raises before it builds a job: the JobManager never has a job to run."""
    path.write_text("raise RuntimeError('this job version is broken: it raises at start')\n")
    return path


def s3_objects(s3: S3Server, prefix: str) -> list[str]:
    keys: list[str] = []
    for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents") or ()]
    return keys


def s3_key_prefix(s3: S3Server, uri: str) -> str:
    """`s3://bucket/a/b` (or its `_metadata`) -> `a/b/`."""
    key = uri.removeprefix(f"s3://{s3.bucket}/").removesuffix("/_metadata").rstrip("/")
    return key + "/"


def flinkjob(name: str, namespace: str, entry: Path, out: Path, s3: S3Server, *,
             flink_configuration: dict[str, str] | None = None, savepoints: dict[str, Any] | None = None,
             **job: Any) -> dict[str, Any]:
    """A FlinkJob of the sums job: parallelism 2 on TaskManagers of 2 slots, checkpoints and savepoints in S3."""
    return {
        "apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "image": "strom/runtime:test",
            "job": {"entry": str(entry), "args": [str(out)], "parallelism": 2, "upgradeMode": "savepoint", **job},
            "taskManager": {"slots": 2},
            "checkpointing": {"interval": "500 ms", "dir": f"s3://{s3.bucket}/{name}/chk"},
            "savepoints": {"dir": f"s3://{s3.bucket}/{name}/sp", **(savepoints or {})},
            "s3": {"endpoint": s3.endpoint, "credentialsSecret": f"{name}-s3"},
            # short heartbeats so a lost TaskManager is noticed in seconds (the kubelet rewrites nothing)
            "flinkConfiguration": {"s3.path.style.access": "true", "s3.region": s3.region,
                                   "heartbeat.interval": "500 ms", "heartbeat.timeout": "5000 ms",
                                   **(flink_configuration or {})},
        },
    }


def s3_secret(name: str, namespace: str, s3: S3Server) -> dict[str, Any]:
    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "data": {"AWS_ACCESS_KEY_ID": b64(s3.access_key), "AWS_SECRET_ACCESS_KEY": b64(s3.secret_key)}}


def lifecycle(k8s: Cluster, name: str) -> str | None:
    return k8s.status(name).get("lifecycleState")


def job_state(k8s: Cluster, name: str) -> str | None:
    return (k8s.status(name).get("jobStatus") or {}).get("state")


def jobmanager_args(k8s: Cluster, name: str) -> list[str]:
    jm = k8s.get("Deployment", f"{name}-jobmanager")
    assert jm is not None, f"no JobManager Deployment of {name}"
    return list(jm["spec"]["template"]["spec"]["containers"][0]["args"])


def restored_from(args: list[str]) -> str | None:
    return args[args.index("--from-savepoint") + 1] if "--from-savepoint" in args else None


def pods_of(k8s: Cluster, name: str) -> list[dict[str, Any]]:
    pods = k8s.call(lambda k: k.list("Pod", k8s.namespace, labels={"app.kubernetes.io/instance": name}))
    return list(pods)
