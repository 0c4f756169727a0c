"""Issue 16 item 1: `strom run` and `strom taskmanager` stop every process they started on SIGTERM and
SIGINT, sent to the command alone (kill, timeout, systemd) or to its process group (Ctrl-C, a container
runtime), with the shell's exit codes (130, 143) and one line instead of tracebacks."""

from __future__ import annotations

import signal

import pytest

from tests.cli.processes import JOB_SOURCE_ENDLESS, StromProcess, marked_pids, wait_until

# strom run + its TaskManager + 2 slot processes (parallelism 2, one TaskManager with 2 slots), and
# multiprocessing's resource tracker beside the slots
MINICLUSTER_PROCESSES = 4


@pytest.fixture
def endless_job(tmp_path):
    path = tmp_path / "endless.py"
    path.write_text(JOB_SOURCE_ENDLESS)
    return path


def _start_running(tmp_path, *args: str) -> StromProcess:
    run = StromProcess("run", *args, cwd=tmp_path)
    try:
        wait_until(lambda: len(marked_pids(run.mark)) >= MINICLUSTER_PROCESSES or run.proc.poll() is not None,
                   timeout=60, what="the mini-cluster's processes")
        run.wait_for_stderr("started: 2 slots")  # the TaskManager's line: its slots are up
        wait_until(lambda: run.out().count("\n") >= 2, timeout=60, what="the job's first records")
    except BaseException:
        run.kill_leftovers()
        raise
    return run


@pytest.mark.parametrize(("sig", "to_group", "code"), [
    (signal.SIGTERM, False, 143),  # kill PID, timeout(1), systemd's main-process kill
    (signal.SIGTERM, True, 143),   # a container runtime, systemd's control-group kill
    (signal.SIGINT, True, 130),    # Ctrl-C in a terminal
])
def test_a_signal_to_strom_run_stops_its_taskmanager_and_slot_processes(tmp_path, endless_job, sig, to_group, code):
    run = _start_running(tmp_path, str(endless_job))
    assert len(run.descendants()) >= MINICLUSTER_PROCESSES - 1, "a TaskManager and its two slot processes"
    (run.signal_group if to_group else run.signal_command)(sig)
    try:
        assert run.wait(30) == code, run.err()
        left = marked_pids(run.mark)  # right after the command exited: nothing it started survives
    finally:
        run.kill_leftovers()
    assert left == [], f"processes left running after strom run exited: {left}"
    name = signal.Signals(sig).name
    assert run.err().splitlines()[-1] == f"strom: stopped by {name}; the job was cancelled", run.err()
    assert "Traceback" not in run.err() and "KeyboardInterrupt" not in run.err(), run.err()


def test_ctrl_c_with_threads_exits_130_as_the_help_says(tmp_path, endless_job):
    run = StromProcess("run", "--threads", str(endless_job), cwd=tmp_path)
    try:
        wait_until(lambda: run.out().count("\n") >= 2, timeout=60, what="the job's first records")
        run.signal_group(signal.SIGINT)
        assert run.wait(30) == 130, run.err()
    finally:
        run.kill_leftovers()
    assert run.err().splitlines() == ["strom: stopped by SIGINT; the job was cancelled"]
    help_text = StromProcess("run", "--help", cwd=tmp_path)
    assert help_text.wait(30) == 0 and "130" in help_text.out()


def test_sigterm_to_a_taskmanager_stops_its_slot_processes(tmp_path):
    """A TaskManager alone (no JobManager yet: it keeps retrying) with 2 slot processes, SIGTERM to its pid."""
    tm = StromProcess("taskmanager", "--jobmanager", "127.0.0.1:9", "-D", "taskmanager.numberOfTaskSlots=2",
                      "-D", "metrics.reporter.prom.port=0", "--log-level", "WARNING", cwd=tmp_path)
    try:
        wait_until(lambda: len(tm.descendants()) >= 2, timeout=60, what="two slot processes")
        tm.signal_command(signal.SIGTERM)
        assert tm.wait(30) == 143, tm.err()
        left = marked_pids(tm.mark)
    finally:
        tm.kill_leftovers()
    assert left == []
    assert "Traceback" not in tm.err(), tm.err()


def test_a_killed_strom_run_takes_its_taskmanager_and_slot_processes_with_it(tmp_path, endless_job):
    """SIGKILL (the OOM killer, kill -9) runs no handler: the kernel's parent-death signal ends the
    TaskManager, which stops its slot processes."""
    run = _start_running(tmp_path, str(endless_job))
    try:
        run.signal_command(signal.SIGKILL)
        assert run.wait(30) == -signal.SIGKILL
        wait_until(lambda: not marked_pids(run.mark), timeout=30, what="no process of the killed strom run left")
    finally:
        run.kill_leftovers()


SLOW_BOUNDED_JOB = """
import time
from strom.datastream import StreamExecutionEnvironment

def slow(x):
    time.sleep(0.5)
    return x

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection(list(range(400))).map(slow).print()
env.execute("slow batch")
"""


def _java_running(pids: list[int]) -> bool:
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "java":
                    return True
        except OSError:
            continue
    return False


@pytest.mark.parametrize(("sig", "to_group", "code"), [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)])
def test_a_signal_to_a_batch_run_stops_spark_with_one_line(tmp_path, sig, to_group, code):
    """BATCH mode runs Spark (a JVM the Python driver talks to through py4j): the interrupted gateway
    calls are not printed as tracebacks, and the JVM goes with the command."""
    job = tmp_path / "slow_batch.py"
    job.write_text(SLOW_BOUNDED_JOB)
    run = StromProcess("run", "--runtime-mode", "batch", str(job), cwd=tmp_path)
    try:
        wait_until(lambda: _java_running(marked_pids(run.mark)), timeout=120, what="Spark's JVM")
        (run.signal_group if to_group else run.signal_command)(sig)
        assert run.wait(60) == code, run.err()
        wait_until(lambda: not marked_pids(run.mark), timeout=30, what="no process of the batch run left")
    finally:
        run.kill_leftovers()
    assert f"strom: stopped by {signal.Signals(sig).name}; the job was cancelled" in run.err().splitlines()
    assert "Traceback" not in run.err(), run.err()
