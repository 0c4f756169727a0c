"""Keyed programs on the RocksDB backend, end to end in the embedded executor.

1. The keyed and window test families run again with `state.backend.type: rocksdb`: a
   representative set of their tests (every state kind, TTL, timers, windows of each kind, joins,
   broadcast state) is called with every environment configured for RocksDB. Each of those tests
   compares with its own plain-Python reference; here we also check that RocksDB really held the
   state (backends created and written to).
2. Checkpoints and failover on RocksDB (full and incremental): exactly-once sums after a failure,
   and the retention of shared files (only files a retained checkpoint references are kept).
3. Rescaling: a rocksdb checkpoint (incremental) and a savepoint made from it (canonical) restore
   at parallelism 2 -> 1 and 2 -> 3, into RocksDB and into the heap, equal to the plain-Python sums.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from strom.common import Configuration, Types
from strom.common.key_groups import KeyGroupRange
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.checkpoint.layout import METADATA_FILE, checkpoint_dir, resolve_relative
from strom.runtime.checkpoint.metadata import read_metadata
from strom.runtime.checkpoint.savepoints import SavepointTarget, finalize_savepoint
from strom.runtime.checkpoint.storage import checkpoint_storage_for
from strom.runtime.checkpoint.task_snapshots import restore_operators
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.basic import ProcessOperator
from strom.runtime.state.heap.backend import HeapKeyedStateBackend
from strom.runtime.state.rocksdb.backend import RocksDBKeyedStateBackend
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

from tests.engine import (
    test_broadcast_state,
    test_checkpoints_local,
    test_interval_join,
    test_keyed_state,
    test_timers_and_process,
    test_windows_event_time,
    test_windows_triggers_evictors,
)
from tests.engine.failover_testing import run_with_restarts

ROCKSDB = {"state.backend.type": "rocksdb"}


@pytest.fixture
def on_rocksdb(monkeypatch: pytest.MonkeyPatch) -> list[RocksDBKeyedStateBackend]:
    """Every environment created from now on runs on RocksDB; returns the backends created."""
    original = StreamExecutionEnvironment.get_execution_environment
    created: list[RocksDBKeyedStateBackend] = []
    init = RocksDBKeyedStateBackend.__init__

    def configured(configuration: Configuration | None = None) -> StreamExecutionEnvironment:
        env = original(configuration)
        env.configure(Configuration(ROCKSDB))
        return env

    def record(self: RocksDBKeyedStateBackend, **kw: Any) -> None:
        init(self, **kw)
        created.append(self)

    monkeypatch.setattr(StreamExecutionEnvironment, "get_execution_environment", staticmethod(configured))
    monkeypatch.setattr(RocksDBKeyedStateBackend, "__init__", record)
    return created


class TtlCounter(test_keyed_state.KeyedProcessFunction):
    """A running count in TTL state (an hour: nothing expires while the job runs)."""

    def open(self, ctx):
        d = ValueStateDescriptor("count", Types.LONG())
        d.enable_time_to_live(test_keyed_state.ttl(3_600_000, on_read=True))
        self.count = ctx.get_state(d)

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield value[0], self.count.value()


def _ttl_counts_match_reference() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    out = test_keyed_state.collect(env.from_collection(test_keyed_state.EVENTS).key_by(lambda e: e[0]).process(
        TtlCounter()
    ))
    seen: dict[str, int] = {}
    expected = []
    for k, _ in test_keyed_state.EVENTS:
        seen[k] = seen.get(k, 0) + 1
        expected.append((k, seen[k]))
    assert sorted(out) == sorted(expected)


FAMILY: list[tuple[str, Callable[[], None]]] = [
    ("every state kind, p=1", lambda: test_keyed_state.test_every_state_type_matches_reference(1)),
    ("every state kind, p=3", lambda: test_keyed_state.test_every_state_type_matches_reference(3)),
    ("keyed map with state", test_keyed_state.test_keyed_map_can_use_state),
    ("TTL state in a job", _ttl_counts_match_reference),
    ("event-time timers", lambda: test_timers_and_process.test_event_time_timers_fire_when_watermark_passes_with_key_and_dedup(2)),  # noqa: E501
    ("deleted timers", test_timers_and_process.test_deleted_timer_does_not_fire),
    ("tumbling aggregate + lateness", lambda: test_windows_event_time.test_tumbling_aggregate_with_process_window_function_matches_reference(6)),  # noqa: E501
    ("tumbling reduce", test_windows_event_time.test_tumbling_reduce_without_window_function_sums_each_window),
    ("sliding reduce", test_windows_event_time.test_sliding_reduce_with_window_function_matches_reference),
    ("sliding process", test_windows_event_time.test_sliding_process_over_all_elements_matches_reference),
    ("session windows merge", lambda: test_windows_event_time.test_session_windows_merge_state_of_overlapping_windows(3)),  # noqa: E501
    ("session process", test_windows_event_time.test_session_windows_with_process_function_see_all_merged_elements),
    ("late data", test_windows_event_time.test_late_elements_go_to_side_output_and_refire_within_lateness),
    ("per-window state", test_windows_event_time.test_process_window_function_state_and_side_output),
    ("count windows", test_windows_triggers_evictors.test_count_windows_per_key_match_reference_at_parallelism_2),
    ("custom merging trigger", test_windows_triggers_evictors.test_custom_trigger_merges_its_state_and_is_cleared_for_merged_and_finished_windows),  # noqa: E501
    ("evictor", test_windows_triggers_evictors.test_evictor_with_reduce_and_aggregate_evaluates_what_is_left),
    ("interval join", lambda: test_interval_join.test_interval_join_equals_nested_loop_join(2, -5, 5)),
    ("keyed broadcast state", lambda: test_broadcast_state.test_rules_broadcast_to_a_keyed_stream_apply_to_every_event(2)),  # noqa: E501
]


@pytest.mark.parametrize("name,program", FAMILY, ids=[n for n, _ in FAMILY])
def test_keyed_and_window_programs_match_their_references_on_rocksdb(on_rocksdb, name, program):
    program()
    assert on_rocksdb, f"{name}: no RocksDB backend was created"


# -- checkpoints and failover ------------------------------------------------------------------------
@pytest.mark.parametrize("incremental", [False, True])
def test_keyed_state_is_exactly_once_after_a_failure_and_a_rocksdb_restore(tmp_path: Path, incremental: bool):
    env = test_checkpoints_local._env()
    test_checkpoints_local._keyed_sums_job(env)
    job = run_with_restarts(
        env,
        "rocksdb keyed sums",
        **ROCKSDB,
        **{
            "state.backend.incremental": incremental,
            "state.checkpoints.dir": tmp_path.as_uri(),
            "state.checkpoints.num-retained": 2,
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        },
    )
    assert job.restarts == 1 and job.restored_checkpoint_id is not None
    keys = test_checkpoints_local.KEYS
    count = test_checkpoints_local.COUNT
    assert test_checkpoints_local.LATEST == {(k,): sum(i for i in range(count) if i % keys == k) for k in range(keys)}
    # retention: the shared directory holds exactly the files the retained checkpoints reference
    storage = checkpoint_storage_for(tmp_path.as_uri())
    retained = [p.rsplit("/", 1)[0] for p in storage.list(job.job_id) if p.endswith("/" + METADATA_FILE)]
    assert len(retained) == 2
    referenced = {
        resolve_relative(d, f) for d in retained for op in read_metadata(storage, d).operators.values()
        for f in op.shared_files
    }
    shared = set(storage.list(f"{job.job_id}/shared"))
    assert shared == referenced
    assert bool(shared) == incremental


# -- rescaling from a rocksdb checkpoint and from a savepoint ----------------------------------------------
COUNT = 3000
KEYS = 23


class SumPerKey(test_keyed_state.KeyedProcessFunction):
    def open(self, ctx):
        self.sum = ctx.get_state(ValueStateDescriptor("sum", Types.LONG()))

    def process_element(self, value, ctx):
        self.sum.update((self.sum.value() or 0) + value)
        yield ctx.get_current_key(), self.sum.value()


def _retained_rocksdb_checkpoint(tmp_path: Path) -> tuple[str, str]:
    """Run a keyed sum at parallelism 2 on incremental RocksDB; (storage URI, latest checkpoint directory)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(30)
    src = test_checkpoints_local.DataGeneratorSource(lambda i: i, COUNT, rate_limit=6000.0, type_info=Types.LONG())
    (
        env.from_source(src, test_checkpoints_local.WatermarkStrategy.no_watermarks(), "gen")
        .set_parallelism(1)  # one split: the checkpoint holds the sums of a prefix 0..n-1 of the input
        .key_by(lambda v: v % KEYS, key_type=Types.INT())
        .process(SumPerKey())
        .uid("sums")
    )
    job = run_with_restarts(
        env,
        "rocksdb sums to rescale",
        **ROCKSDB,
        **{
            "state.backend.incremental": True,
            "state.checkpoints.dir": tmp_path.as_uri(),
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        },
    )
    completed = job.checkpoint_coordinator.completed_ids
    assert completed, "no checkpoint completed"
    return tmp_path.as_uri(), checkpoint_dir(job.job_id, completed[-1])


class _Sink(Output):
    def collect(self, values, timestamps):
        pass


def _restored_sums(stream: Any, storage: Any, directory: str, parallelism: int, backend: str) -> dict[int, int]:
    """The state of the 'sums' operator restored at `parallelism` from the checkpoint in `directory`."""
    t = stream._t
    metadata = read_metadata(storage, directory)
    sums: dict[int, int] = {}
    for i in range(parallelism):
        op = ProcessOperator(t.operator, key_selectors=t.key_selectors)
        ctx = OperatorContext(
            task_name="t", operator_name="sums", operator_uid="sums", subtask_index=i, parallelism=parallelism,
            max_parallelism=128, attempt=0, config=Configuration({"state.backend.type": backend}),
            processing_time_service=ProcessingTimeService(ManualClock(0)), metrics=MetricGroup(),
        )
        op.setup(ctx, _Sink())
        restore_operators(storage, directory, metadata, [op])
        expected_type = RocksDBKeyedStateBackend if backend == "rocksdb" else HeapKeyedStateBackend
        assert isinstance(op.backend, expected_type)
        assert op.backend.key_group_range == KeyGroupRange.for_subtask(128, parallelism, i)
        for group in op.backend.entries_by_key_group().values():
            for key, _ns, value in group.get("sum", []):
                assert key not in sums, f"key {key} restored twice"
                sums[key] = value
        op.close()
    return sums


@pytest.mark.parametrize("backend", ["rocksdb", "hashmap"])
def test_a_rocksdb_checkpoint_and_its_savepoint_restore_at_parallelism_1_and_3(tmp_path: Path, backend: str):
    uri, directory = _retained_rocksdb_checkpoint(tmp_path / "chk")
    storage = checkpoint_storage_for(uri)
    metadata = read_metadata(storage, directory)
    assert metadata.operators["sums"].shared_files, "the checkpoint is not incremental"
    stream = (
        StreamExecutionEnvironment.get_execution_environment()
        .from_collection([1]).key_by(lambda v: v % KEYS).process(SumPerKey())
    )
    # the savepoint: canonical and self-contained (no shared files), as the coordinator makes it
    sp_storage = checkpoint_storage_for((tmp_path / "sp").as_uri())
    done: list[Any] = []
    location = finalize_savepoint(
        storage, directory, metadata, SavepointTarget(sp_storage, "savepoint-x", lambda *a: done.append(a))
    )
    sp_meta = json.loads(sp_storage.read_bytes(f"savepoint-x/{METADATA_FILE}"))
    assert sp_meta["is_savepoint"] and all(not op["shared_files"] for op in sp_meta["operators"].values())
    assert location.endswith("savepoint-x")
    expected = _prefix_sums_equal_to(_restored_sums(stream, storage, directory, 1, backend))
    assert expected, "the restored sums are not the sums of a non-empty prefix of the input"
    assert _restored_sums(stream, storage, directory, 3, backend) == expected
    for parallelism in (1, 3):
        assert _restored_sums(stream, sp_storage, "savepoint-x", parallelism, backend) == expected


def _prefix_sums_equal_to(sums: dict[int, int]) -> dict[int, int] | None:
    """The plain-Python sums per key of the input prefix 0..n-1 that equal `sums`, if some n gives them."""
    running: dict[int, int] = {}
    for n in range(COUNT + 1):
        if running == sums:
            return dict(running)
        if n < COUNT:
            running[n % KEYS] = running.get(n % KEYS, 0) + n
    return None
