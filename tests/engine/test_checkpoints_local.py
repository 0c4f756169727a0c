"""Checkpoints in the embedded executor: barriers, snapshots, completion, and failover with state.

Jobs read a rate-limited deterministic generator, so that checkpoints (every 50 ms) complete
while they run; a map fails once in attempt 0. The sinks keep only the latest value per key,
so outputs replayed after the restore do not matter: what is checked is the final state, which
must equal a plain-Python reference exactly (state restored + source resumed at its position).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from pathlib import Path

import pytest
from strom.common import Types, WatermarkStrategy
from strom.common.watermark_strategy import TimestampAssigner
from strom.datastream import CheckpointingMode, KeyedProcessFunction, StreamExecutionEnvironment
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.functions import CheckpointListener, MapFunction, ReduceFunction
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.window import TumblingEventTimeWindows
from strom.runtime.checkpoint.layout import METADATA_FILE
from strom.runtime.local_executor import JobExecutionError, LocalJob

from tests.engine.failover_testing import FailOnceAt, run_with_restarts

COUNT = 12_000
RATE = 8_000.0  # records/s over all subtasks: the job runs ~1.5 s
KEYS = 7
FAIL_AT = 5_000

_lock = threading.Lock()
LATEST: dict[object, object] = {}
NOTIFIED: dict[tuple[int, int], list[int]] = defaultdict(list)


class SumPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.LONG()))

    def process_element(self, value, ctx):
        total = (self.sum.value() or 0) + value
        self.sum.update(total)
        yield ctx.get_current_key(), total


class KeepLatest(MapFunction):
    """The sink side: the latest value per key wins, so replayed outputs do not matter."""

    def map(self, value):
        key, total = value[:-1], value[-1]
        with _lock:
            LATEST[key] = total
        return value


class RecordNotifications(MapFunction, CheckpointListener):
    def open(self, runtime_context):
        self.who = (runtime_context.get_attempt_number(), runtime_context.get_index_of_this_subtask())

    def map(self, value):
        return value

    def notify_checkpoint_complete(self, checkpoint_id):
        NOTIFIED[self.who].append(checkpoint_id)


class Add(ReduceFunction):
    def reduce(self, a, b):
        return a[0], a[1], a[2] + b[2]


class ValueAsTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value


def _env(mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE) -> StreamExecutionEnvironment:
    LATEST.clear()
    NOTIFIED.clear()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(50, mode)
    return env


def _source(env: StreamExecutionEnvironment, strategy=None):
    src = DataGeneratorSource(lambda i: i, COUNT, rate_limit=RATE, type_info=Types.LONG())
    return env.from_source(src, strategy or WatermarkStrategy.no_watermarks(), "gen")


def _keyed_sums_job(env: StreamExecutionEnvironment):
    return (
        _source(env)
        .map(FailOnceAt(FAIL_AT), output_type=Types.LONG())
        .key_by(lambda v: v % KEYS, key_type=Types.INT())
        .process(SumPerKey())
        .map(KeepLatest())
    )


def test_keyed_state_is_exactly_once_after_a_failure_and_restore():
    env = _env()
    _keyed_sums_job(env)
    job = run_with_restarts(env, "keyed sums")
    assert job.restarts == 1
    assert job.restored_checkpoint_id is not None, "the restart did not restore a checkpoint"
    expected = {(k,): sum(i for i in range(COUNT) if i % KEYS == k) for k in range(KEYS)}
    assert LATEST == expected


def test_window_results_are_exactly_once_after_a_failure_and_restore():
    env = _env()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ValueAsTimestamp())
    (
        _source(env, strategy)
        .map(FailOnceAt(FAIL_AT), output_type=Types.LONG())
        .map(lambda v: (v % KEYS, v // 1000 * 1000, v))
        .key_by(lambda t: t[0])
        .window(TumblingEventTimeWindows.of(1000))
        .reduce(Add())
        .map(KeepLatest())
    )
    job = run_with_restarts(env, "windowed sums")
    assert job.restarts == 1
    assert job.restored_checkpoint_id is not None
    expected: dict[tuple[int, int], int] = defaultdict(int)
    for i in range(COUNT):
        expected[(i % KEYS, i // 1000 * 1000)] += i
    assert LATEST == dict(expected)


def test_checkpoint_listeners_hear_of_completed_checkpoints_in_increasing_order():
    env = _env()
    _source(env).map(RecordNotifications())
    job = run_with_restarts(env, "listeners")
    assert job.checkpoint_coordinator is not None
    completed = job.checkpoint_coordinator.completed_ids
    assert len(completed) >= 2
    assert NOTIFIED, "no function was notified"
    for ids in NOTIFIED.values():
        assert ids == sorted(set(ids))
        assert set(ids) <= set(completed)


def test_at_least_once_mode_completes_checkpoints_and_keeps_state_consistent():
    env = _env(CheckpointingMode.AT_LEAST_ONCE)
    _keyed_sums_job(env)
    job = run_with_restarts(env, "at least once")
    assert job.checkpoint_coordinator is not None
    assert len(job.checkpoint_coordinator.completed_ids) >= 1
    assert job.restored_checkpoint_id is not None
    # unaligned: records past a barrier on the faster channel may be in the snapshot and replayed too
    expected = {(k,): sum(i for i in range(COUNT) if i % KEYS == k) for k in range(KEYS)}
    assert all(LATEST[k] >= v for k, v in expected.items())


def test_completed_checkpoint_has_metadata_and_older_ones_are_subsumed(tmp_path: Path):
    env = _env()
    _source(env).map(lambda v: v)
    job = run_with_restarts(
        env,
        "retained",
        **{
            "state.checkpoints.dir": tmp_path.as_uri(),
            "state.checkpoints.num-retained": 1,
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        },
    )
    assert job.checkpoint_coordinator is not None
    completed = job.checkpoint_coordinator.completed_ids
    assert len(completed) >= 2
    job_dir = tmp_path / job.job_id
    chk_dirs = sorted(p.name for p in job_dir.iterdir() if p.name.startswith("chk-"))
    assert chk_dirs == [f"chk-{completed[-1]}"]
    assert (job_dir / chk_dirs[0] / METADATA_FILE).is_file()


# -- the pieces: barrier alignment and the barrier's wire encoding -----------------------------------
def _gate_with(n: int):
    from strom.runtime.network.channels import InputGate

    gate = InputGate()
    return gate, [gate.add_channel(1, 4) for _ in range(n)]


def test_exactly_once_alignment_blocks_a_channel_after_its_barrier_until_all_barriers_arrived():
    from strom.runtime.network.events import CheckpointBarrier
    from strom.runtime.tasks.barrier_alignment import BarrierAligner

    gate, (a, b) = _gate_with(2)
    aligner = BarrierAligner(gate, exactly_once=True)
    barrier = CheckpointBarrier(1, 0)
    a.put(barrier)
    a.put(([1], None, None))
    b.put(([2], None, None))
    ch, item = gate.poll(0)
    assert item == barrier and aligner.on_barrier(ch, item) is None
    assert gate.poll(0)[1] == ([2], None, None)  # b still flows; a's record waits behind the barrier
    assert gate.poll(0) is None
    b.put(barrier)
    ch, item = gate.poll(0)
    assert aligner.on_barrier(ch, item) == barrier
    assert gate.poll(0)[1] == ([1], None, None)


def test_a_finished_channel_does_not_hold_up_the_alignment():
    from strom.runtime.network.events import CheckpointBarrier
    from strom.runtime.tasks.barrier_alignment import BarrierAligner

    gate, (a, b) = _gate_with(2)
    aligner = BarrierAligner(gate, exactly_once=True)
    assert aligner.on_barrier(a, CheckpointBarrier(3, 0)) is None
    assert aligner.on_channel_finished(b) == CheckpointBarrier(3, 0)
    assert not gate.blocked


def test_checkpoint_barrier_crosses_the_wire_unchanged():
    from strom.runtime.network.events import CheckpointBarrier
    from strom.runtime.network.serialization import deserialize_item, serialize_item

    barrier = CheckpointBarrier(42, 1_700_000_000_000)
    assert deserialize_item(serialize_item(barrier)) == barrier


class _FailingWrites:
    """A checkpoint storage whose writes fail: every checkpoint is declined by the tasks."""

    def __init__(self, inner):
        self._inner = inner

    def write_bytes(self, path, data):
        raise OSError(f"injected: cannot write {path}")

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_failed_checkpoints_beyond_the_tolerable_number_fail_the_job_over(tmp_path, monkeypatch):
    """execution.checkpointing.tolerable-failed-checkpoints: the job keeps running through that many
    consecutive failed checkpoints; one more fails it, and its restart strategy decides what follows."""
    import strom.runtime.thread_deployment as thread_deployment  # where the tasks' snapshot storage is made

    real = thread_deployment.checkpoint_storage_for
    monkeypatch.setattr(
        thread_deployment, "checkpoint_storage_for", lambda uri, config=None: _FailingWrites(real(uri, config))
    )
    env = _env()
    _source(env).key_by(lambda v: v % KEYS, key_type=Types.INT()).process(SumPerKey()).map(KeepLatest())
    graph = env.get_stream_graph("failing checkpoints", clear_transformations=True)
    graph.config.set("execution.checkpointing.tolerable-failed-checkpoints", 2)
    graph.config.set("restart-strategy.type", "none")
    job = LocalJob(graph)
    job.start()
    with pytest.raises(JobExecutionError, match="CheckpointFailuresExceeded") as failure:
        job.wait(120)
    assert "tolerable-failed-checkpoints (2)" in str(failure.value)
    coordinator = job.checkpoint_coordinator
    assert len(coordinator.aborted) >= 3 and not coordinator.completed_ids
    assert all("writing the state failed" in reason for _, reason in coordinator.aborted[:3])
