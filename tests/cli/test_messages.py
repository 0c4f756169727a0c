"""Issue 16 items 7, 9, 11, 13: what `strom` prints. An expected failure is one line naming what to fix
(the key, the file and line, the path) with a documented exit code and no traceback; `strom run` says
where its REST endpoint is; every command has its own help and the top-level help lists them all."""

from __future__ import annotations

import json
import re
import signal
import socket
import urllib.request

import pytest

from tests.cli.processes import JOB_SOURCE_ENDLESS, ROOT, StromProcess, run_strom, wait_until

WORD_COUNT = str(ROOT / "examples" / "word_count.py")


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{stderr}"
    assert "Traceback" not in stderr
    return lines[0]


# -- item 7 -----------------------------------------------------------------------------------------------

def test_strom_run_prints_the_rest_port_it_bound_and_the_rest_api_answers_there(tmp_path):
    job = tmp_path / "endless.py"
    job.write_text(JOB_SOURCE_ENDLESS)
    run = StromProcess("run", str(job), cwd=tmp_path)
    try:
        line = run.wait_for_stderr("REST http://")
        port = int(re.search(r"REST http://127\.0\.0\.1:(\d+)", line).group(1))

        def running_jobs():
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/jobs/overview", timeout=10) as r:
                return [j["name"] for j in json.loads(r.read())["jobs"] if j["state"] == "RUNNING"]

        assert wait_until(running_jobs, timeout=60, what="the job RUNNING at the printed port") == ["endless"]
        run.signal_group(signal.SIGINT)
        assert run.wait(30) == 130
    finally:
        run.kill_leftovers()


# -- item 9 -----------------------------------------------------------------------------------------------

@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("key", ["rest.port", "jobmanager.rpc.port"])
def test_a_port_in_use_is_one_line_naming_its_key_in_strom_run(tmp_path, busy_port, key):
    result = run_strom("run", WORD_COUNT, "-D", f"{key}={busy_port}", cwd=tmp_path)
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert line.startswith("strom: error: cannot bind") and key in line and str(busy_port) in line, line
    assert "Address already in use" in line
    assert result.stdout == ""  # the job never ran


@pytest.mark.parametrize("key", ["rest.port", "jobmanager.rpc.port"])
def test_a_port_in_use_ends_strom_jobmanager_with_a_line_naming_its_key(tmp_path, busy_port, key):
    ports = [arg for k in ("rest.port", "jobmanager.rpc.port", "metrics.reporter.prom.port") if k != key
             for arg in ("-D", f"{k}=0")]
    result = run_strom("jobmanager", *ports, "-D", f"{key}={busy_port}", "--log-level", "WARNING", cwd=tmp_path,
                       timeout=60)
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert key in line and str(busy_port) in line and "Address already in use" in line, line


@pytest.mark.parametrize("key", ["rest.port", "jobmanager.rpc.port", "metrics.reporter.prom.port",
                                 "taskmanager.data.port"])
def test_a_port_beyond_65535_is_refused_naming_the_key(tmp_path, key):
    result = run_strom("run", WORD_COUNT, "-D", f"{key}=99999", cwd=tmp_path)
    assert result.returncode == 2
    line = _one_line(result.stderr)
    assert f"invalid value '99999' for '{key}'" in line, line


def test_verbose_shows_the_traceback_of_a_port_in_use(tmp_path, busy_port):
    result = run_strom("run", WORD_COUNT, "-D", f"rest.port={busy_port}", "--verbose", cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" in result.stderr


# -- item 11 ----------------------------------------------------------------------------------------------

def test_a_syntax_error_is_the_same_one_line_in_strom_run_and_strom_submit(tmp_path):
    job = tmp_path / "broken.py"
    job.write_text("from strom.datastream import StreamExecutionEnvironment\n\nenv = (\n")
    expected = "strom: error: broken.py:3: '(' was never closed"  # compile()'s own message, file:line
    outputs = {}
    for args in (("run", "broken.py"), ("run", "--threads", "broken.py"), ("jobmanager", "--job", "broken.py"),
                 ("submit", "broken.py", "--jobmanager", "127.0.0.1:9")):
        result = run_strom(*args, cwd=tmp_path)
        assert result.returncode == 1, (args, result.stderr)
        outputs[args[0] + (" " + args[1] if args[1].startswith("-") else "")] = _one_line(result.stderr)
    assert set(outputs.values()) == {expected}, outputs


@pytest.mark.parametrize("args", [("run",), ("run", "--threads"), ("submit", "--jobmanager", "127.0.0.1:9")])
def test_from_savepoint_with_a_missing_path_is_one_line(tmp_path, args):
    missing = tmp_path / "no-such-savepoint"
    result = run_strom(*args, WORD_COUNT, "--from-savepoint", str(missing), cwd=tmp_path)
    assert result.returncode == 2
    line = _one_line(result.stderr)
    assert str(missing) in line and "execution.savepoint.path" in line and "does not exist" in line, line


def test_from_savepoint_with_a_directory_that_holds_no_savepoint_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_strom("run", WORD_COUNT, "--from-savepoint", str(tmp_path / "empty"), cwd=tmp_path)
    assert result.returncode == 2
    assert "_metadata" in _one_line(result.stderr)


def test_a_missing_job_file_is_one_line_in_every_command_that_runs_one(tmp_path):
    for args in (("run", "nope.py"), ("run", "--threads", "nope.py"), ("jobmanager", "--job", "nope.py")):
        result = run_strom(*args, cwd=tmp_path)
        assert result.returncode == 2, args
        assert _one_line(result.stderr) == "strom: error: job file 'nope.py' does not exist"


def test_an_unreachable_jobmanager_is_one_line_for_every_client_command(tmp_path):
    for args in (("list",), ("info", "abc"), ("cancel", "abc"), ("savepoint", "abc"), ("stop", "abc")):
        result = run_strom(*args, "--jobmanager", "127.0.0.1:9", cwd=tmp_path)
        assert result.returncode == 1, args
        line = _one_line(result.stderr)
        assert "127.0.0.1:9" in line, line


# -- item 13 ----------------------------------------------------------------------------------------------

COMMANDS = ("run", "jobmanager", "taskmanager", "submit", "list", "info", "cancel", "savepoint", "stop")


def test_the_top_level_help_lists_every_command_and_the_exit_codes(tmp_path):
    result = run_strom("--help", cwd=tmp_path)
    assert result.returncode == 0
    listed = {m.group(1) for m in re.finditer(r"^  (\w+)\s{2,}", result.stdout, re.MULTILINE)}
    assert set(COMMANDS) <= listed, listed
    for code in ("0", "1", "2", "130", "143"):
        assert re.search(rf"^\s+{code}\s", result.stdout, re.MULTILINE) or f" {code} " in result.stdout, code


def test_run_jobmanager_and_taskmanager_print_their_own_help(tmp_path):
    helps = {}
    for command in ("run", "jobmanager", "taskmanager"):
        result = run_strom(command, "--help", cwd=tmp_path)
        assert result.returncode == 0 and result.stderr == ""
        assert result.stdout.startswith(f"usage: strom {command}"), result.stdout[:80]
        helps[command] = result.stdout
    assert len(set(helps.values())) == 3
    assert "--threads" in helps["run"] and "--threads" not in helps["jobmanager"]
    assert "--job JOB.py" in helps["jobmanager"] and "SIGTERM" in helps["jobmanager"]
    assert "Exit codes" in helps["taskmanager"]


def test_cancel_of_a_finished_job_fails_without_claiming_to_cancel_it(tmp_path):
    from tests.engine.cluster_testing import SessionCluster

    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        submitted = cluster.cli("submit", WORD_COUNT)
        assert submitted.returncode == 0, submitted.stderr
        job_id = re.search(r"JobID (\w+)", submitted.stdout).group(1)
        cluster.wait_for_state(job_id, ("FINISHED",))
        result = cluster.cli("cancel", job_id)
    finally:
        cluster.close()
    assert result.returncode == 1
    assert result.stdout == ""  # no "Cancelling job ..." for a job that cannot be cancelled
    assert _one_line(result.stderr) == (
        f"strom: error: job {job_id} has already ended (FINISHED); only a running job can be cancelled"
    )


def test_a_metrics_port_in_use_is_one_line_naming_its_key_and_the_job_still_runs(tmp_path, busy_port):
    """As Flink's reporters: a metrics port that cannot be bound costs the metrics, not the job."""
    result = run_strom("run", WORD_COUNT, "-D", f"metrics.reporter.prom.port={busy_port}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    errors = [line for line in result.stderr.splitlines() if "metrics.reporter.prom.port" in line]
    assert len(errors) == 1, result.stderr  # the JobManager's (its TaskManagers pick free ports)
    assert str(busy_port) in errors[0] and "Errno" not in errors[0] and "Traceback" not in result.stderr
    assert "(to," in result.stdout  # the word counts were printed (a Types.TUPLE record prints as PyFlink's)
