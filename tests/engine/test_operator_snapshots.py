"""Operator snapshots: operators built as the runtime builds them, snapshotted mid-stream at one
parallelism and restored at another, must finish with the results of an uninterrupted run.

Operators run in a small harness (a fake OperatorContext and a capturing Output, records
routed to subtasks by key group as the key-by partitioner does). Expected results are
computed in plain Python from the whole input.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.common.time import MAX_WATERMARK
from strom.datastream import KeyedProcessFunction, ProcessFunction, StreamExecutionEnvironment
from strom.datastream.functions import CheckpointedFunction
from strom.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from strom.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.basic import ProcessOperator, ReduceOperator
from strom.runtime.operators.window_operator import WindowOperator
from strom.runtime.state.api import StateRestoreError
from strom.runtime.state.operator_snapshots import (
    NoExtraState,
    restore_operator,
    restore_operator_state,
    serialize_operator,
    snapshot_operator,
    snapshot_operator_state,
)
from strom.runtime.state.operator_state import DefaultOperatorStateStore
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

MAX_P = 128


class CapturingOutput(Output):
    def __init__(self) -> None:
        self.records: list = []

    def collect(self, values, timestamps):
        self.records += list(values)

    def emit_watermark(self, timestamp):
        pass


class Job:
    """One operator at some parallelism: subtasks set up, optionally restored, then opened."""

    def __init__(self, stream, cls, parallelism: int, *, snapshots=None, uid: str = "op-uid") -> None:
        t = stream._t
        self.pts = ProcessingTimeService(ManualClock(0))
        self.parallelism = parallelism
        self.ops: list[Any] = []
        self.out = CapturingOutput()
        for i in range(parallelism):
            op = cls(copy.deepcopy(t.operator), key_selectors=t.key_selectors)
            ctx = OperatorContext(
                task_name="test", operator_name=t.name, operator_uid=uid, subtask_index=i, parallelism=parallelism,
                max_parallelism=MAX_P, attempt=0, config=None, processing_time_service=self.pts,
                metrics=MetricGroup(),
            )
            op.setup(ctx, self.out)
            if snapshots is not None:
                restore_operator(op, snapshots)
            op.open()
            self.ops.append(op)

    def send(self, records: list[tuple], key=lambda r: r[0]) -> None:
        """Route each record to the subtask owning its key's group; timestamps are r[1]."""
        for i, op in enumerate(self.ops):
            rng = KeyGroupRange.for_subtask(MAX_P, self.parallelism, i)
            mine = [r for r in records if assign_to_key_group(key(r), MAX_P) in rng]
            if mine:
                op.process_batch(mine, [r[1] for r in mine], None)

    def watermark(self, ts: int) -> None:
        for op in self.ops:
            op.process_watermark(ts)

    def snapshot(self) -> list[Any]:
        return [serialize_operator(snapshot_operator(op, checkpoint_id=1)) for op in self.ops]


def keyed(records):
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection(records).key_by(lambda r: r[0])


# (key, timestamp, amount)
PHASE1 = [(k, ts, ts % 7) for ts, k in enumerate(["a", "b", "c", "d", "a", "e", "b", "a", "f", "g"] * 3)]
PHASE2 = [(k, ts + 40, ts % 5) for ts, k in enumerate(["a", "h", "c", "b", "i", "a", "d", "j"] * 3)]


# -- keyed process function: value state and event-time timers -----------------------------------
class CountWithTimeout(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(value[1] // 10 * 10 + 100)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp, self.count.value())


@pytest.mark.parametrize(("before", "after"), [(2, 3), (2, 1), (1, 4), (3, 2)])
def test_keyed_process_function_state_and_timers_survive_rescaling(before, after):
    stream = keyed(PHASE1).process(CountWithTimeout())
    first = Job(stream, ProcessOperator, before)
    first.send(PHASE1)
    second = Job(stream, ProcessOperator, after, snapshots=first.snapshot())
    second.send(PHASE2)
    second.watermark(MAX_WATERMARK)
    counts = Counter(r[0] for r in PHASE1 + PHASE2)
    timers = {(r[0], r[1] // 10 * 10 + 100) for r in PHASE1 + PHASE2}
    assert first.out.records == []
    assert sorted(second.out.records) == sorted((k, ts, counts[k]) for k, ts in timers)


# -- rolling reduce ----------------------------------------------------------------------------
def test_rolling_reduce_continues_from_the_restored_running_value():
    stream = keyed(PHASE1).reduce(lambda a, b: (a[0], b[1], a[2] + b[2]))
    first = Job(stream, ReduceOperator, 2)
    first.send(PHASE1)
    second = Job(stream, ReduceOperator, 3, snapshots=first.snapshot())
    second.send(PHASE2)
    running: dict[str, int] = {}
    for k, _, amount in PHASE1:
        running[k] = running.get(k, 0) + amount
    expected = []
    for k, ts, amount in PHASE2:
        running[k] = running.get(k, 0) + amount
        expected.append((k, ts, running[k]))
    assert sorted(second.out.records) == sorted(expected)


# -- windows -----------------------------------------------------------------------------------
def session_reference(records, gap):
    """{(key, start, end, sum)} of event-time sessions: [ts, ts + gap) per element, touching ones merged."""
    by_key: dict[str, list[tuple[int, int]]] = {}
    for k, ts, amount in records:
        by_key.setdefault(k, []).append((ts, amount))
    out = set()
    for k, items in by_key.items():
        items.sort()
        start, end, total = items[0][0], items[0][0] + gap, 0
        for ts, amount in items:
            if ts > end:  # touching sessions merge, as in Flink
                out.add((k, start, end, total))
                start, total = ts, 0
            end = max(end, ts + gap)
            total += amount
        out.add((k, start, end, total))
    return out


def window_sum(key, window, elements):
    return [(key, window.start, window.end, sum(e[2] for e in elements))]


def test_session_windows_merge_across_the_restore_and_fire_once():
    """The merging window set, window contents and cleanup timers are keyed state and timers."""
    from strom.datastream import ProcessWindowFunction

    class Sum(ProcessWindowFunction):
        def process(self, key, context, elements):
            return window_sum(key, context.window(), elements)

    stream = keyed(PHASE1).window(EventTimeSessionWindows.with_gap(3)).process(Sum())
    first = Job(stream, WindowOperator, 2)
    first.send(PHASE1)
    first.watermark(12)  # some sessions of the first phase close before the snapshot
    second = Job(stream, WindowOperator, 3, snapshots=first.snapshot())
    second.send(PHASE2)
    second.watermark(MAX_WATERMARK)
    assert first.out.records
    fired = first.out.records + second.out.records
    assert len(fired) == len(set(fired))
    assert set(fired) == session_reference(PHASE1 + PHASE2, 3)


def test_aligned_tumbling_windows_on_the_fast_path_restore_their_panes():
    stream = keyed(PHASE1).window(TumblingEventTimeWindows.of(10)).reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    first = Job(stream, WindowOperator, 3)
    assert all(op.fast is not None for op in first.ops)
    first.send(PHASE1)
    first.watermark(9)
    second = Job(stream, WindowOperator, 2, snapshots=first.snapshot())
    second.send(PHASE2)
    second.watermark(MAX_WATERMARK)
    sums: dict[tuple[str, int], int] = {}
    for k, ts, amount in PHASE1 + PHASE2:
        sums[(k, ts // 10)] = sums.get((k, ts // 10), 0) + amount
    fired = first.out.records + second.out.records
    assert sorted((k, ts // 10, total) for k, ts, total in fired) == sorted((k, w, s) for (k, w), s in sums.items())


def test_a_fired_window_waiting_out_its_lateness_does_not_fire_again_after_restore():
    """Tumbling 10 ms, allowed lateness 100 ms: at watermark 15 window [0, 10) has fired and only
    waits for its cleanup. After a restore the max watermark must not fire it a second time."""
    records = [("a", 1, 1), ("a", 3, 2)]
    stream = keyed(records).window(TumblingEventTimeWindows.of(10)).allowed_lateness(100).reduce(
        lambda a, b: (a[0], a[1], a[2] + b[2])
    )
    first = Job(stream, WindowOperator, 1)
    assert first.ops[0].fast is not None
    first.send(records)
    first.watermark(15)
    assert [r[2] for r in first.out.records] == [3]
    second = Job(stream, WindowOperator, 1, snapshots=first.snapshot())
    second.watermark(MAX_WATERMARK)
    assert second.out.records == []


# -- operator (non-keyed) state ------------------------------------------------------------------
def test_operator_state_is_split_unioned_and_broadcast_at_the_new_parallelism():
    stores = [DefaultOperatorStateStore(), DefaultOperatorStateStore()]
    for i, store in enumerate(stores):
        store.get_list_state(ListStateDescriptor("offsets")).update([(i, n) for n in range(5)])
        store.get_union_list_state(ListStateDescriptor("seen")).add(f"subtask-{i}")
        store.get_broadcast_state(MapStateDescriptor("rules")).put_all({"x": 1, "y": 2})
    snaps = [snapshot_operator_state(s) for s in stores]
    new = [restore_operator_state(snaps, parallelism=3, subtask_index=i) for i in range(3)]
    split = [s.get_list_state(ListStateDescriptor("offsets")).get() for s in new]
    assert sorted(v for part in split for v in part) == sorted((i, n) for i in range(2) for n in range(5))
    assert sorted(len(p) for p in split) == [3, 3, 4]
    for s in new:
        assert sorted(s.get_union_list_state(ListStateDescriptor("seen")).get()) == ["subtask-0", "subtask-1"]
        assert dict(s.get_broadcast_state(MapStateDescriptor("rules")).items()) == {"x": 1, "y": 2}


def test_restored_operator_state_not_registered_again_is_kept_in_the_next_snapshot():
    store = DefaultOperatorStateStore()
    store.get_list_state(ListStateDescriptor("offsets")).update([1, 2])
    restored = restore_operator_state([snapshot_operator_state(store)], parallelism=1, subtask_index=0)
    assert snapshot_operator_state(restored) == {"offsets": ("SPLIT_DISTRIBUTE", [1, 2])}


class CountingProcess(ProcessFunction, CheckpointedFunction):
    """Counts its records in a field and writes the count to split list state at each checkpoint."""

    def initialize_state(self, context):
        self.state = context.get_operator_state_store().get_list_state(ListStateDescriptor("count"))
        self.seen = sum(self.state.get())

    def snapshot_state(self, context):
        self.state.update([self.seen])

    def process_element(self, value, ctx):
        self.seen += 1
        yield self.seen


def test_checkpointed_function_writes_its_state_at_the_snapshot_and_reads_it_at_restore():
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection(PHASE1).process(CountingProcess())
    first = Job(stream, ProcessOperator, 2)
    for i, op in enumerate(first.ops):
        op.process_batch(PHASE1[i::2], None, None)
    second = Job(stream, ProcessOperator, 1, snapshots=first.snapshot())
    assert second.ops[0].function.seen == len(PHASE1)


# -- operator-specific state -------------------------------------------------------------------
class ProcessWithWatermarkMemory(NoExtraState, ProcessOperator):
    """An operator with state of its own: the highest watermark it saw."""

    def snapshot_state(self) -> dict[str, Any]:
        return {"watermark": self.current_watermark}

    def restore_state(self, parts: list[dict[str, Any]]) -> None:
        self.restored_parts = parts
        self.current_watermark = min(p["watermark"] for p in parts)


def test_extra_operator_state_of_all_old_subtasks_reaches_each_new_subtask():
    stream = keyed(PHASE1).process(CountWithTimeout())
    first = Job(stream, ProcessWithWatermarkMemory, 2)
    first.ops[0].process_watermark(5)
    first.ops[1].process_watermark(9)
    second = Job(stream, ProcessWithWatermarkMemory, 3, snapshots=first.snapshot())
    for op in second.ops:
        assert op.restored_parts == [{"watermark": 5}, {"watermark": 9}]
        assert op.current_watermark == 5


def test_extra_state_for_an_operator_that_does_not_restore_it_is_an_error():
    stream = keyed(PHASE1).process(CountWithTimeout())
    first = Job(stream, ProcessWithWatermarkMemory, 1)
    with pytest.raises(StateRestoreError, match=r"'op-uid'.*operator-specific state \['watermark'\].*ProcessOperator"):
        Job(stream, ProcessOperator, 1, snapshots=first.snapshot())


def test_the_snapshot_of_another_operator_uid_is_an_error():
    stream = keyed(PHASE1).process(CountWithTimeout())
    first = Job(stream, ProcessOperator, 1, uid="counter")
    with pytest.raises(StateRestoreError, match=r"operator uid 'op-uid': given the snapshot of operator uid 'counter'"):
        Job(stream, ProcessOperator, 1, snapshots=first.snapshot())


def test_keyed_state_for_an_operator_without_key_by_is_an_error():
    first = Job(keyed(PHASE1).process(CountWithTimeout()), ProcessOperator, 1)
    first.send(PHASE1)
    env = StreamExecutionEnvironment.get_execution_environment()
    unkeyed = env.from_collection(PHASE1).process(CountingProcess())
    with pytest.raises(StateRestoreError, match=r"'op-uid': the snapshot has keyed state but the operator is not"):
        Job(unkeyed, ProcessOperator, 1, snapshots=first.snapshot())
