"""SQL FlinkJobs end to end: a script applied runs in application mode with its results in its filesystem
sink equal to a plain-Python reference; a compatible new script is an upgrade through a savepoint whose job
continues the windowed counts; an incompatible one is refused before the running job is stopped; a script
with an error never starts a pod.

The scripts count buy events per event-time hour (a tumbling window) over csv files a monitored
filesystem source picks up; the test writes the files, so it decides what each job sees. A window's row
is written when the watermark (last event time - 1 s) passes the window's end, and published when the
checkpoint that holds it completes (the exactly-once filesystem sink).
"""

from __future__ import annotations

import csv
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from e2e.flinkjobs import _shared_volume, ensure_s3_secret, output_dir
from e2e.platform import Platform

pytestmark = pytest.mark.timeout(300)

Event = tuple[int, str, str]  # user_id, behavior, ts


def script(events: Path, out: Path, *, behavior: str = "buy", users: Path | None = None) -> str:
    text = f"""-- buys per hour of event time
CREATE TABLE ev (
  user_id BIGINT,
  behavior STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{events}', 'format' = 'csv', 'source.monitor-interval' = '200 ms');
CREATE TABLE hourly (h BIGINT, buys BIGINT) WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv');
INSERT INTO hourly
SELECT HOUR(window_start), COUNT(*)
FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' HOUR))
WHERE behavior = '{behavior}'
GROUP BY window_start, window_end;
"""
    if users is not None:  # a second INSERT: the first one's operators and uids stay as they were
        text += f"""CREATE TABLE users_hourly (h BIGINT, users BIGINT)
WITH ('connector' = 'filesystem', 'path' = '{users}', 'format' = 'csv');
INSERT INTO users_hourly
SELECT HOUR(window_start), COUNT(DISTINCT user_id)
FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' HOUR))
GROUP BY window_start, window_end;
"""
    return text


def sql_flinkjob(platform: Platform, name: str, job: dict[str, Any]) -> dict[str, Any]:
    s3 = platform.s3
    body: dict[str, Any] = {
        "image": platform.config.image,
        "job": {"parallelism": 1, "upgradeMode": "savepoint", **job},
        "taskManager": {"slots": 1, "resources": {"cpu": "1", "memory": "1Gi"}},
        "jobManager": {"resources": {"cpu": "0.5", "memory": "1Gi"}},
        "checkpointing": {"interval": "500 ms", "dir": f"s3://{s3.bucket}/{name}/checkpoints"},
        "savepoints": {"dir": f"s3://{s3.bucket}/{name}/savepoints"},
        "s3": {"endpoint": s3.endpoint, "credentialsSecret": ensure_s3_secret(platform)},
        "flinkConfiguration": {"s3.path.style.access": "true", "s3.region": s3.region,
                               "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "500 ms",
                               "heartbeat.interval": "500 ms", "heartbeat.timeout": "5000 ms",
                               "kubernetes.operator.savepoint.timeout": "60 s"},
    }
    if platform.config.shared_dir:
        body["podTemplate"] = _shared_volume(platform)
    return {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
            "metadata": {"name": name, "namespace": platform.namespace}, "spec": body}


def write_events(directory: Path, name: str, events: list[Event]) -> None:
    """A complete csv file at once (renamed into place): the monitored source never sees half of it."""
    tmp = directory.parent / f".{directory.name}-{name}.tmp"
    tmp.write_text("".join(f"{u},{b},{ts}\n" for u, b, ts in events))
    tmp.rename(directory / name)


def read_rows(out: Path) -> list[tuple[int, int]]:
    rows: list[tuple[int, int]] = []
    if out.is_dir():
        for f in sorted(out.rglob("*")):
            if f.is_file() and not f.name.startswith("."):
                with open(f, encoding="utf-8") as fh:
                    rows += [(int(a), int(b)) for a, b in csv.reader(fh)]
    return sorted(rows)


def hourly_buys(events: list[Event]) -> list[tuple[int, int]]:
    """The plain-Python reference: buys per hour, for the hours whose window the watermark has closed
    (watermark = the latest event time - 1 s; a window [h, h+1) fires once it reaches h+1 - 1 ms)."""
    times = [datetime.fromisoformat(ts) for _, _, ts in events]
    watermark = max(times).timestamp() - 1
    counts = Counter(t.hour for (_, b, _), t in zip(events, times, strict=True) if b == "buy")
    day = min(times).replace(hour=0, minute=0, second=0)
    return sorted((h, n) for h, n in counts.items() if day.timestamp() + (h + 1) * 3600 - 0.001 <= watermark)


def dirs(platform: Platform, name: str) -> tuple[Path, Path]:
    base = output_dir(platform, name)
    events, out = base / "events", base / "hourly"
    events.mkdir(exist_ok=True)
    return events, out


def test_a_sql_flinkjob_from_a_configmap_runs_and_its_sink_equals_the_reference(platform: Platform):
    name = "e2e-sql"
    events_dir, out = dirs(platform, name)
    events = [(1, "buy", "2026-11-26 00:10:00"), (2, "pv", "2026-11-26 00:30:00"), (3, "buy", "2026-11-26 00:50:00"),
              (1, "buy", "2026-11-26 01:05:00"), (4, "cart", "2026-11-26 01:30:00"), (2, "buy", "2026-11-26 02:45:00"),
              (5, "buy", "2026-11-26 02:59:59"), (6, "pv", "2026-11-26 05:00:00")]
    write_events(events_dir, "a.csv", events)
    platform.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-scripts"},
                     "data": {"hourly.sql": script(events_dir, out)}})
    platform.create(sql_flinkjob(platform, name, {
        "sqlFrom": {"configMapKeyRef": {"name": f"{name}-scripts", "key": "hourly.sql"}}}))
    status = platform.wait_running(name, timeout=120)
    assert status["sql"]["statefulOperators"], status.get("sql")
    expected = hourly_buys(events)
    assert expected == [(0, 2), (1, 1), (2, 2)]  # the reference, worked by hand
    platform.wait(name, lambda: read_rows(out) == expected, timeout=90,
                  what=f"the sink's rows {expected} (now {read_rows(out)})")
    platform.delete("FlinkJob", name)
    platform.delete("ConfigMap", f"{name}-scripts")
    platform.wait_gone(name)


def _upgraded(platform: Platform, name: str, sql: str) -> dict[str, Any] | None:
    status = platform.status(name)
    done = (status.get("lifecycleState") == "STABLE" and (status.get("jobStatus") or {}).get("state") == "RUNNING"
            and status["reconciliation"]["lastReconciledSpec"]["job"].get("sql") == sql
            and "upgradeStep" not in status["reconciliation"])
    return status if done else None


def test_sql_upgrades_compatible_through_a_savepoint_and_incompatible_refused_while_the_job_runs(
        platform: Platform):
    name = "e2e-sql-upgrade"
    events_dir, out = dirs(platform, name)
    users = out.parent / "users"
    v1 = script(events_dir, out)
    first = [(1, "buy", "2026-11-26 00:10:00"), (2, "buy", "2026-11-26 00:20:00"), (3, "buy", "2026-11-26 01:05:00"),
             (1, "buy", "2026-11-26 01:10:00"), (4, "pv", "2026-11-26 01:30:00")]
    write_events(events_dir, "1.csv", first)
    platform.create(sql_flinkjob(platform, name, {"sql": v1}))
    platform.wait_running(name, timeout=120)
    platform.wait(name, lambda: read_rows(out) == [(0, 2)], timeout=90, what="hour 0 counted by the first job")
    old_job = platform.status(name)["jobStatus"]["jobId"]

    # compatible: a second INSERT beside the first; hour 1's window is open and its count (2) is in the state
    v2 = script(events_dir, out, users=users)
    platform.patch_spec(name, {"job": {"sql": v2}})
    status = platform.wait(name, lambda: _upgraded(platform, name, v2), timeout=150, what="the upgrade to v2")
    assert status["savepoints"]["last"]["kind"] == "upgrade"
    assert status["restoredFrom"]["kind"] == "savepoint"
    assert status["jobStatus"]["jobId"] != old_job
    second = [(5, "buy", "2026-11-26 01:40:00"), (6, "buy", "2026-11-26 01:50:00"), (1, "buy", "2026-11-26 02:15:00"),
              (7, "pv", "2026-11-26 05:00:00")]
    write_events(events_dir, "2.csv", second)
    expected = hourly_buys(first + second)
    assert expected == [(0, 2), (1, 4), (2, 1)]  # hour 1: 2 before the upgrade + 2 after; lost state would say 2
    platform.wait(name, lambda: read_rows(out) == expected, timeout=90,
                  what=f"the counts continued: {expected} (now {read_rows(out)})")
    # the new INSERT's window state started empty: hour 1 has only the users it saw
    platform.wait(name, lambda: (1, 2) in read_rows(users), timeout=60, what="the new sink's rows")

    # incompatible: the filter under the count changes its sub-plan, so its uid: refused, v2 keeps running
    running = platform.status(name)
    v3 = script(events_dir, out, behavior="cart", users=users)
    platform.patch_spec(name, {"job": {"sql": v3}})

    def refused() -> dict[str, Any] | None:
        degraded = platform.conditions(name).get("Degraded") or {}
        return degraded if degraded.get("reason") == "IncompatibleUpgrade" and degraded["status"] == "True" else None

    degraded = platform.wait(name, refused, timeout=60, what="the incompatible upgrade refused")
    assert "WindowAggregate" in degraded["message"] and "is not in the new plan" in degraded["message"]
    assert "allowNonRestoredState" in degraded["message"]
    status = platform.status(name)
    assert status["jobStatus"]["jobId"] == running["jobStatus"]["jobId"] and status["jobStatus"]["state"] == "RUNNING"
    assert status["reconciliation"]["lastReconciledSpec"]["job"]["sql"] == v2
    assert "upgradeStep" not in status["reconciliation"] and status.get("lifecycleState") == "STABLE"
    assert status["savepoints"]["last"] == running["savepoints"]["last"]  # no savepoint, no stop
    warnings = [e for e in platform.events(name) if e.get("reason") == "IncompatibleUpgrade"]
    assert warnings and warnings[-1]["type"] == "Warning"
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)


def test_a_sql_flinkjob_with_an_error_never_starts_a_pod(platform: Platform):
    name = "e2e-sql-bad"
    events_dir, out = dirs(platform, name)
    bad = script(events_dir, out).replace("FROM TABLE(TUMBLE(TABLE ev", "FROM TABLE(TUMBLE(TABLE evs")
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "TABLE evs" in text)
    platform.create(sql_flinkjob(platform, name, {"sql": bad}))

    def judged() -> dict[str, Any] | None:
        degraded = platform.conditions(name).get("Degraded") or {}
        return degraded if degraded.get("reason") == "InvalidSpec" else None

    degraded = platform.wait(name, judged, timeout=60, what="the script refused")
    assert degraded["message"].startswith("spec.job.sql: ") and f"line {line}, column" in degraded["message"]
    assert "evs" in degraded["message"]
    status = platform.status(name)
    assert status.get("lifecycleState") is None and "lastReconciledSpec" not in (status.get("reconciliation") or {})
    assert platform.owned_objects(name) == []
    assert any(e.get("reason") == "InvalidSpec" and e.get("type") == "Warning" for e in platform.events(name))
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)


def test_a_batch_sql_flinkjob_completes_on_spark_with_the_reference_counts(platform: Platform):
    """spec.mode batch: the Spark driver pod runs the script (`strom run --runtime-mode batch job.sql`); a
    bounded source ends with the maximum watermark, so every hour's window is counted."""
    name = "e2e-sql-batch"
    events_dir, out = dirs(platform, name)
    events = [(1, "buy", "2026-11-26 00:10:00"), (2, "buy", "2026-11-26 00:30:00"), (3, "pv", "2026-11-26 01:00:00"),
              (1, "buy", "2026-11-26 03:05:00"), (4, "buy", "2026-11-26 03:30:00"), (5, "buy", "2026-11-26 03:59:59")]
    write_events(events_dir, "a.csv", events)
    bounded = script(events_dir, out).replace(", 'source.monitor-interval' = '200 ms'", "")
    body: dict[str, Any] = {
        "image": platform.config.image, "mode": "batch",
        "job": {"sql": bounded, "parallelism": 1},
        "spark": {"driver": {"cores": 1, "memory": "512m"}, "executor": {"instances": 1, "cores": 1, "memory": "512m"},
                  "sparkConf": {"spark.sql.shuffle.partitions": "2"}},
        "restartPolicy": {"type": "Never"},
    }
    if platform.config.shared_dir:
        body["podTemplate"] = _shared_volume(platform)
    platform.create({"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
                     "metadata": {"name": name, "namespace": platform.namespace}, "spec": body})

    def ended() -> str | None:
        state = (platform.status(name).get("batch") or {}).get("state")
        return state if state in ("COMPLETED", "FAILED") else None

    state = platform.wait(name, ended, timeout=240 if platform.config.emulated else 400, what="the batch run ended")
    assert state == "COMPLETED", platform.status(name)
    expected = sorted(Counter(int(ts[11:13]) for _, b, ts in events if b == "buy").items())
    assert expected == [(0, 2), (3, 3)]
    assert read_rows(out) == expected
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)
