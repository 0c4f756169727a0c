"""A failing user function's traceback names the user's file, line and source line, on a cluster as
with --threads, and a `strom run` terminal shows it once (issue 16 item 5)."""

from __future__ import annotations

import subprocess
import sys

from .cluster_testing import SessionCluster, _env, wait_until

JOB = '''\
from strom.datastream import StreamExecutionEnvironment


def explode(v):
    return 1 // (v - 3)


env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3, 4]).map(explode).print()
env.execute("failing")
'''
# the frame as CPython prints it: the file as run, the line, and that line of the file's text
USER_FRAME = f'  File "job.py", line 5, in explode\n    {JOB.splitlines()[4].strip()}\n'


def write_job(tmp_path) -> None:
    (tmp_path / "job.py").write_text(JOB)


def strom(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strom.cli", *args], cwd=tmp_path, capture_output=True, text=True,
                          env=_env(), timeout=180)


def test_strom_run_prints_the_users_frame_once(tmp_path):
    write_job(tmp_path)
    for mode in ((), ("--threads",)):
        r = strom(tmp_path, "run", *mode, "job.py")
        assert r.returncode == 1, (mode, r.stderr)
        assert "Traceback" not in r.stdout
        assert r.stderr.count("Traceback (most recent call last)") == 1, (mode, r.stderr)
        assert r.stderr.count("ZeroDivisionError: integer division or modulo by zero") <= 2, r.stderr
        assert USER_FRAME in r.stderr, (mode, r.stderr)


def test_a_taskmanager_elsewhere_shows_the_submitted_source_lines(tmp_path):
    """The TaskManager's working directory has no job.py: the lines come with the job."""
    write_job(tmp_path)
    cluster = SessionCluster(taskmanagers=1, slots=1)
    try:
        r = strom(tmp_path, "submit", "job.py", "--jobmanager", f"127.0.0.1:{cluster.rest_port}")
        assert r.returncode == 0, r.stderr
        job_id = r.stdout.split()[-1]
        cluster.wait_for_state(job_id, ("FAILED",))
        trace = wait_until(lambda: cluster.get(f"/jobs/{job_id}/exceptions").get("root-exception"),
                           what="the root exception")
    finally:
        cluster.close()
    assert USER_FRAME in trace, trace
