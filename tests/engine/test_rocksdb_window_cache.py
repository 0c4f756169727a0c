"""Keyed windows on RocksDB past the namespace cache's bound, against plain Python.

The window fast path keeps its panes in a namespace cache in front of RocksDB; with a bound of 50 entries and
200 keys over several overlapping windows, the cache evicts on nearly every batch and reads evicted panes back
(before a batch, and when a window fires). Random keyed input with out-of-order timestamps, a bounded
out-of-orderness watermark and allowed lateness: windows fire, late elements re-fire their pane, later ones are
dropped. The reference is a plain-Python run of the default trigger's rules (below). Checked: the emitted panes;
every snapshot (full, and incremental after an earlier one) holds exactly the reference's open panes; a restore at
another parallelism mid-way gives the same final output.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
from strom.common.configuration import Configuration
from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.common.time import MAX_WATERMARK
from strom.datastream import AggregateFunction, StreamExecutionEnvironment
from strom.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows
from strom.runtime.checkpoint.layout import resolve_relative
from strom.runtime.checkpoint.storage import checkpoint_storage_for
from strom.runtime.checkpoint.task_snapshots import SharedFileUploader
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.window_operator import WindowOperator
from strom.runtime.state.backends import create_keyed_state_backend
from strom.runtime.state.operator_snapshots import restore_operator, serialize_operator, snapshot_operator
from strom.runtime.state.restore import restore_keyed
from strom.runtime.state.rocksdb.snapshots import IncrementalKeyedStateHandle, to_canonical
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

MAX_P = 128
JOB = "0123456789abcdef0123456789abcdef"
LATENESS = 10
OUT_OF_ORDER = 20
KEYS = [f"k{i}" for i in range(200)]
# kind -> (size, slide)
SHAPES = {"tumbling-reduce": (25, 25), "sliding-aggregate": (40, 10)}

Record = tuple[str, int, int]  # (key, timestamp, amount)


def reduce_fn(a: Record, b: Record) -> Record:
    return (a[0], min(a[1], b[1]), a[2] + b[2])


class KeyedSum(AggregateFunction):
    """A mutable accumulator changed in place: a write-through must write it again after every change."""

    def create_accumulator(self) -> list[Any]:
        return [None, 0]

    def add(self, value: Record, acc: list[Any]) -> list[Any]:
        acc[0] = value[0]
        acc[1] += value[2]
        return acc

    def get_result(self, acc: list[Any]) -> tuple[Any, int]:
        return (acc[0], acc[1])

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        return [a[0] or b[0], a[1] + b[1]]


def _stream(kind: str) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    keyed = env.from_collection([("k0", 0, 0)]).key_by(lambda r: r[0])
    size, slide = SHAPES[kind]
    if kind == "tumbling-reduce":
        return keyed.window(TumblingEventTimeWindows.of(size)).allowed_lateness(LATENESS).reduce(reduce_fn)
    return keyed.window(SlidingEventTimeWindows.of(size, slide)).allowed_lateness(LATENESS).aggregate(KeyedSum())


def _result(kind: str, acc: Any) -> Any:
    """What the operator emits for an accumulator (the aggregate's result, or the reduce's value)."""
    return (acc[0], acc[1]) if kind == "sliding-aggregate" else acc


def random_batches(seed: int, n_batches: int) -> list[tuple[list[Record], int]]:
    """Batches of records and the watermark after each (bounded out-of-orderness, never backwards)."""
    rnd = random.Random(seed)
    t, wm, out = 0, -(2**63), []
    for _ in range(n_batches):
        batch = []
        for _ in range(rnd.randint(1, 60)):
            t += rnd.random() < 0.1
            # mostly within the out-of-orderness bound; some older (late within the lateness, or dropped)
            back = rnd.randint(0, OUT_OF_ORDER) if rnd.random() < 0.9 else rnd.randint(0, 100)
            batch.append((rnd.choice(KEYS), max(0, t - back), rnd.randint(1, 9)))
        wm = max(wm, t - OUT_OF_ORDER - 1)
        out.append((batch, wm))
    return out


class Reference:
    """The default event-time trigger with allowed lateness, in plain Python: panes[start][key] = accumulator."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.size, self.slide = SHAPES[kind]
        self.panes: dict[int, dict[str, Any]] = {}
        self.fired: set[int] = set()  # windows fired and not yet cleaned up
        self.firings = 0
        self.wm = -(2**63)
        self.out: list[tuple[Any, int]] = []
        self.dropped = 0
        self.refires = 0  # late elements within the allowed lateness (each fires its pane again)

    def _combine(self, acc: Any, r: Record) -> Any:
        if self.kind == "tumbling-reduce":
            return r if acc is None else reduce_fn(acc, r)
        return [r[0], (0 if acc is None else acc[1]) + r[2]]

    def add(self, records: list[Record]) -> None:
        size, slide = self.size, self.slide
        for r in records:
            k, ts, _ = r
            taken = False
            start = ts - ts % slide
            while start > ts - size:
                end = start + size
                if end - 1 + LATENESS > self.wm:  # not past its cleanup time
                    taken = True
                    pane = self.panes.setdefault(start, {})
                    pane[k] = self._combine(pane.get(k), r)
                    if end - 1 <= self.wm:  # past its end: the element fires the pane at once
                        self.refires += 1
                        self.out.append((_result(self.kind, pane[k]), end - 1))
                start -= slide
            if not taken:
                self.dropped += 1

    def advance(self, wm: int) -> None:
        if wm <= self.wm:
            return
        self.wm = wm
        for start in sorted(self.panes):
            end = start + self.size
            if end - 1 <= wm and start not in self.fired:
                self.fired.add(start)
                self.firings += 1
                self.out.extend((_result(self.kind, acc), end - 1) for acc in self.panes[start].values())
            if end - 1 + LATENESS <= wm:
                del self.panes[start]
                self.fired.discard(start)

    def open_panes(self) -> dict[tuple[str, int], Any]:
        return {(k, start): acc for start, pane in self.panes.items() for k, acc in pane.items()}


class Collect(Output):
    def __init__(self) -> None:
        self.records: list[tuple[Any, int]] = []

    def collect(self, values: Any, timestamps: Any) -> None:
        self.records += [(copy.deepcopy(v), t) for v, t in zip(values, timestamps, strict=True)]

    def emit_watermark(self, timestamp: int) -> None:
        pass


class Job:
    """Window operator subtasks on RocksDB with a tiny namespace cache."""

    def __init__(self, kind: str, parallelism: int, conf: dict[str, Any], snapshots: list[Any] | None = None) -> None:
        t = _stream(kind)._t
        self.parallelism = parallelism
        self.out = Collect()
        self.ops: list[WindowOperator] = []
        self.evictions = 0
        for i in range(parallelism):
            op = WindowOperator(copy.deepcopy(t.operator), key_selectors=t.key_selectors)
            op.setup(
                OperatorContext(
                    task_name="window", operator_name=t.name, operator_uid="window-uid", subtask_index=i,
                    parallelism=parallelism, max_parallelism=MAX_P, attempt=0,
                    config=Configuration({"state.backend.type": "rocksdb", **conf}),
                    processing_time_service=ProcessingTimeService(ManualClock(0)), metrics=MetricGroup(),
                ),
                self.out,
            )
            if snapshots is not None:
                restore_operator(op, snapshots)
            op.open()
            assert op.fast is not None and op.fast.cache is not None, "not on the fast path with a namespace cache"
            self.ops.append(op)

    def send(self, records: list[Record], wm: int) -> None:
        for i, op in enumerate(self.ops):
            rng = KeyGroupRange.for_subtask(MAX_P, self.parallelism, i)
            mine = [r for r in records if assign_to_key_group(r[0], MAX_P) in rng]
            if mine:
                op.process_batch(mine, [r[1] for r in mine], None)
            assert op.fast is not None, "the fast path was given up"
            self.evictions += bool(op.fast.cache.partial)  # type: ignore[union-attr]
            op.process_watermark(wm)

    def close(self) -> None:
        for op in self.ops:
            op.close()


class Checkpoints:
    """Snapshots of every subtask, serialized as the checkpoint writer does (incremental: SST files uploaded)."""

    def __init__(self, tmp_path: Path) -> None:
        self.storage = checkpoint_storage_for(tmp_path.as_uri())
        self.uploader = SharedFileUploader(self.storage, JOB)

    def take(self, job: Job, checkpoint_id: int) -> list[Any]:
        snaps = [serialize_operator(snapshot_operator(op, checkpoint_id=checkpoint_id), self.uploader)
                 for op in job.ops]
        directory = f"{JOB}/chk-{checkpoint_id}"
        for s in snaps:
            if isinstance(s.keyed, IncrementalKeyedStateHandle):
                object.__setattr__(s, "keyed", s.keyed.bound(
                    lambda rel: self.storage.read_bytes(resolve_relative(directory, rel))))
        return snaps


def snapshot_panes(snaps: list[Any]) -> dict[tuple[str, int], Any]:
    """(key, window start) -> accumulator of every pane the snapshots hold, read back through a heap backend."""
    keyed = [to_canonical(s.keyed) if isinstance(s.keyed, IncrementalKeyedStateHandle) else s.keyed for s in snaps]
    heap = create_keyed_state_backend(
        Configuration({"state.backend.type": "hashmap"}), max_parallelism=MAX_P,
        key_group_range=KeyGroupRange(0, MAX_P - 1), clock=ManualClock(0), operator_name="read",
        operator_uid="window-uid",
    )
    restore_keyed(heap, None, keyed)
    out = {}
    for states in heap.entries_by_key_group().values():
        for key, window, acc in states.get("window-contents", ()):
            out[(key, window.start)] = acc
    return out


def _sorted(records: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
    return sorted(records, key=repr)


@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("incremental", [False, True], ids=["full", "incremental"])
def test_windows_past_a_tiny_cache_bound_equal_plain_python_over_snapshots_and_a_rescale(
    kind: str, incremental: bool, tmp_path: Path
):
    conf = {"state.backend.rocksdb.namespace-cache.max-entries": 50, "state.backend.incremental": incremental}
    batches = random_batches(seed=23 if kind == "tumbling-reduce" else 29, n_batches=120)
    ref = Reference(kind)
    checkpoints = Checkpoints(tmp_path)
    first = Job(kind, 3, conf)
    try:
        for n, (records, wm) in enumerate(batches[:60]):
            first.send(records, wm)
            ref.add(records)
            ref.advance(wm)
            if n in (29, 59):  # two checkpoints: the second incremental over the first's files
                snaps = checkpoints.take(first, checkpoint_id=n)
                assert snapshot_panes(snaps) == ref.open_panes(), f"checkpoint after batch {n}"
        assert first.evictions > 30, "the cache hardly evicted: the eviction path is not covered"
        covered = ref.firings > 3 and ref.refires and ref.dropped and len(ref.open_panes()) > 100
        assert covered, "the input does not cover the cases: firing, late firing, dropping, many open panes"
        before = list(first.out.records)
    finally:
        first.close()
    second = Job(kind, 2, conf, snapshots=snaps)
    try:
        # the restored panes outgrow the bound: each cache starts with its windows only, every pane in RocksDB
        assert all(op.fast.cache.partial for op in second.ops)  # type: ignore[union-attr]
        second.send([], batches[59][1])  # the watermark again, as a restarted source's first one
        for records, wm in batches[60:]:
            second.send(records, wm)
            ref.add(records)
            ref.advance(wm)
        second.send([], MAX_WATERMARK)
        ref.advance(MAX_WATERMARK)
        assert _sorted(before + second.out.records) == _sorted(ref.out)
        assert [op.backend.num_entries() for op in second.ops] == [0, 0], "cleaned-up windows left entries"
    finally:
        second.close()


@pytest.mark.parametrize("kind", list(SHAPES))
def test_windows_past_a_tiny_cache_bound_emit_what_plain_python_does(kind: str):
    """The same input in one run, at parallelism 1: every fired pane, every re-fired late one."""
    ref = Reference(kind)
    job = Job(kind, 1, {"state.backend.rocksdb.namespace-cache.max-entries": 50})
    try:
        for records, wm in random_batches(seed=5, n_batches=150):
            job.send(records, wm)
            ref.add(records)
            ref.advance(wm)
        job.send([], MAX_WATERMARK)
        ref.advance(MAX_WATERMARK)
        assert job.evictions > 50
        assert _sorted(job.out.records) == _sorted(ref.out)
    finally:
        job.close()
