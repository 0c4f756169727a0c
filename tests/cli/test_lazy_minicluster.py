"""`strom run` starts its local mini-cluster (a JobManager and TaskManager processes) only when the program
executes a STREAMING job (issue 16): a program that sets BATCH in code runs on Spark and starts none, and
one that executes two STREAMING jobs starts one cluster for both. The CLI runs as a subprocess; its stdout
is compared with plain Python's result and its stderr says whether a cluster started."""

from __future__ import annotations

from pathlib import Path

from tests.batch.test_batch_cli_output import WORDS, needs_spark, reference_lines, strom_run, without_subtask

BATCH_IN_CODE = f'''\
from strom.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(2)
tagged = env.from_collection({WORDS!r}).map(lambda e: (e[0], e[1] * 10))
tagged.print("raw")
tagged.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print("sum")
env.execute("batch print")
'''

TWO_STREAMING_JOBS = '''\
from strom.datastream import StreamExecutionEnvironment

for n in (3, 4):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(list(range(n))).map(lambda x: x * x).print()
    env.execute(f"squares of {n}")
'''


def test_a_program_that_sets_batch_in_code_starts_no_local_cluster(tmp_path: Path) -> None:
    needs_spark()
    (tmp_path / "job.py").write_text(BATCH_IN_CODE)
    r = strom_run(tmp_path, "-D", "spark.master=local[2]", "-D", "spark.ui.enabled=false", "job.py")
    assert r.returncode == 0, r.stderr
    assert sorted(without_subtask(line) for line in r.stdout.splitlines()) == reference_lines()
    assert "Local cluster started" not in r.stderr, r.stderr


def test_a_streaming_program_starts_one_local_cluster_for_all_its_jobs(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(TWO_STREAMING_JOBS)
    r = strom_run(tmp_path, "job.py")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("Local cluster started: REST http://127.0.0.1:") == 1, r.stderr
    expected = [str(x * x) for n in (3, 4) for x in range(n)]
    assert sorted(r.stdout.splitlines(), key=int) == sorted(expected, key=int)


def test_a_program_that_executes_nothing_starts_no_local_cluster(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text("print('nothing to run')\n")
    r = strom_run(tmp_path, "job.py")
    assert (r.returncode, r.stdout, r.stderr) == (0, "nothing to run\n", "")
