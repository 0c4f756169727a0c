"""BATCH mode from the command line (issue 16 item 3): what print() sinks write arrives on stdout, in
full and once (`strom run ... > out.txt` captures it), Spark's startup chatter and WARN lines do not
reach the terminal, and a program that sets STREAMING in code under `--runtime-mode batch` runs
STREAMING (Flink's rule: the program's setting wins) with a one-line notice naming both.

Each test starts its own Spark driver through the CLI (a subprocess): 10-60 s on a loaded machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORDS = [("apple", 1), ("pear", 2), ("apple", 3), ("fig", 4), ("pear", 5), ("apple", 6)] * 50

JOB = f'''\
from strom.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
tagged = env.from_collection({WORDS!r}).map(lambda e: (e[0], e[1] * 10))
tagged.print("raw")  # a stage that prints and also feeds the shuffle below
tagged.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print("sum")
env.execute("batch print")
'''


def needs_spark() -> None:
    pytest.importorskip("pyspark", reason="BATCH mode needs pyspark (pip install -e '.[test]')")
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        pytest.skip("BATCH mode needs Java 17+ for Spark")


def strom_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "runtime-image"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "strom.cli", "run", *args], cwd=tmp_path, capture_output=True,
                          text=True, env=env, timeout=600)


def reference_lines() -> list[str]:
    """Plain Python: every raw record once, and each key's final sum (BATCH's rolling reduce)."""
    raw = [f"raw> {(w, v * 10)}" for w, v in WORDS]
    sums: dict[str, int] = defaultdict(int)
    for w, v in WORDS:
        sums[w] += v * 10
    return sorted(raw + [f"sum> {(w, s)}" for w, s in sums.items()])


def without_subtask(line: str) -> str:
    """'raw:2> x' -> 'raw> x': which subtask printed a line is Spark's partitioning, not the result."""
    return re.sub(r"^(\w+):\d+> ", r"\1> ", line)


def test_print_output_is_all_on_stdout_and_spark_stays_quiet(tmp_path):
    needs_spark()
    (tmp_path / "job.py").write_text(JOB)
    r = strom_run(tmp_path, "--runtime-mode", "batch", "-D", "spark.master=local[2]", "-D", "spark.ui.enabled=false",
                  "job.py")
    assert r.returncode == 0, r.stderr
    assert sorted(without_subtask(line) for line in r.stdout.splitlines()) == reference_lines()
    for chatter in (" WARN ", "log4j", "Setting default log level", "setLogLevel", "NativeCodeLoader", "Traceback"):
        assert chatter not in r.stderr, r.stderr
    assert "raw" not in r.stderr and "sum>" not in r.stderr


def test_a_failing_batch_job_prints_its_traceback_once(tmp_path):
    needs_spark()
    (tmp_path / "job.py").write_text(JOB.replace("e[1] * 10", "e[1] // (e[1] - 3)"))
    r = strom_run(tmp_path, "--runtime-mode", "batch", "-D", "spark.master=local[2]", "-D", "spark.ui.enabled=false",
                  "job.py")
    assert r.returncode == 1
    assert r.stderr.count('File "job.py", line 5, in <lambda>') == 1, r.stderr


def test_the_programs_streaming_mode_wins_over_the_command_line_with_a_notice(tmp_path):
    program = JOB.replace("env.set_parallelism(2)\n", "env.set_parallelism(2)\nenv.set_runtime_mode("
                          "RuntimeExecutionMode.STREAMING)\n").replace(
        "import StreamExecutionEnvironment", "import RuntimeExecutionMode, StreamExecutionEnvironment")
    (tmp_path / "job.py").write_text(program)
    r = strom_run(tmp_path, "--runtime-mode", "batch", "job.py")
    assert r.returncode == 0, r.stderr
    notices = [line for line in r.stderr.splitlines() if "execution.runtime-mode" in line]
    assert len(notices) == 1, r.stderr
    assert "STREAMING" in notices[0] and "BATCH" in notices[0] and "overrides" in notices[0]
    # STREAMING: rolling reduce prints every intermediate sum, so the last sum per key is the reference's
    lines = [without_subtask(line) for line in r.stdout.splitlines()]
    assert sorted(line for line in lines if line.startswith("raw>")) == [x for x in reference_lines() if "raw>" in x]
    assert len([line for line in lines if line.startswith("sum>")]) == len(WORDS)
    assert "incubator" not in r.stderr  # Spark never started
