"""`python -m benchmarks.nexmark` without numpy (the [nexmark] extra) says so in one line (issue 16 item 10)."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# runs the benchmark as `python -m` would, in an interpreter where `import numpy` fails
WITHOUT_NUMPY = (
    "import sys, runpy; sys.modules['numpy'] = None; sys.argv = ['benchmarks.nexmark', '--help']; "
    "runpy.run_module('benchmarks.nexmark', run_name='__main__', alter_sys=True)"
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_without_the_extra_one_line_names_the_install_command():
    r = run("-c", WITHOUT_NUMPY)
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr.splitlines() == [
        "python -m benchmarks.nexmark needs numpy, which the [nexmark] extra installs: pip install -e '.[nexmark]'"
    ]


def test_with_the_extra_the_benchmark_starts():
    r = run("-m", "benchmarks.nexmark", "--help")
    assert r.returncode == 0, r.stderr
    assert "--query" in r.stdout and "Traceback" not in r.stderr
