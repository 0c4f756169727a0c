"""The scenarios' FlinkJobs and their expected output.

`keyed_counts_flinkjob` is the FlinkJob of e2e/jobs/keyed_counts.py with short intervals
(checkpoints every 500 ms into S3, savepoints into S3, S3 credentials from a Secret, heartbeats
every 500 ms with a 5 s timeout).
`read_output` reads what the job's exactly-once FileSink published; `reference_lines` is the
plain-Python reference it must equal: for record i (key i % K) the count of records j <= i with
that key. `exactly_once_report` says what differs (missing, duplicated, wrong counts).
`batch_counts_flinkjob` is the batch FlinkJob (spec.mode batch, a Spark driver pod) of
e2e/jobs/batch_counts.py; `read_counts` reads its `key count` lines, `reference_counts` is their
plain-Python reference.
"""

from __future__ import annotations

import base64
import os
from collections import Counter
from pathlib import Path
from typing import Any

from e2e.platform import Platform

Line = tuple[int, int, int]  # (key, count, index)


def phases_arg(phases: list[tuple[int, float]]) -> str:
    return ",".join(f"{count}@{rate:g}" for count, rate in phases)


def total_records(phases: list[tuple[int, float]]) -> int:
    return sum(count for count, _ in phases)


def s3_secret(platform: Platform, name: str) -> dict[str, Any]:
    s3 = platform.s3

    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": platform.namespace},
            "data": {"AWS_ACCESS_KEY_ID": b64(s3.access_key), "AWS_SECRET_ACCESS_KEY": b64(s3.secret_key)}}


def ensure_s3_secret(platform: Platform, name: str = "e2e-s3") -> str:
    if platform.get("Secret", name) is None:
        platform.create(s3_secret(platform, name))
    return name


def output_dir(platform: Platform, name: str) -> Path:
    """Where the job writes: a test directory, or the shared directory the pods of a real cluster mount."""
    base = Path(platform.config.shared_dir) if platform.config.shared_dir else platform.work_dir / "outputs"
    path = base / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def _shared_volume(platform: Platform) -> dict[str, Any]:
    """A real cluster: the shared host directory mounted at the same path into every pod."""
    shared = platform.config.shared_dir
    return {"spec": {"containers": [{"name": "flink-main-container",
                                     "volumeMounts": [{"name": "e2e-shared", "mountPath": shared}]}],
                     "volumes": [{"name": "e2e-shared", "hostPath": {"path": shared, "type": "DirectoryOrCreate"}}]}}


def keyed_counts_flinkjob(platform: Platform, name: str, out: Path, *, phases: list[tuple[int, float]],
                          parallelism: int = 2, slots: int = 2, keys: int = 7, cost_ms: float = 0.0, tag: str = "v1",
                          upgrade_mode: str = "savepoint", **spec: Any) -> dict[str, Any]:
    secret = ensure_s3_secret(platform)
    s3 = platform.s3
    args = [str(out), "--phases", phases_arg(phases), "--keys", str(keys), "--tag", tag]
    if cost_ms:
        args += ["--cost-ms", f"{cost_ms:g}"]
    body: dict[str, Any] = {
        "image": platform.config.image,
        "job": {"entry": f"{platform.config.jobs_dir}/keyed_counts.py", "args": args, "parallelism": parallelism,
                "upgradeMode": upgrade_mode},
        "taskManager": {"slots": slots, "resources": {"cpu": "1", "memory": "1Gi"}},
        "jobManager": {"resources": {"cpu": "0.5", "memory": "1Gi"}},
        "checkpointing": {"interval": "500 ms", "dir": f"s3://{s3.bucket}/{name}/checkpoints"},
        "savepoints": {"dir": f"s3://{s3.bucket}/{name}/savepoints"},
        "s3": {"endpoint": s3.endpoint, "credentialsSecret": secret},
        "flinkConfiguration": {"s3.path.style.access": "true", "s3.region": s3.region,
                               "restart-strategy.type": "fixed-delay",
                               "restart-strategy.fixed-delay.attempts": "100",
                               "restart-strategy.fixed-delay.delay": "500 ms",
                               # a killed TaskManager is noticed within seconds (Flink: 10 s / 50 s)
                               "heartbeat.interval": "500 ms", "heartbeat.timeout": "5000 ms",
                               "kubernetes.operator.savepoint.timeout": "60 s"},
    }
    if platform.config.shared_dir:
        body["podTemplate"] = _shared_volume(platform)
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(body.get(key), dict):
            body[key] = {**body[key], **value}
        else:
            body[key] = value
    return {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
            "metadata": {"name": name, "namespace": platform.namespace}, "spec": body}


def read_output(out: Path) -> list[tuple[int, int, int, str]]:
    """Every published line (key, count, index, tag); in-progress and pending files start with '.'."""
    lines = []
    for root, _, files in os.walk(out):
        for f in files:
            if f.startswith("."):
                continue
            with open(os.path.join(root, f)) as fh:
                for line in fh:
                    key, count, index, tag = line.split()
                    lines.append((int(key), int(count), int(index), tag))
    return lines


def reference_lines(n: int, keys: int) -> Counter[Line]:
    """What the job must have written for records 0..n-1, each exactly once."""
    seen: Counter[int] = Counter()
    out: Counter[Line] = Counter()
    for i in range(n):
        seen[i % keys] += 1
        out[(i % keys, seen[i % keys], i)] += 1
    return out


def exactly_once_report(lines: list[tuple[int, int, int, str]], n: int, keys: int) -> str:
    """'' when the output is exactly the reference; else what differs, a few of each."""
    got: Counter[Line] = Counter((k, c, i) for k, c, i, _ in lines)
    want = reference_lines(n, keys)
    missing = want - got
    extra = got - want
    dup_indexes = [i for i, m in Counter(i for _, _, i in got.elements()).items() if m > 1]
    if not missing and not extra:
        return ""
    return (f"{len(lines)} lines for {n} records: {sum(missing.values())} missing (e.g. {sorted(missing)[:5]}), "
            f"{sum(extra.values())} unexpected (e.g. {sorted(extra)[:5]}), "
            f"{len(dup_indexes)} records written more than once (e.g. {sorted(dup_indexes)[:5]})")


def indexes_written(out: Path) -> int:
    return len({i for _, _, i, _ in read_output(out)})


def batch_counts_flinkjob(platform: Platform, name: str, out: Path, *, records: int, keys: int,
                          fail_on: int | None = None) -> dict[str, Any]:
    """A batch FlinkJob counting records per key; restartPolicy Never, so a failure is final."""
    args = [str(out), "--records", str(records), "--keys", str(keys)]
    if fail_on is not None:
        args += ["--fail-on", str(fail_on)]
    body: dict[str, Any] = {
        "image": platform.config.image,
        "mode": "batch",
        "job": {"entry": f"{platform.config.jobs_dir}/batch_counts.py", "args": args, "parallelism": 2},
        "spark": {"driver": {"cores": 1, "memory": "512m"},
                  "executor": {"instances": 1, "cores": 1, "memory": "512m"},
                  "sparkConf": {"spark.sql.shuffle.partitions": "2"}},
        "restartPolicy": {"type": "Never"},
    }
    if platform.config.shared_dir:
        body["podTemplate"] = _shared_volume(platform)  # the driver's and the executors' main container
    return {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
            "metadata": {"name": name, "namespace": platform.namespace}, "spec": body}


def read_counts(out: Path) -> list[tuple[str, int]]:
    """Every published `key count` line; in-progress and pending files start with '.'."""
    lines = []
    for path in sorted(out.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            for line in path.read_text().splitlines():
                key, count = line.split()
                lines.append((key, int(count)))
    return lines


def reference_counts(records: int, keys: int) -> list[tuple[str, int]]:
    """What batch_counts.py must write: one line per key, the number of its records."""
    return sorted(Counter(f"k{i % keys}" for i in range(records)).items())
