"""A window co_group on RocksDB, exactly-once through a failure and a restore, against plain Python.

One rate-limited generator feeds both sides: a seeded table says whether element i goes left or right and its
key; left keys and right keys overlap only in part, so some panes have one side only. Timestamps are i (tumbling
windows of 500: 24 windows). Checkpoints every 50 ms on RocksDB (incremental); a map fails once in the first
attempt after some checkpoints completed, so panes are open across the checkpoint: part of their elements
restored from RocksDB, the rest appended after the restore (the list state writes appends behind, and must not
assume a restored list empty). The sink keeps the latest result per (key, window), so a pane fired again after
the restore does not matter; what is checked is that every pane fired once with exactly its elements.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest
from strom.common import Types, WatermarkStrategy
from strom.common.watermark_strategy import TimestampAssigner
from strom.datastream import CoGroupFunction, StreamExecutionEnvironment
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.functions import MapFunction
from strom.datastream.window import TumblingEventTimeWindows

from tests.engine.failover_testing import FailOnceAt, run_with_restarts

COUNT = 12_000
RATE = 8_000.0  # records/s: the job runs ~1.5 s, checkpoints every 50 ms complete meanwhile
FAIL_AT = 6_000
WINDOW = 500
_rng = random.Random(23)
# element i: (side, key); left keys 0..11, right keys 6..17: keys 0-5 are left only, 12-17 right only
SIDES = [("L", _rng.randrange(12)) if _rng.random() < 0.4 else ("R", 6 + _rng.randrange(12)) for _ in range(COUNT)]

_lock = threading.Lock()
LATEST: dict[tuple[int, int], tuple[tuple[int, ...], tuple[int, ...]]] = {}


class ValueAsTimestamp(TimestampAssigner):
    def extract_timestamp(self, value: int, record_timestamp: int) -> int:
        return value


class Sides(CoGroupFunction):
    def co_group(self, first: Any, second: Any) -> Any:
        # sorted: elements from several channels arrive in no defined order
        first, second = sorted(e[1] for e in first), sorted(e[1] for e in second)
        i = (first or second)[0]
        yield (SIDES[i][1], i - i % WINDOW), (tuple(first), tuple(second))


class KeepLatest(MapFunction):
    def map(self, value: Any) -> Any:
        with _lock:
            LATEST[value[0]] = value[1]
        return value


def _reference() -> dict[tuple[int, int], tuple[tuple[int, ...], tuple[int, ...]]]:
    panes: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
    for i, (side, key) in enumerate(SIDES):
        pane = panes.setdefault((key, i - i % WINDOW), ([], []))
        pane[0 if side == "L" else 1].append(i)
    return {k: (tuple(a), tuple(b)) for k, (a, b) in panes.items()}


@pytest.mark.parametrize("incremental", [False, True])
def test_co_group_panes_are_exactly_once_through_a_failure_on_rocksdb(tmp_path: Path, incremental: bool):
    LATEST.clear()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(50)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ValueAsTimestamp())
    src = DataGeneratorSource(lambda i: i, COUNT, rate_limit=RATE, type_info=Types.LONG())
    events = (
        env.from_source(src, strategy, "gen").set_parallelism(1)
        .map(FailOnceAt(FAIL_AT), output_type=Types.LONG())
    )
    left = events.filter(lambda i: SIDES[i][0] == "L").map(lambda i: ("L", i))
    right = events.filter(lambda i: SIDES[i][0] == "R").map(lambda i: ("R", i))
    (
        left.co_group(right).where(lambda e: SIDES[e[1]][1]).equal_to(lambda e: SIDES[e[1]][1])
        .window(TumblingEventTimeWindows.of(WINDOW)).apply(Sides()).uid("co-group")
        .map(KeepLatest())
    )
    job = run_with_restarts(
        env,
        "co_group on rocksdb",
        **{
            "state.backend.type": "rocksdb",
            "state.backend.incremental": incremental,
            "state.checkpoints.dir": tmp_path.as_uri(),
        },
    )
    assert job.restarts == 1
    assert job.restored_checkpoint_id is not None, "the restart did not restore a checkpoint"
    want = _reference()
    assert any(not a for a, _ in want.values()) and any(not b for _, b in want.values())  # one-sided panes exist
    assert LATEST == want
