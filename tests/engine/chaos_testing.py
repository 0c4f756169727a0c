"""Chaos helpers shared by the kill -9 tests (engine, async I/O, JDBC, Kafka): progress checks through the
REST API, the published output of a FileSink, and the kill-a-TaskManager-between-checkpoints loop."""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

from tests.engine.cluster_testing import SessionCluster, wait_until


def published(out: Path) -> Counter[str]:
    """The lines of a FileSink's published files (in-progress and pending files are hidden)."""
    return Counter(
        line
        for f in out.rglob("*")
        if f.is_file() and not f.name.startswith(".")
        for line in f.read_text().splitlines()
    )


def completed_since(cluster: SessionCluster, job_id: str, since_ms: int) -> bool:
    """The job's latest completed checkpoint was triggered after `since_ms`. After a kill this is the
    sign of progress after the failover: a checkpoint in flight at the kill may still complete before
    the JobManager hears of the kill, but one triggered after it needs every task alive (or the
    killed process ran none of the job's tasks, and there is no failover to wait for)."""
    try:
        completed = cluster.get(f"/jobs/{job_id}/checkpoints")["latest"]["completed"]
    except OSError:
        return False  # the JobManager is restarting
    return bool(completed) and completed["trigger_timestamp"] > since_ms


def running(cluster: SessionCluster, job_id: str) -> bool:
    try:
        return cluster.job_state(job_id) == "RUNNING"
    except OSError:
        return False


def kill_taskmanagers_until_finished(
    cluster: SessionCluster, job_id: str, *, kills: int, rng: random.Random, slots: int
) -> None:
    """`kills` times: once a checkpoint triggered after the previous kill completed, at a random moment
    kill -9 a live TaskManager and start a replacement with `slots` slots; then the job must finish."""
    killed_at_ms = -1
    for _ in range(kills):
        wait_until(
            lambda since=killed_at_ms: running(cluster, job_id) and completed_since(cluster, job_id, since),
            timeout=90, what="a checkpoint completed since the previous kill",
        )
        time.sleep(rng.uniform(0.0, 0.3))  # a random moment between checkpoints, not a wait for a condition
        killed_at_ms = int(time.time() * 1000)
        cluster.kill_taskmanager(next(tm for tm in cluster.tms if tm.poll() is None))
        cluster.add_taskmanager(slots)
    state = cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED"), timeout=120)
    assert state == "FINISHED", cluster.get(f"/jobs/{job_id}/exceptions")
