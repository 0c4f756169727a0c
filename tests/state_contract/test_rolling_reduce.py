"""Contract: the keyed rolling reduce gives the same running values on every backend, cached or not.

On the heap the per-record loop writes the state's live dict; on RocksDB it writes a bounded namespace
cache in front of RocksDB (the changed keys written through at every snapshot), which evicts its oldest
entries past its bound and reads them back from RocksDB when a batch needs them. Expected running values
come from a plain-Python pass.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from strom.common.configuration import Configuration
from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.datastream import StreamExecutionEnvironment
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.basic import ReduceOperator
from strom.runtime.state.operator_snapshots import restore_operator, serialize_operator, snapshot_operator
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

from tests.state_contract.conftest import BACKENDS, MAX_P

# (key, amount); two phases, the second after a snapshot
PHASE1 = [(f"k{i % 7}", i) for i in range(40)]
PHASE2 = [(f"k{i % 11}", 100 + i) for i in range(40)]
CACHES = {"default": {}, "tiny": {"state.backend.rocksdb.namespace-cache.max-entries": 2}}


class Collect(Output):
    def __init__(self) -> None:
        self.records: list[Any] = []

    def collect(self, values: Any, timestamps: Any) -> None:
        self.records += list(values)

    def emit_watermark(self, timestamp: int) -> None:
        pass


class ReduceJob:
    def __init__(self, parallelism: int, backend: str, config: dict[str, Any], snapshots: list[Any] | None = None):
        env = StreamExecutionEnvironment.get_execution_environment()
        t = env.from_collection(PHASE1).key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))._t
        self.parallelism = parallelism
        self.out = Collect()
        self.ops: list[ReduceOperator] = []
        for i in range(parallelism):
            op = ReduceOperator(copy.deepcopy(t.operator), key_selectors=t.key_selectors)
            op.setup(
                OperatorContext(
                    task_name="contract",
                    operator_name="reduce",
                    operator_uid="reduce-uid",
                    subtask_index=i,
                    parallelism=parallelism,
                    max_parallelism=MAX_P,
                    attempt=0,
                    config=Configuration({"state.backend.type": backend, **config}),
                    processing_time_service=ProcessingTimeService(ManualClock(0)),
                    metrics=MetricGroup(),
                ),
                self.out,
            )
            if snapshots is not None:
                restore_operator(op, snapshots)
            op.open()
            self.ops.append(op)

    def send(self, records: list[tuple[str, int]]) -> None:
        for i, op in enumerate(self.ops):
            rng = KeyGroupRange.for_subtask(MAX_P, self.parallelism, i)
            mine = [r for r in records if assign_to_key_group(r[0], MAX_P) in rng]
            for start in range(0, len(mine), 8):  # several batches: a tiny cache overflows in between
                op.process_batch(mine[start : start + 8], None, None)

    def snapshot(self) -> list[Any]:
        return [serialize_operator(snapshot_operator(op, checkpoint_id=1)) for op in self.ops]

    def close(self) -> None:
        for op in self.ops:
            op.close()


def _running_values(records: list[tuple[str, int]]) -> list[tuple[str, int]]:
    sums: dict[str, int] = {}
    out = []
    for k, amount in records:
        sums[k] = sums.get(k, 0) + amount
        out.append((k, sums[k]))
    return sorted(out)


@pytest.mark.parametrize("cache", sorted(CACHES))
@pytest.mark.parametrize("before", BACKENDS)
@pytest.mark.parametrize("after", BACKENDS)
def test_rolling_reduce_keeps_running_values_over_a_snapshot_and_rescale(before: str, after: str, cache: str):
    first = ReduceJob(2, before, CACHES[cache])
    try:
        first.send(PHASE1)
        snaps = first.snapshot()
    finally:
        first.close()
    second = ReduceJob(3, after, CACHES[cache], snapshots=snaps)
    try:
        second.send(PHASE2)
        assert sorted(first.out.records + second.out.records) == _running_values(PHASE1 + PHASE2)
    finally:
        second.close()


def test_a_tiny_rocksdb_cache_evicts_and_reads_the_evicted_running_values_back():
    """7 keys over 2 subtasks outgrow a 2-entry cache: each subtask evicts running values to RocksDB and reads
    them back for later records of their keys (a lost value would restart a key's sum)."""
    job = ReduceJob(2, "rocksdb", CACHES["tiny"])
    try:
        job.send(PHASE1)
        caches = [op._cache for op in job.ops]
        assert all(c is not None for c in caches), "the cache closed: the eviction path is not covered"
        assert [bool(c.partial) for c in caches] == [True, True], "nothing was evicted"  # type: ignore[union-attr]
        assert sorted(job.out.records) == _running_values(PHASE1)
    finally:
        job.close()


def test_the_default_rocksdb_cache_holds_a_few_keys():
    job = ReduceJob(1, "rocksdb", CACHES["default"])
    try:
        assert job.ops[0]._cache is not None, "no cache: the cached path would not be covered"
        job.send(PHASE1)
        assert job.ops[0]._cache is not None
    finally:
        job.close()
