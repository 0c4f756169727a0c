"""Session windows across snapshots: random out-of-order streams with allowed lateness, snapshotted at a
random point and restored (at another parallelism, on another backend), equal a plain-Python replay of the
whole stream without any snapshot.

The window operator keeps each key's session windows in memory and writes the changed ones to keyed state
when a snapshot is taken (not per record): these tests fail if a snapshot misses them (sessions no longer
merge across the restore), if a key whose sessions all ended still finds its old windows, or if the
written state is not the `(window, state window)` pairs that earlier versions wrote per record.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from strom.common.configuration import Configuration
from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.common.time import MIN_WATERMARK
from strom.datastream import AggregateFunction, OutputTag, ProcessWindowFunction, StreamExecutionEnvironment
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.window import EventTimeSessionWindows
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.window_operator import MERGING_WINDOW_SET, WindowOperator
from strom.runtime.state.operator_snapshots import restore_operator, serialize_operator, snapshot_operator
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

from .window_reference import simulate

MAX_P = 128
GAP = 6
LATE = OutputTag("late")


class Collect(Output):
    def __init__(self) -> None:
        self.fired: list[Any] = []
        self.late: list[Any] = []

    def collect(self, values: Any, timestamps: Any) -> None:
        self.fired += list(values)

    def collect_side(self, tag: Any, values: Any, timestamps: Any) -> None:
        self.late += list(values)

    def emit_watermark(self, timestamp: int) -> None:
        pass


class Values(AggregateFunction):
    """The pane's values as a sorted tuple (immutable: RocksDB keeps it as an object)."""

    def create_accumulator(self) -> tuple[int, ...]:
        return ()

    def add(self, value: tuple[str, int, int], acc: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted((*acc, value[2])))

    def get_result(self, acc: tuple[int, ...]) -> tuple[int, ...]:
        return acc

    def merge(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(a + b))


class Pane(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        for values in elements:
            yield (key, w.start, w.end, values)


def _transformation(lateness: int) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    return (
        env.from_collection([("a", 0, 0)])
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_gap(GAP))
        .allowed_lateness(lateness)
        .side_output_late_data(LATE)
        .aggregate(Values(), Pane())
    )._t


class SessionJob:
    """Session window operators at some parallelism on one backend, fed as a task would feed them."""

    def __init__(self, t: Any, parallelism: int, backend: str, out: Collect, snapshots: list[Any] | None = None):
        self.parallelism = parallelism
        self.ops: list[WindowOperator] = []
        for i in range(parallelism):
            op = WindowOperator(t.operator, key_selectors=t.key_selectors)
            op.setup(
                OperatorContext(
                    task_name="sessions", operator_name=t.name, operator_uid="session-uid", subtask_index=i,
                    parallelism=parallelism, max_parallelism=MAX_P, attempt=0,
                    config=Configuration({"state.backend.type": backend}),
                    processing_time_service=ProcessingTimeService(ManualClock(0)), metrics=MetricGroup(),
                ),
                out,
            )
            if snapshots is not None:
                restore_operator(op, snapshots)
            op.open()
            self.ops.append(op)

    def owner(self, key: str) -> WindowOperator:
        for i, op in enumerate(self.ops):
            if assign_to_key_group(key, MAX_P) in KeyGroupRange.for_subtask(MAX_P, self.parallelism, i):
                return op
        raise AssertionError(key)

    def send(self, event: tuple[str, int, int]) -> None:
        self.owner(event[0]).process_batch([event], [event[1]], None)

    def watermark(self, ts: int) -> None:
        for op in self.ops:
            op.process_watermark(ts)

    def snapshot(self) -> list[Any]:
        return [serialize_operator(snapshot_operator(op, checkpoint_id=1)) for op in self.ops]

    def close(self) -> None:
        for op in self.ops:
            op.close()


def run_with_a_restore(
    events: list[tuple[str, int, int]], *, at: int, bound: int, lateness: int, before: tuple[str, int],
    after: tuple[str, int],
) -> tuple[list[Any], list[Any]]:
    """Feed `events` with the watermark `punctuated_watermarks(bound)` emits; after `at` events snapshot
    the job (backend and parallelism `before`) and go on in a job restored from it (`after`)."""
    t = _transformation(lateness)
    out = Collect()
    job = SessionJob(t, before[1], before[0], out)
    max_seen, wm = None, MIN_WATERMARK
    for n, event in enumerate(events):
        if n == at:
            snapshots = job.snapshot()
            job.close()
            job = SessionJob(t, after[1], after[0], out, snapshots)
            job.watermark(wm)  # the restored job resumes at the watermark it had (nothing is due twice)
        job.send(event)
        max_seen = event[1] if max_seen is None else max(max_seen, event[1])
        if max_seen - bound - 1 > wm:
            wm = max_seen - bound - 1
            job.watermark(wm)
    job.watermark(2**63 - 1)
    job.close()
    return sorted(out.fired), sorted(out.late)


def random_events(rnd: random.Random) -> list[tuple[str, int, int]]:
    """Out of order within a spread, with pauses longer than the gap so sessions end and keys come back."""
    events, base = [], 0
    for _ in range(rnd.randint(5, 45)):
        base += rnd.choice([0, 1, 2, 3, GAP + 2, 3 * GAP])
        events.append((rnd.choice("abcdefg"), max(0, base - rnd.randint(0, 12)), rnd.randint(-50, 50)))
    return events


JOBS = [(("hashmap", 1), ("rocksdb", 2)), (("rocksdb", 2), ("rocksdb", 1)), (("rocksdb", 1), ("hashmap", 3))]


@pytest.mark.parametrize("before,after", JOBS, ids=[f"{b[0]}x{b[1]}-to-{a[0]}x{a[1]}" for b, a in JOBS])
def test_session_windows_restored_mid_stream_equal_a_plain_python_replay(before, after):
    rnd = random.Random(f"{before}{after}")
    merged_across = 0
    for _ in range(40):
        events = random_events(rnd)
        bound, lateness = rnd.randint(0, 10), rnd.choice([0, 3, 9])
        at = rnd.randint(len(events) // 3 + 1, max(len(events) // 3 + 1, 2 * len(events) // 3))
        fired, late = simulate(events, session_gap=GAP, bound=bound, lateness=lateness)
        want = sorted((k, s, e, tuple(sorted(vs))) for k, s, e, vs in fired), sorted(late)
        assert run_with_a_restore(events, at=at, bound=bound, lateness=lateness, before=before, after=after) == want
        # the comparison is not vacuous: some session holds elements from both sides of the snapshot
        before_ts = {(k, ts) for k, ts, _ in events[:at]}
        after_ts = {(k, ts) for k, ts, _ in events[at:]}
        merged_across += any(
            any((k, ts) in before_ts for ts in range(s, e)) and any((k, ts) in after_ts for ts in range(s, e))
            for k, s, e, _ in want[0]
        )
    assert merged_across >= 10


def test_a_key_whose_sessions_ended_finds_none_of_them_when_it_returns_after_a_restore():
    """Worked by hand (gap 6, lateness 9, watermark = max timestamp - 1): the snapshot after ("b", 4) holds
    'a' -> [0, 9); restored, the watermark 20 fires [0, 9) and cleans it up (8 + 9 <= 20), so 'a' has no
    session left. ("a", 8) comes within the lateness (13 + 9 > 20): its own window [8, 14), fired at once,
    not one merged with the ended [0, 9) (which would report [0, 14))."""
    events = [("a", 0, 1), ("a", 3, 2), ("b", 4, 9), ("b", 21, 8), ("a", 8, 3), ("c", 60, 0)]
    want = [("a", 0, 9, (1, 2)), ("a", 8, 14, (3,)), ("b", 4, 10, (9,)), ("b", 21, 27, (8,)), ("c", 60, 66, (0,))]
    fired, late = simulate(events, session_gap=GAP, bound=0, lateness=9)
    assert sorted((k, s, e, tuple(sorted(vs))) for k, s, e, vs in fired) == want and late == []
    for before, after in JOBS:
        assert run_with_a_restore(events, at=3, bound=0, lateness=9, before=before, after=after) == (want, [])


def live_sessions(events: list[tuple[str, int, int]], *, bound: int, lateness: int) -> dict[str, list[tuple]]:
    """Plain Python: each key's sessions still kept after `events` (not yet past max_timestamp + lateness)."""
    sessions: dict[str, list[tuple[int, int]]] = {}
    wm, max_seen = MIN_WATERMARK, None
    for key, ts, _ in events:
        start, end = ts, ts + GAP
        mine = sessions.setdefault(key, [])
        hits = [s for s in mine if s[0] <= end and s[1] >= start]
        if hits or end - 1 + lateness > wm:
            for s in hits:
                mine.remove(s)
            mine.append((min([start] + [s[0] for s in hits]), max([end] + [s[1] for s in hits])))
        max_seen = ts if max_seen is None else max(max_seen, ts)
        wm = max(wm, max_seen - bound - 1)
        for k in sessions:
            sessions[k] = [s for s in sessions[k] if s[1] - 1 + lateness > wm]
    return {k: sorted(v) for k, v in sessions.items() if v}


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_a_snapshot_holds_each_keys_live_sessions_as_window_and_state_window_pairs(backend):
    """The state format of earlier versions (a tuple of (window, state window) pairs per key, in the
    value state 'merging-window-set'), read back through the plain state API of a restored backend."""
    rnd = random.Random(backend)
    for _ in range(30):
        events = random_events(rnd)
        bound, lateness = rnd.randint(0, 10), rnd.choice([0, 3, 9])
        t = _transformation(lateness)
        job = SessionJob(t, 1, backend, Collect())
        max_seen, wm = None, MIN_WATERMARK
        for event in events:
            job.send(event)
            max_seen = event[1] if max_seen is None else max(max_seen, event[1])
            if max_seen - bound - 1 > wm:
                wm = max_seen - bound - 1
                job.watermark(wm)
        snapshots = job.snapshot()
        job.close()
        restored = SessionJob(t, 1, "hashmap", Collect(), snapshots).ops[0]
        state = restored.backend.get_state(ValueStateDescriptor(MERGING_WINDOW_SET))
        got = {}
        for key in "abcdefg":
            restored.backend.current_key = key
            pairs = state.value()
            if pairs is not None:
                assert type(pairs) is tuple and all(type(p) is tuple and len(p) == 2 for p in pairs)
                got[key] = sorted((w.start, w.end) for w, _ in pairs)
        restored.close()
        assert got == live_sessions(events, bound=bound, lateness=lateness)
