"""Contract: window state gives the same results on every backend, with the heap's fast path on and off.

Aligned windows (tumbling, sliding) with an incremental reduce or aggregate run on the heap through
`AlignedWindowAggregator`, which keeps panes in the window state's live dicts (api.InMemoryNamespaces);
other backends, or the heap with the fast path off, take the generic path. Both must fire the same
panes, and a snapshot taken on one path must restore on the other (a heap checkpoint restored into
RocksDB takes the generic path). Expected sums come from a plain-Python pass over the records.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from strom.common.configuration import Configuration
from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.common.time import MAX_WATERMARK, Duration
from strom.datastream import AggregateFunction, StreamExecutionEnvironment
from strom.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.window_fast_path import AlignedWindowAggregator
from strom.runtime.operators.window_operator import WindowOperator
from strom.runtime.state.operator_snapshots import restore_operator, serialize_operator, snapshot_operator
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

from tests.state_contract.conftest import BACKENDS, MAX_P

# (key, timestamp, amount); two phases, the second after a snapshot
PHASE1 = [(k, ts, ts % 7) for ts, k in enumerate(["a", "b", "c", "d", "a", "e", "b", "a", "f", "g"] * 3)]
PHASE2 = [(k, ts + 25, ts % 5) for ts, k in enumerate(["a", "h", "c", "b", "i", "a", "d", "j"] * 3)]
PATHS = [(b, fast) for b in BACKENDS for fast in (True, False)]  # rocksdb-fast: its namespace cache
PATH_IDS = [f"{b}-{'fast' if fast else 'generic'}" for b, fast in PATHS]


class Collect(Output):
    def __init__(self) -> None:
        self.records: list[Any] = []

    def collect(self, values: Any, timestamps: Any) -> None:
        self.records += list(values)

    def emit_watermark(self, timestamp: int) -> None:
        pass


class SumAmounts(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: tuple[str, int, int], acc: int) -> int:
        return acc + value[2]

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


class WindowJob:
    """One window operator at some parallelism on one backend, with the fast path allowed or not."""

    def __init__(
        self,
        stream: Any,
        parallelism: int,
        *,
        backend: str,
        fast: bool,
        monkeypatch: pytest.MonkeyPatch,
        snapshots: list[Any] | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        t = stream._t
        self.parallelism = parallelism
        self.out = Collect()
        self.ops: list[WindowOperator] = []
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(AlignedWindowAggregator, "applies", staticmethod(lambda op: False))
            for i in range(parallelism):
                op = WindowOperator(copy.deepcopy(t.operator), key_selectors=t.key_selectors)
                ctx = OperatorContext(
                    task_name="contract",
                    operator_name=t.name,
                    operator_uid="window-uid",
                    subtask_index=i,
                    parallelism=parallelism,
                    max_parallelism=MAX_P,
                    attempt=0,
                    config=Configuration({"state.backend.type": backend, **(config or {})}),
                    processing_time_service=ProcessingTimeService(ManualClock(0)),
                    metrics=MetricGroup(),
                )
                op.setup(ctx, self.out)
                if snapshots is not None:
                    restore_operator(op, snapshots)
                op.open()
                self.ops.append(op)
        # the parameter means what it says: the fast path runs exactly where it was asked for
        assert all((op.fast is not None) == fast for op in self.ops)

    def send(self, records: list[tuple[str, int, int]]) -> None:
        for i, op in enumerate(self.ops):
            rng = KeyGroupRange.for_subtask(MAX_P, self.parallelism, i)
            mine = [r for r in records if assign_to_key_group(r[0], MAX_P) in rng]
            if mine:
                op.process_batch(mine, [r[1] for r in mine], None)

    def watermark(self, ts: int) -> None:
        for op in self.ops:
            op.process_watermark(ts)

    def snapshot(self) -> list[Any]:
        return [serialize_operator(snapshot_operator(op, checkpoint_id=1)) for op in self.ops]

    def close(self) -> None:
        for op in self.ops:
            op.close()


def _stream(kind: str) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    keyed = env.from_collection(PHASE1).key_by(lambda r: r[0])
    if kind == "tumbling-reduce":
        return keyed.window(TumblingEventTimeWindows.of(10)).reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    return keyed.window(SlidingEventTimeWindows.of(10, 5)).aggregate(SumAmounts())


def _reference(kind: str, records: list[tuple[str, int, int]]) -> list[tuple[str, int]]:
    """Sorted (key, window sum) of every pane, in plain Python."""
    sums: dict[tuple[str, int], int] = {}
    for k, ts, amount in records:
        starts = [ts - ts % 10] if kind == "tumbling-reduce" else [ts - ts % 5, ts - ts % 5 - 5]
        for start in starts:
            if start > ts - 10:
                sums[(k, start)] = sums.get((k, start), 0) + amount
    return sorted((k, s) for (k, _), s in sums.items())


def _fired(kind: str, records: list[Any]) -> list[tuple[str, int]]:
    """(key, sum) of fired panes: a reduce emits its tuple, an aggregate only the sum (key unknown)."""
    if kind == "tumbling-reduce":
        return sorted((r[0], r[2]) for r in records)
    return sorted(records)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["tumbling-reduce", "sliding-aggregate"])
@pytest.mark.parametrize(("backend", "fast"), PATHS, ids=PATH_IDS)
def test_windows_fire_the_reference_panes(kind: str, backend: str, fast: bool, monkeypatch: pytest.MonkeyPatch):
    job = WindowJob(_stream(kind), 2, backend=backend, fast=fast, monkeypatch=monkeypatch)
    try:
        job.send(PHASE1 + PHASE2)
        job.watermark(MAX_WATERMARK)
        expected = _reference(kind, PHASE1 + PHASE2)
        if kind == "tumbling-reduce":
            assert _fired(kind, job.out.records) == expected
        else:
            assert _fired(kind, job.out.records) == sorted(s for _, s in expected)
    finally:
        job.close()


@pytest.mark.parametrize(("before", "after"), [(p, q) for p in PATHS for q in PATHS], ids=[
    f"{a}-to-{b}" for a in PATH_IDS for b in PATH_IDS
])
def test_window_panes_restore_across_backends_and_paths_and_fire_once(
    before: tuple[str, bool], after: tuple[str, bool], monkeypatch: pytest.MonkeyPatch
):
    kind = "tumbling-reduce"
    first = WindowJob(_stream(kind), 3, backend=before[0], fast=before[1], monkeypatch=monkeypatch)
    try:
        first.send(PHASE1)
        first.watermark(9)  # window [0, 10) fires before the snapshot
        snaps = first.snapshot()
    finally:
        first.close()
    second = WindowJob(_stream(kind), 2, backend=after[0], fast=after[1], monkeypatch=monkeypatch, snapshots=snaps)
    try:
        second.send(PHASE2)
        second.watermark(MAX_WATERMARK)
        assert first.out.records, "nothing fired before the snapshot: the test would not cover a fired window"
        fired = _fired(kind, first.out.records + second.out.records)
        assert fired == _reference(kind, PHASE1 + PHASE2)
        # every window cleaned up: nothing left behind, also of panes written to RocksDB before the snapshot
        assert [op.backend.num_entries() for op in second.ops] == [0, 0]
    finally:
        second.close()


def _advance_processing_time(job: WindowJob, now_ms: int) -> None:
    """Move every subtask's manual clock to `now_ms` and run its due processing-time timers."""
    for op in job.ops:
        pts = op.ctx.processing_time_service  # type: ignore[union-attr]
        pts.now.ms = now_ms
        pts.run_due()


@pytest.mark.parametrize(("before", "after"), [(p, q) for p in PATHS for q in PATHS], ids=[
    f"{a}-to-{b}" for a in PATH_IDS for b in PATH_IDS
])
def test_processing_time_panes_restore_across_backends_and_paths_and_fire_once(
    before: tuple[str, bool], after: tuple[str, bool], monkeypatch: pytest.MonkeyPatch
):
    """Panes open at the snapshot fire once after restore, wherever they were taken and restored.

    Processing time comes from each subtask's manual clock: PHASE1 arrives at 3 ms (window [0, 10), which
    stays open over the snapshot), PHASE2 at 12 ms after the restore (window [10, 20)); the clock then
    passes both ends. The fast path keeps its processing-time timers outside any snapshot, so this fails
    if a restore off the fast path does not give the restored panes their timers."""
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = (
        env.from_collection(PHASE1)
        .key_by(lambda r: r[0])
        .window(TumblingProcessingTimeWindows.of(Duration.of_millis(10)))
        .reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    )
    first = WindowJob(stream, 3, backend=before[0], fast=before[1], monkeypatch=monkeypatch)
    try:
        _advance_processing_time(first, 3)
        first.send(PHASE1)
        snaps = first.snapshot()
    finally:
        first.close()
    second = WindowJob(stream, 2, backend=after[0], fast=after[1], monkeypatch=monkeypatch, snapshots=snaps)
    try:
        _advance_processing_time(second, 12)  # window [0, 10) is overdue: it fires now, as in Flink
        second.send(PHASE2)
        _advance_processing_time(second, 25)
        assert not first.out.records, "a pane fired before the snapshot: the open panes would not be covered"
        expected: dict[tuple[str, int], int] = {}
        for phase, window in ((PHASE1, 0), (PHASE2, 10)):
            for k, _, amount in phase:
                expected[(k, window)] = expected.get((k, window), 0) + amount
        assert sorted((r[0], r[2]) for r in second.out.records) == sorted((k, s) for (k, _), s in expected.items())
    finally:
        second.close()


def _evicted(job: WindowJob) -> bool:
    """Some subtask's namespace cache has evicted panes (they are only in RocksDB)."""
    return any(op.fast is not None and op.fast.cache is not None and op.fast.cache.partial for op in job.ops)


@pytest.mark.parametrize("kind", ["tumbling-reduce", "sliding-aggregate"])
def test_rocksdb_fast_path_keeps_its_panes_past_the_cache_bound(kind: str, monkeypatch: pytest.MonkeyPatch):
    """A namespace cache of 5 entries: the first batch already outgrows it (PHASE1 has 7 keys in [0, 10)), so
    the cache evicts panes to RocksDB and reads them back; the operator stays on the fast path, the fired panes
    are the reference's, and a snapshot restores at another parallelism under the same bound."""
    small = {"state.backend.rocksdb.namespace-cache.max-entries": 5}
    first = WindowJob(_stream(kind), 2, backend="rocksdb", fast=True, monkeypatch=monkeypatch, config=small)
    try:
        first.send(PHASE1)
        assert _evicted(first), "the cache did not overflow: nothing was evicted"
        first.watermark(9)
        snaps = first.snapshot()
    finally:
        first.close()
    second = WindowJob(
        _stream(kind), 1, backend="rocksdb", fast=True, monkeypatch=monkeypatch, snapshots=snaps, config=small
    )
    try:
        second.send(PHASE2)
        second.watermark(MAX_WATERMARK)
        fired = _fired(kind, first.out.records + second.out.records)
        expected = _reference(kind, PHASE1 + PHASE2)
        assert fired == (expected if kind == "tumbling-reduce" else sorted(s for _, s in expected))
        assert [op.backend.num_entries() for op in second.ops] == [0]  # cleaned windows left nothing in RocksDB
    finally:
        second.close()


def test_processing_time_panes_fire_once_past_the_rocksdb_cache_bound(monkeypatch: pytest.MonkeyPatch):
    """PHASE1 at 3 ms outgrows a 2-entry cache: panes of [0, 10) are evicted to RocksDB; at 12 ms each fires once,
    the evicted ones read back."""
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = (
        env.from_collection(PHASE1)
        .key_by(lambda r: r[0])
        .window(TumblingProcessingTimeWindows.of(Duration.of_millis(10)))
        .reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    )
    small = {"state.backend.rocksdb.namespace-cache.max-entries": 2}
    job = WindowJob(stream, 2, backend="rocksdb", fast=True, monkeypatch=monkeypatch, config=small)
    try:
        _advance_processing_time(job, 3)
        job.send(PHASE1)
        assert _evicted(job), "the cache did not overflow: nothing was evicted"
        _advance_processing_time(job, 12)
        expected: dict[str, int] = {}
        for k, _, amount in PHASE1:
            expected[k] = expected.get(k, 0) + amount
        assert sorted((r[0], r[2]) for r in job.out.records) == sorted(expected.items())
    finally:
        job.close()
