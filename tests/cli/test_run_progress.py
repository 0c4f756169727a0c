"""`strom run` of a bounded job that takes a while prints its progress now and then (issue 16): INFO lines
on stderr with the records in/out so far, read from the JobManager's metrics, while stdout stays exactly
the job's output. The CLI runs as a subprocess; the job is slow by construction (each record waits in a
map), so it outlasts several progress intervals however loaded the machine is."""

from __future__ import annotations

import re
from pathlib import Path

from strom.run_progress import Counts, progress_line

from tests.batch.test_batch_cli_output import strom_run

N = 400
SLOW_JOB = f'''\
import time
from strom.datastream import StreamExecutionEnvironment

def slow_square(x):
    time.sleep(0.01)  # the job takes >= 4 s: long enough for progress lines every 0.5 s
    return x * x

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection(list(range({N}))).map(slow_square).print()
env.execute("slow squares")
'''
LINE = re.compile(r"strom\.run INFO Job 'slow squares' running \d+ s: ([\d,]+) records in \([\d,]+/s\), "
                  r"([\d,]+) records out \([\d,]+/s\)$")


def test_a_bounded_job_prints_progress_on_stderr_and_only_its_output_on_stdout(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(SLOW_JOB)
    # the TaskManagers report their metrics every 200 ms here (default 10 s, as Flink's)
    r = strom_run(tmp_path, "--progress-interval", "0.5", "-D", "metrics.fetcher.update-interval=200 ms", "job.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(x * x) for x in range(N)]  # plain Python's squares, in order
    progress = [m for m in (LINE.search(line) for line in r.stderr.splitlines()) if m]
    assert len(progress) >= 2, r.stderr
    records_in = [int(m.group(1).replace(",", "")) for m in progress]
    assert records_in == sorted(records_in) and records_in[-1] <= N, records_in  # so far, never more than N
    assert records_in[-1] > 0, r.stderr


def test_no_progress_lines_with_interval_zero_and_a_bad_interval_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(SLOW_JOB.replace(f"range({N})", "range(3)"))
    r = strom_run(tmp_path, "--progress-interval", "0", "job.py")
    assert r.returncode == 0 and r.stdout.splitlines() == ["0", "1", "4"], r.stderr
    assert "records in" not in r.stderr
    bad = strom_run(tmp_path, "--progress-interval", "soon", "job.py")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == "strom: error: --progress-interval expects seconds (a number >= 0; 0: no progress lines), " \
                         "got 'soon'\n"


def test_progress_line_rates_are_since_the_previous_line() -> None:
    first = Counts(records_in=1000, records_out=500, at_s=110.0)
    assert progress_line("j", 100.0, first, None) == \
        "Job 'j' running 10 s: 1,000 records in (100/s), 500 records out (50/s)"
    second = Counts(records_in=3000, records_out=500, at_s=120.0)
    assert progress_line("j", 100.0, second, first) == \
        "Job 'j' running 20 s: 3,000 records in (200/s), 500 records out (0/s)"
