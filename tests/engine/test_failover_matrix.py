"""One failover test matrix over both deployment modes of `strom run` (issue 17).

`strom run --threads` (every subtask a thread of the `strom` process) and `strom run` (the local
mini-cluster: a JobManager and TaskManager slot processes) are two ways to deploy the same job under
the same JobMaster (only its TaskDeployer differs); they must fail over alike. Each case runs the
same job file, with the same restart strategy and checkpointing, in both modes, and checks what a
user sees from outside: the exit status, the failure on stderr, the attempts the job's own functions
saw, where each restarted attempt's sources resumed, and the output of an exactly-once FileSink,
which must equal a plain-Python count.

The job: a rate-limited generator of 0..COUNT-1 (parallelism 2) -> a `Witness` map that notes, per
attempt and subtask, the first value it saw and fails as the case says -> running counts per key
-> FileSink. A witness's first value tells a restored attempt (its source resumed past where the
first attempt started) from one started from scratch (it starts where the first attempt did).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from .cluster_testing import _env

COUNT = 3000
RATE = 1500.0  # records/s over both subtasks: a run takes about 2 s
KEYS = 5
MODES = {"threads": ("--threads",), "minicluster": ()}

JOB = '''\
import json, os
from strom.common import Encoder, Types, WatermarkStrategy
from strom.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from strom.datastream.connectors import DataGeneratorSource
from strom.datastream.connectors.file_system import BucketAssigner, FileSink
from strom.datastream.functions import MapFunction
from strom.datastream.state import ValueStateDescriptor

WITNESS_DIR, OUT, COUNT, RATE, KEYS, FAIL_AT, FAIL_IN = {args}


class Witness(MapFunction):
    """Notes the first value each attempt of each subtask sees; fails at FAIL_AT in the attempts
    FAIL_IN names (None: every attempt)."""

    def open(self, runtime_context):
        self.attempt = runtime_context.get_attempt_number()
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.seen = False

    def map(self, value):
        if not self.seen:
            self.seen = True
            path = os.path.join(WITNESS_DIR, f"{{self.attempt}}-{{self.subtask}}.json")
            with open(path, "w") as f:
                json.dump({{"attempt": self.attempt, "subtask": self.subtask, "first": value}}, f)
        if value == FAIL_AT and (FAIL_IN is None or self.attempt in FAIL_IN):
            raise RuntimeError(f"injected failure at {{value}} in attempt {{self.attempt}}")
        return value


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield f"{{ctx.get_current_key()}} {{n}}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
src = env.from_source(DataGeneratorSource(lambda i: i, COUNT, RATE, Types.LONG()),
                      WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
sink = (FileSink.for_row_format(OUT, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
(src.map(Witness(), Types.LONG()).uid("witness").name("witness")
    .key_by(lambda v: v % KEYS, key_type=Types.LONG()).process(CountPerKey()).uid("counts")
    .sink_to(sink).uid("sink"))
env.execute("failover matrix")
'''


@dataclass(frozen=True)
class Case:
    """One row of the matrix: how the job fails, how it may restart, and what must come out."""

    fail_at: int | None
    fail_in: tuple[int, ...] | None  # the attempts that fail (None: every attempt)
    config: dict[str, str]
    exit_status: int
    attempts: int  # attempts the witnesses saw
    restored: bool | None  # the restarted attempts resumed their sources (None: no restart happens)


CHECKPOINTS = {"execution.checkpointing.interval": "100 ms"}
FIXED_DELAY = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "2",
    "restart-strategy.fixed-delay.delay": "100 ms",
}
CASES = {
    # fails once ~1 s in (checkpoints completed by then): restarts once, restores the latest checkpoint,
    # and the exactly-once sink holds every count once
    "restores_the_latest_checkpoint": Case(2000, (0,), {**CHECKPOINTS, **FIXED_DELAY}, 0, 2, True),
    # fails before any checkpoint could complete (its interval is an hour): restarts from scratch
    "restarts_from_scratch_before_any_checkpoint": Case(
        20, (0,), {"execution.checkpointing.interval": "1 h", **FIXED_DELAY}, 0, 2, False
    ),
    # fails in every attempt: the fixed-delay strategy's 2 restarts, then the job fails
    "fails_once_its_restarts_are_used_up": Case(2000, None, {**CHECKPOINTS, **FIXED_DELAY}, 1, 3, True),
    # no restart strategy (and no checkpointing, which would imply one): the first failure fails the job
    "fails_at_once_without_a_restart_strategy": Case(
        20, (0,), {"restart-strategy.type": "none"}, 1, 1, None
    ),
}


def expected_counts() -> Counter[str]:
    """The plain-Python reference: running counts per key of 0..COUNT-1, each exactly once."""
    per_key = Counter(i % KEYS for i in range(COUNT))
    return Counter(f"{k} {n}" for k, total in per_key.items() for n in range(1, total + 1))


def published(out: Path) -> Counter[str]:
    """What the FileSink committed (in-progress and pending files are hidden, named with a dot)."""
    return Counter(
        line
        for f in (out.rglob("*") if out.exists() else ())
        if f.is_file() and not f.name.startswith(".")
        for line in f.read_text().splitlines()
    )


Firsts = dict[int, dict[int, int]]  # the first value each witness saw, by attempt and subtask


def run_job(tmp_path: Path, mode: str, case: Case) -> tuple[subprocess.CompletedProcess[str], Firsts]:
    """`strom run` the job in `mode`; its result and the witnesses' first values by attempt and subtask."""
    witness_dir, out = tmp_path / "witness", tmp_path / "out"
    witness_dir.mkdir()
    args = (str(witness_dir), str(out), COUNT, RATE, KEYS, case.fail_at, case.fail_in)
    (tmp_path / "job.py").write_text(JOB.format(args=repr(args)))
    config = {**case.config, "state.checkpoints.dir": f"file://{tmp_path / 'chk'}"}
    defines = [arg for key, value in config.items() for arg in ("-D", f"{key}={value}")]
    result = subprocess.run(
        [sys.executable, "-m", "strom.cli", "run", *MODES[mode], *defines, "job.py"],
        cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=240,
    )
    firsts: Firsts = {}
    for f in witness_dir.iterdir():
        seen = json.loads(f.read_text())
        firsts.setdefault(seen["attempt"], {})[seen["subtask"]] = seen["first"]
    return result, firsts


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CASES)
def test_failover_is_the_same_in_every_deployment_mode(tmp_path: Path, name: str, mode: str) -> None:
    case = CASES[name]
    result, firsts = run_job(tmp_path, mode, case)
    assert result.returncode == case.exit_status, (mode, result.stderr)
    assert sorted(firsts) == list(range(case.attempts)), (mode, firsts, result.stderr)
    if case.restored is not None:
        for attempt in range(1, case.attempts):
            # a witness of a restarted attempt that saw anything: its source resumed, or started over
            resumed = {s: firsts[attempt][s] > firsts[0][s] for s in firsts[attempt]}
            assert resumed and all(v is case.restored for v in resumed.values()), (mode, attempt, firsts)
    if case.exit_status == 0:
        assert published(tmp_path / "out") == expected_counts(), mode
        assert result.stderr.count("injected failure") <= case.attempts, result.stderr
    else:
        last = case.attempts - 1
        assert f"injected failure at {case.fail_at} in attempt {last}" in result.stderr, (mode, result.stderr)
        assert "witness" in result.stderr, (mode, result.stderr)  # the failing task is named
