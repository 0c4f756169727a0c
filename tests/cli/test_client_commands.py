"""The client commands as a user's shell runs them (issue 16): `strom COMMAND --help` is that command's own
usage with its exit statuses, and a stdout closed by its reader (`strom info JOBID | grep -q x`) ends the
command quietly with 141 (128 + SIGPIPE), as git and coreutils end. The CLI runs as a subprocess against
the real REST server over a fake JobManager view."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.cli.processes import ROOT
from tests.engine.fake_jobmanager_view import FakeJobManagerView, serving
from tests.engine.test_rest_api import JID, _running_job

COMMANDS = ("submit", "list", "info", "cancel", "savepoint", "stop")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "runtime-image"), str(ROOT)]))


def strom(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strom.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=_env(), timeout=120)


@pytest.fixture
def jm() -> Iterator[str]:
    view = FakeJobManagerView()
    view.add_job(_running_job())
    with serving(view) as port:
        yield f"127.0.0.1:{port}"


@pytest.mark.parametrize("command", COMMANDS)
def test_each_client_command_has_its_own_help(command: str) -> None:
    r = strom(command, "--help")
    assert (r.returncode, r.stderr) == (0, "")
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"usage: strom {command} "), r.stdout
    # no other command's usage, and the command's own exit statuses next to the shared table
    others = [c for c in COMMANDS if c != command and f"usage: strom {c} " in r.stdout]
    assert others == [], r.stdout
    assert "Exit status: 0 " in r.stdout and "Exit codes (every command):" in r.stdout
    assert "--jobmanager HOST:PORT" in r.stdout


def test_an_unknown_option_of_a_client_command_is_a_usage_error() -> None:
    r = strom("info", JID, "--no-such-option")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr


def _with_closed_stdout(*args: str) -> subprocess.CompletedProcess[str]:
    """Run with stdout a pipe whose reader is gone, as after `| grep -q x` found its line or `| head -1`."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return strom(*args, stdout=write_end)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("argv", [("info", JID), ("list",)])
def test_a_closed_stdout_ends_a_client_command_quietly_with_141(jm: str, argv: tuple[str, ...]) -> None:
    # the same command with a reader prints (so there is something to write to the closed pipe)
    assert strom(*argv, "--jobmanager", jm).stdout != ""
    r = _with_closed_stdout(*argv, "--jobmanager", jm)
    assert (r.returncode, r.stderr) == (141, "")


def test_a_closed_stdout_ends_help_quietly_with_141() -> None:
    r = _with_closed_stdout("--help")
    assert (r.returncode, r.stderr) == (141, "")
