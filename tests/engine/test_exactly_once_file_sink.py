"""FileSink's two-phase commit: with checkpointing, output is published only with a completed
checkpoint, so a job that fails and restores writes every record exactly once.

The job counts records per key (keyed state) and writes `key count` lines; a map fails once in
the first attempt. Exactly-once output means: for each key, the counts 1..n(key) each appear
exactly once over all published files (a replayed record would repeat a count, a lost one leave a
gap), and nothing else is visible (in-progress and pending files are hidden).
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

from strom.common import Encoder, Types, WatermarkStrategy
from strom.connectors.sink_base import SinkInitContext
from strom.datastream import KeyedProcessFunction, StreamExecutionEnvironment, TwoPhaseCommitSinkFunction
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.local_executor import LocalJob

from tests.engine.failover_testing import FailOnceAt, run_with_restarts

COUNT = 9_000
RATE = 6_000.0
KEYS = 5
FAIL_AT = 4_000


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield f"{ctx.get_current_key()} {n}"


def published_lines(out: Path) -> list[str]:
    return [
        line
        for f in sorted(out.rglob("*"))
        if f.is_file() and not f.name.startswith(".")
        for line in f.read_text().splitlines()
    ]


def expected_lines() -> Counter[str]:
    per_key = Counter(i % KEYS for i in range(COUNT))
    return Counter(f"{k} {n}" for k, total in per_key.items() for n in range(1, total + 1))


def run_counting_job(out: Path, *, checkpoint_ms: int, rolling: RollingPolicy | None = None) -> LocalJob:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    if checkpoint_ms:
        env.enable_checkpointing(checkpoint_ms)
    src = DataGeneratorSource(lambda i: i, COUNT, rate_limit=RATE, type_info=Types.LONG())
    builder = FileSink.for_row_format(str(out), Encoder.simple_string_encoder()).with_bucket_assigner(
        BucketAssigner.base_path_bucket_assigner()
    )
    if rolling is not None:
        builder = builder.with_rolling_policy(rolling)
    (
        env.from_source(src, WatermarkStrategy.no_watermarks(), "gen")
        .map(FailOnceAt(FAIL_AT), output_type=Types.LONG())
        .key_by(lambda v: v % KEYS, key_type=Types.INT())
        .process(CountPerKey(), output_type=Types.STRING())
        .sink_to(builder.build())
    )
    return run_with_restarts(env, "exactly-once file sink")


def test_output_is_exactly_once_after_a_failure_and_restore(tmp_path):
    job = run_counting_job(tmp_path / "out", checkpoint_ms=50)
    assert job.restarts == 1 and job.restored_checkpoint_id is not None
    assert Counter(published_lines(tmp_path / "out")) == expected_lines()


def test_parts_rolled_between_checkpoints_are_committed_with_the_next_checkpoint(tmp_path):
    # tiny parts: many roll by size inside one checkpoint interval and must wait for its completion
    small = RollingPolicy.default_rolling_policy(part_size=64)
    job = run_counting_job(tmp_path / "out", checkpoint_ms=100, rolling=small)
    assert job.restarts == 1
    assert Counter(published_lines(tmp_path / "out")) == expected_lines()
    assert len([f for f in (tmp_path / "out").iterdir() if not f.name.startswith(".")]) > 20


def test_without_checkpointing_the_restarted_job_replays_into_the_output(tmp_path):
    # the contrast that shows the two-phase commit is what makes the output exact: without
    # checkpoints the restart replays from the beginning and the first attempt's rolled parts stay
    small = RollingPolicy.default_rolling_policy(part_size=64)
    run_counting_job(tmp_path / "out", checkpoint_ms=0, rolling=small)
    published = Counter(published_lines(tmp_path / "out"))
    assert published != expected_lines()
    assert all(published[line] >= 1 for line in expected_lines())


class _Clock:
    def now(self) -> int:
        return 0

    def register_timer(self, timestamp, callback) -> None:
        pass


def test_committer_is_idempotent_and_names_a_lost_pending_file(tmp_path):
    sink = FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).build()
    writer = sink.create_writer(SinkInitContext(0, 1, 0, _Clock(), checkpointing=True))
    writer.write("a", None)
    committables = writer.prepare_commit()
    assert [p.name for p in tmp_path.rglob("*") if p.is_file() and not p.name.startswith(".")] == []
    committer = sink.create_committer()
    committer.commit(committables)
    committer.commit(committables)  # a restored job commits its checkpoint's files again
    assert published_lines(tmp_path) == ["a"]
    (final := Path(committables[0][1])).unlink()
    try:
        committer.commit(committables)
    except FileNotFoundError as e:
        assert str(final) in str(e)
    else:
        raise AssertionError("a pending file that vanished must not be committed silently")


class TransactionalFiles(TwoPhaseCommitSinkFunction):
    """A file per transaction: written hidden, renamed to its final name on commit."""

    def __init__(self, directory: str) -> None:
        super().__init__()
        self.directory = directory

    def begin_transaction(self):
        # called from initialize_state, before open(), as in Flink
        name = f"txn-{uuid.uuid4()}"
        return (f"{self.directory}/.{name}.open", f"{self.directory}/{name}")

    def invoke_transaction(self, transaction, value, context):
        with open(transaction[0], "a") as f:
            f.write(f"{value}\n")

    def pre_commit(self, transaction):
        Path(transaction[0]).touch()

    def commit(self, transaction):
        hidden, final = transaction
        if Path(hidden).exists():
            Path(hidden).rename(final)

    def abort(self, transaction):
        Path(transaction[0]).unlink(missing_ok=True)


def test_two_phase_commit_sink_function_is_exactly_once_after_a_failure(tmp_path):
    out = tmp_path / "txns"
    out.mkdir()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(50)
    src = DataGeneratorSource(lambda i: i, COUNT, rate_limit=RATE, type_info=Types.LONG())
    (
        env.from_source(src, WatermarkStrategy.no_watermarks(), "gen")
        .map(FailOnceAt(FAIL_AT), output_type=Types.LONG())
        .key_by(lambda v: v % KEYS, key_type=Types.INT())
        .process(CountPerKey(), output_type=Types.STRING())
        .add_sink(TransactionalFiles(str(out)))
    )
    job = run_with_restarts(env, "two-phase commit sink function")
    assert job.restarts == 1 and job.restored_checkpoint_id is not None
    assert Counter(published_lines(out)) == expected_lines()
