"""The stop-with-savepoint-then-restore flow the Table API's savepoint tests share.

A job file is written by the test (`make_job(tmp_path, name, parallelism) -> (job file, output dir)`), run
at parallelism 2 on a session cluster of real processes, stopped with a savepoint once `ready(output dir)`
holds, and submitted again at parallelism 3 from that savepoint; both runs write through the exactly-once
FileSink, so the committed lines of each run are what the test compares with its plain-Python result.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit
from tests.engine.test_savepoints import post, savepoint_location

JobFactory = Callable[[Path, str, int], tuple[str, Path]]


def changelog_lines(out_dir: Path) -> list[str]:
    lines = []
    for root, _, files in os.walk(out_dir):
        for f in sorted(files):
            if not f.startswith("."):  # in-progress files are not committed output
                lines += Path(root, f).read_text().splitlines()
    return lines


def stop_and_restore(tmp_path: Path, make_job: JobFactory, ready: Callable[[Path], bool],
                     what: str) -> tuple[list[str], list[str]]:
    """(committed lines of the first run, of the restored run)."""
    cluster = SessionCluster(taskmanagers=1, slots=3)
    try:
        job, out1 = make_job(tmp_path, "first", 2)
        job_id = submit(cluster, job)
        cluster.wait_for_state(job_id, ("RUNNING",))
        wait_until(lambda: ready(out1), what=what)
        status, answer = post(cluster, f"/jobs/{job_id}/stop", {"targetDirectory": str(tmp_path / "stop")})
        assert status == 202, answer
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED")) == "FINISHED"
        savepoint = savepoint_location(cluster, job_id, answer["request-id"])
        first = changelog_lines(out1)
        job2, out2 = make_job(tmp_path, "restored", 3)
        proc = cluster.cli("submit", job2, "--from-savepoint", savepoint)
        assert proc.returncode == 0, proc.stderr
        job_id2 = proc.stdout.strip().split()[-1]
        assert cluster.wait_for_state(job_id2, ("FINISHED", "FAILED")) == "FINISHED"
        return first, changelog_lines(out2)
    finally:
        cluster.close()
