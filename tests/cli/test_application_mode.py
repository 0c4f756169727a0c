"""Issue 16 items 2 and 14: a JobManager in application mode says what it waits for, stops within seconds
on SIGTERM, and suspends its job as Flink does (the entry point's shutdown hook closes the cluster
"externally": the job ends SUSPENDED, its HA data and checkpoints stay), so that the next JobManager
with the same high-availability storage takes the job over from its latest checkpoint."""

from __future__ import annotations

import json
import re
import signal
import socket
import time
import urllib.request

import pytest

from tests.cli.processes import JOB_SOURCE_ENDLESS, StromProcess, wait_until

PROMPT_EXIT_S = 10.0  # "within seconds": far below Kubernetes' 30 s grace period


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ports(jm: StromProcess) -> tuple[int, int]:
    line = wait_until(lambda: next((x for x in jm.stdout if "JobManager started" in x), None), timeout=60,
                      what="the JobManager's ports")
    m = re.search(r"rpc port (\d+), rest port (\d+)", line)
    assert m, line
    return int(m.group(1)), int(m.group(2))


def _get(rest_port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{rest_port}{path}", timeout=10) as r:
        return json.loads(r.read())


# "false" is what the operator sets (the JobManager serves REST after its job ended): a SIGTERM that ends
# the job still ends the process, it does not serve on waiting for a second SIGTERM that never comes
@pytest.mark.parametrize("shutdown_on_finish", ["true", "false"])
def test_application_mode_says_what_it_waits_for_and_stops_promptly_on_sigterm(tmp_path, shutdown_on_finish):
    job = tmp_path / "endless.py"
    job.write_text(JOB_SOURCE_ENDLESS)
    jm = StromProcess("jobmanager", "--job", str(job), "-D", "rest.port=0", "-D", "jobmanager.rpc.port=0",
                      "-D", "metrics.reporter.prom.port=0",
                      "-D", f"execution.shutdown-on-application-finish={shutdown_on_finish}", cwd=tmp_path)
    try:
        rpc_port, _ = _ports(jm)
        waiting = jm.wait_for_stderr("is waiting for")
        assert "waiting for 2 slots" in waiting, waiting  # parallelism 2, no TaskManager yet
        assert f"strom taskmanager --jobmanager 127.0.0.1:{rpc_port}" in waiting, waiting
        jm.wait_for_stderr("switched from CREATED to RUNNING")  # submitted: it now waits for slots
        sent = time.monotonic()
        jm.signal_command(signal.SIGTERM)
        assert jm.wait(PROMPT_EXIT_S * 3) == 143, jm.err()
        took = time.monotonic() - sent
    finally:
        jm.kill_leftovers()
    assert took < PROMPT_EXIT_S, f"the JobManager took {took:.1f} s to stop on SIGTERM"
    assert "strom: stopped by SIGTERM; the job was suspended" in jm.err().splitlines(), jm.err()
    assert "switched from RUNNING to SUSPENDED" in jm.err(), jm.err()  # not CANCELED: recoverable
    assert "Traceback" not in jm.err(), jm.err()


def test_sigterm_suspends_the_job_and_the_next_jobmanager_recovers_it_from_its_checkpoint(tmp_path):
    job = tmp_path / "endless.py"
    job.write_text(JOB_SOURCE_ENDLESS)
    rpc_port = _free_port()
    ha = [
        "-D", f"jobmanager.rpc.port={rpc_port}", "-D", "rest.port=0", "-D", "metrics.reporter.prom.port=0",
        "-D", "high-availability.type=file", "-D", f"high-availability.storageDir=file://{tmp_path}/ha",
        "-D", "execution.checkpointing.interval=200 ms", "-D", f"state.checkpoints.dir=file://{tmp_path}/cp",
    ]
    first = StromProcess("jobmanager", "--job", str(job), *ha, cwd=tmp_path)
    tm = StromProcess("taskmanager", "--jobmanager", f"127.0.0.1:{rpc_port}", "-D", "taskmanager.numberOfTaskSlots=2",
                      "-D", "metrics.reporter.prom.port=0", "--log-level", "WARNING", cwd=tmp_path)
    second = None
    try:
        _, rest_port = _ports(first)
        job_id = wait_until(lambda: (_get(rest_port, "/jobs/overview")["jobs"] or [None])[0], timeout=60,
                            what="the job")["jid"]
        wait_until(lambda: _get(rest_port, f"/jobs/{job_id}/checkpoints")["counts"]["completed"] >= 1,
                   timeout=60, what="a completed checkpoint")
        sent = time.monotonic()
        first.signal_command(signal.SIGTERM)
        assert first.wait(PROMPT_EXIT_S * 3) == 143, first.err()
        assert time.monotonic() - sent < PROMPT_EXIT_S
        assert "the job was suspended" in first.err()
        # a JobManager that replaces it (a restarted pod) resumes the job, not a new one
        second = StromProcess("jobmanager", "--job", str(job), *ha, cwd=tmp_path)
        recovered = second.wait_for_stderr("Recovered job")
        assert f"Recovered job {job_id} from checkpoint" in recovered, recovered
        _, rest_port = _ports(second)
        wait_until(lambda: _get(rest_port, f"/jobs/{job_id}")["state"] == "RUNNING", timeout=60,
                   what="the recovered job RUNNING on the TaskManager that registered again")
        assert [j["jid"] for j in _get(rest_port, "/jobs/overview")["jobs"]] == [job_id]
    finally:
        for process in (first, second, tm):
            if process is not None and process.proc.poll() is None:
                process.signal_group(signal.SIGTERM)
        for process in (first, second, tm):
            if process is not None:
                process.wait(30)
                process.kill_leftovers()


def test_a_session_jobmanager_and_its_taskmanager_stop_within_seconds_on_sigterm(tmp_path):
    jm = StromProcess("jobmanager", "-D", "rest.port=0", "-D", "jobmanager.rpc.port=0",
                      "-D", "metrics.reporter.prom.port=0", cwd=tmp_path)
    tm = None
    try:
        rpc_port, rest_port = _ports(jm)
        tm = StromProcess("taskmanager", "--jobmanager", f"127.0.0.1:{rpc_port}", "-D", "metrics.reporter.prom.port=0",
                          cwd=tmp_path)
        wait_until(lambda: _get(rest_port, "/overview")["taskmanagers"] == 1, timeout=60, what="TaskManager registered")
        for process, name in ((tm, "TaskManager"), (jm, "JobManager")):
            sent = time.monotonic()
            process.signal_command(signal.SIGTERM)
            assert process.wait(PROMPT_EXIT_S * 3) == 143, process.err()
            took = time.monotonic() - sent
            assert took < PROMPT_EXIT_S, f"the {name} took {took:.1f} s to stop on SIGTERM"
            assert "Traceback" not in process.err(), process.err()
            assert process.kill_leftovers() == [], f"the {name} left processes behind"
    finally:
        for process in (tm, jm):
            if process is not None:
                process.kill_leftovers()
