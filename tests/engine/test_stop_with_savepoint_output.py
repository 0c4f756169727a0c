"""Stop-with-savepoint on a session cluster, then a restore: the committed FileSink output of both runs
holds every record's effect exactly once.

The job emits the running sum per key after every record (source -> key_by -> reduce -> FileSink);
one source subtask keeps each key's records in order, so the running sums are known in advance.
Flink's stop-with-savepoint is a synchronous savepoint: the job is FINISHED only after every task
heard of the savepoint, so the sink's last transaction (what it wrote before the savepoint's barrier)
is committed by then. The first run's output is read as soon as the job is FINISHED, before the
restored run starts (a restore would also commit it, but too late for a reader of the stopped job's
output); the restored run writes elsewhere. Together they must be the plain-Python list of running
sums, each once: a transaction left uncommitted at the stop loses the sums of its records.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit
from tests.engine.test_savepoints import COUNT, post, savepoint_location, sums_job

KEYS = 13  # sums_job keys records by i % 13


def committed_lines(out: Path) -> list[str]:
    lines: list[str] = []
    for root, _, files in os.walk(out):
        for name in files:
            if not name.startswith("."):  # in-progress and pending files are not committed output
                lines += Path(root, name).read_text().splitlines()
    return lines


def running_sums(count: int) -> Counter[tuple[int, int]]:
    """Every (key, running sum) the job emits, from plain Python: record i adds i to key i % 13."""
    sums = [0] * KEYS
    expected: Counter[tuple[int, int]] = Counter()
    for i in range(count):
        sums[i % KEYS] += i
        expected[(i % KEYS, sums[i % KEYS])] += 1
    return expected


def parse(lines: list[str]) -> Counter[tuple[int, int]]:
    return Counter(tuple(int(v) for v in line.split()) for line in lines)  # type: ignore[misc]


def test_a_stopped_jobs_committed_output_and_its_restored_run_hold_every_running_sum_once(tmp_path: Path) -> None:
    cluster = SessionCluster(taskmanagers=2, slots=2)
    try:
        job, out1 = sums_job(tmp_path, "first", keyed_parallelism=2, source_parallelism=1)
        job_id = submit(cluster, job)
        cluster.wait_for_state(job_id, ("RUNNING",))
        wait_until(lambda: len(committed_lines(out1)) > 0, what="committed output of the first run")
        status, answer = post(cluster, f"/jobs/{job_id}/stop", {"targetDirectory": str(tmp_path / "stop")})
        assert status == 202, answer
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED")) == "FINISHED"
        savepoint = savepoint_location(cluster, job_id, answer["request-id"])
        first = committed_lines(out1)
        job2, out2 = sums_job(tmp_path, "restored", keyed_parallelism=3, source_parallelism=1)
        proc = cluster.cli("submit", job2, "--from-savepoint", savepoint)
        assert proc.returncode == 0, proc.stderr
        job_id2 = proc.stdout.strip().split()[-1]
        assert cluster.wait_for_state(job_id2, ("FINISHED", "FAILED")) == "FINISHED"
        second = committed_lines(out2)
    finally:
        cluster.close()
    assert 0 < len(first) < COUNT, "the stop should fall in the middle of the input"
    assert parse(first) + parse(second) == running_sums(COUNT)
