"""Benchmarks say where they are (issue 16): a line on stderr when each step starts and when it ends with
its seconds, while stdout keeps only the figures. `benchmarks.micro` runs as a subprocess with few events."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest

from benchmarks.progress import step
from tests.cli.processes import ROOT

STARTED = re.compile(r"^\[\d\d:\d\d:\d\d\] (.+) \.\.\.$")
ENDED = re.compile(r"^\[\d\d:\d\d:\d\d\] (.+): (done|FAILED) in \d+\.\d s$")


def test_a_step_says_when_it_starts_and_how_it_ended() -> None:
    out = io.StringIO()
    with step("fine", out):
        pass
    with pytest.raises(ZeroDivisionError), step("broken", out):
        1 / 0  # noqa: B018
    lines = out.getvalue().splitlines()
    assert [STARTED.match(line).group(1) for line in lines[0::2]] == ["fine", "broken"]
    assert [ENDED.match(line).groups() for line in lines[1::2]] == [("fine", "done"), ("broken", "FAILED")]


def test_micro_benchmark_prints_each_step_on_stderr_and_figures_on_stdout() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "runtime-image"), str(ROOT)]))
    r = subprocess.run([sys.executable, "-m", "benchmarks.micro", "--events", "2000", "--repeat", "1"], cwd=ROOT,
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    started = [m.group(1) for m in map(STARTED.match, r.stderr.splitlines()) if m]
    ended = [m.groups() for m in map(ENDED.match, r.stderr.splitlines()) if m]
    assert started == ["(a) map -> filter: strom, best of 1", "(b) key_by -> tumbling 1s -> sum: strom, best of 1"]
    assert ended == [(s, "done") for s in started]
    assert "..." not in r.stdout and "events=2000" in r.stdout.splitlines()[0]
