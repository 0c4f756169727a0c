"""The RocksDB keyed state backend: the state contract both backends meet, its snapshots (full and
incremental), restores at other parallelisms and into the other backend, and its configuration.

Expected values come from plain-Python models (dicts and lists driven by the same operations) or
from figures stated in the test; never from an earlier run of the engine.
"""

from __future__ import annotations

import os
import random
import secrets
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from strom.common import Configuration
from strom.common.config_options import ConfigError
from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.datastream import AggregateFunction
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from strom.datastream.window import TimeWindow
from strom.runtime.checkpoint.layout import resolve_relative
from strom.runtime.checkpoint.storage import CheckpointStorage, checkpoint_storage_for
from strom.runtime.checkpoint.task_snapshots import SharedFileUploader
from strom.runtime.state.api import StateRestoreError
from strom.runtime.state.backends import create_keyed_state_backend
from strom.runtime.state.heap.backend import HeapKeyedStateBackend
from strom.runtime.state.restore import restore_keyed
from strom.runtime.state.rocksdb.backend import RocksDBKeyedStateBackend
from strom.runtime.state.rocksdb.snapshots import (
    IncrementalKeyedStateHandle,
    materialize,
    snapshot_rocksdb,
    to_canonical,
)
from strom.runtime.state.snapshots import serialize_keyed, snapshot_keyed
from strom.runtime.state.timers import InternalTimerService
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

from tests.engine.s3_server import S3Server, s3_server_fixture  # noqa: F401  (registers `s3_server`)

MAX_P = 128
JOB = "0123456789abcdef0123456789abcdef"
BACKENDS = ["hashmap", "rocksdb"]


def make_backend(kind: str, clock=None, rng: KeyGroupRange | None = None, **conf: Any) -> Any:
    config = Configuration({"state.backend.type": kind, **conf})
    return create_keyed_state_backend(
        config,
        max_parallelism=MAX_P,
        key_group_range=rng or KeyGroupRange(0, MAX_P - 1),
        clock=clock or ManualClock(0),
        operator_name="op",
        operator_uid="uid-1",
    )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest):
    be = make_backend(request.param)
    yield be
    be.close()


class Avg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


# -- the state contract, against a plain-Python model ------------------------------------------------
def test_every_state_kind_follows_a_plain_python_model(backend):
    v = backend.get_state(ValueStateDescriptor("v"))
    lst = backend.get_state(ListStateDescriptor("l"))
    m = backend.get_state(MapStateDescriptor("m"))
    r = backend.get_state(ReducingStateDescriptor("r", lambda a, b: a + b))
    a = backend.get_state(AggregatingStateDescriptor("a", Avg()))
    model: dict[str, dict[Any, Any]] = {"v": {}, "l": {}, "m": {}, "r": {}, "a": {}}
    rnd = random.Random(7)
    keys = ["k1", ("tuple", 2), 17, 3.5, b"raw", None]
    for _ in range(1500):
        key = rnd.choice(keys)
        backend.set_current_key(key)
        op = rnd.randrange(12)
        x = rnd.randrange(100)
        if op == 0:
            v.update(x)
            model["v"][key] = x
        elif op == 1:
            v.clear()
            model["v"].pop(key, None)
        elif op == 2:
            lst.add(x)
            model["l"].setdefault(key, []).append(x)
        elif op == 3:
            lst.update([x, x + 1])
            model["l"][key] = [x, x + 1]
        elif op == 4:
            m.put(x % 7, x)
            model["m"].setdefault(key, {})[x % 7] = x
        elif op == 5:
            m.remove(x % 7)
            model["m"].get(key, {}).pop(x % 7, None)
        elif op == 6:
            r.add(x)
            model["r"][key] = model["r"].get(key, 0) + x
        elif op == 7:
            a.add(x)
            s, c = model["a"].get(key, (0, 0))
            model["a"][key] = (s + x, c + 1)
        elif op == 8:
            lst.clear()
            model["l"].pop(key, None)
        elif op == 9:
            m.put_all({"p": x, "q": -x})
            model["m"].setdefault(key, {}).update({"p": x, "q": -x})
        elif op == 10:
            lst.add_all([x, x])
            model["l"].setdefault(key, []).extend([x, x])
        else:
            m.clear()
            model["m"].pop(key, None)
        assert v.value() == model["v"].get(key)
        assert lst.get() == model["l"].get(key, [])
        expected_map = model["m"].get(key, {})
        assert sorted(m.items(), key=repr) == sorted(expected_map.items(), key=repr)
        assert sorted(m.keys(), key=repr) == sorted(expected_map, key=repr)
        assert m.is_empty() == (not expected_map)
        assert m.contains(x % 7) == (x % 7 in expected_map)
        assert r.get() == model["r"].get(key)
        acc = model["a"].get(key)
        assert a.get() == (None if acc is None else acc[0] / acc[1])
    assert sorted(backend.keys("v"), key=repr) == sorted(model["v"], key=repr)


def test_values_read_are_copies_until_written_back(backend):
    s = backend.get_state(ValueStateDescriptor("s"))
    backend.set_current_key("k")
    s.update([1, 2])
    s.value().append(3)  # a mutation never written back
    if isinstance(backend, RocksDBKeyedStateBackend):
        assert s.value() == [1, 2]  # serialized: as Flink's RocksDB backend
    s.update(s.value() + [4])
    assert s.value()[-1] == 4


def test_namespaces_keep_separate_values_and_merge(backend):
    lst = backend.create_namespaced_state(ListStateDescriptor("w"))
    red = backend.create_namespaced_state(ReducingStateDescriptor("r", lambda a, b: a + b))
    agg = backend.create_namespaced_state(AggregatingStateDescriptor("a", Avg()))
    w1, w2, w3 = TimeWindow(0, 10), TimeWindow(10, 20), TimeWindow(0, 20)
    backend.set_current_key("k")
    for ns, vals in ((w1, [1, 2]), (w2, [3])):
        for s in (lst, red, agg):
            s.set_current_namespace(ns)
            for x in vals:
                s.add(x)
    for s in (lst, red, agg):
        s.merge_namespaces(w3, [w1, w2])
        s.set_current_namespace(w3)
    assert lst.get() == [1, 2, 3] and red.get() == 6 and agg.get() == 2
    for s in (lst, red, agg):
        s.set_current_namespace(w1)
        assert s.get() in ([], None)
    assert backend.keys("w", w3) == ["k"] and backend.keys("w", w1) == []


def test_entries_by_key_group_list_canonical_values(backend):
    lst = backend.get_state(ListStateDescriptor("l"))
    m = backend.get_state(MapStateDescriptor("m"))
    for k in ["a", "b"]:
        backend.set_current_key(k)
        lst.add_all([k, k * 2])
        m.put(1, k)
    groups = backend.entries_by_key_group()
    for k in ["a", "b"]:
        g = groups[assign_to_key_group(k, MAX_P)]
        assert (k, None, [k, k * 2]) in g["l"]
        assert (k, None, {1: k}) in g["m"]


def test_redeclaring_state_with_another_kind_fails(backend):
    backend.get_state(ValueStateDescriptor("s"))
    with pytest.raises(RuntimeError, match="already registered as value"):
        backend.get_state(ListStateDescriptor("s"))


# -- TTL -------------------------------------------------------------------------------------------------
def _ttl(ms: int, **kw: Any) -> StateTtlConfig:
    b = StateTtlConfig.new_builder(ms)
    if kw.get("on_read"):
        b = b.update_ttl_on_read_and_write()
    if kw.get("return_expired"):
        b = b.return_expired_if_not_cleaned_up()
    if kw.get("no_cleanup"):
        b = b.disable_cleanup_in_background()
    return b.build()


@pytest.mark.parametrize("kind", BACKENDS)
def test_ttl_expiry_refresh_and_visibility_per_state_kind(kind):
    clock = ManualClock(0)
    be = make_backend(kind, clock)
    try:
        vd, ld, md = ValueStateDescriptor("v"), ListStateDescriptor("l"), MapStateDescriptor("m")
        rd, ad = ReducingStateDescriptor("r", lambda a, b: a + b), AggregatingStateDescriptor("a", Avg())
        for d in (vd, ld, md, rd, ad):
            d.enable_time_to_live(_ttl(100))
        rod = ValueStateDescriptor("refreshed")
        rod.enable_time_to_live(_ttl(100, on_read=True))
        red = ValueStateDescriptor("stale")
        red.enable_time_to_live(_ttl(10, return_expired=True, no_cleanup=True))
        v, lst, m, r, a, ro, re = (be.get_state(d) for d in (vd, ld, md, rd, ad, rod, red))
        be.set_current_key("k")
        v.update(1)
        lst.add(1)
        m.put("x", 1)
        r.add(1)
        a.add(2)
        ro.update(5)
        re.update(7)
        clock.advance(60)
        lst.add(2)
        m.put("y", 2)
        r.add(2)
        assert ro.value() == 5  # read at 60: lives until 160
        clock.advance(60)  # 120: the first entries expired, the second ones not
        assert v.value() is None
        assert lst.get() == [2]
        assert m.items() == [("y", 2)] and not m.contains("x")
        assert r.get() == 3  # a write refreshes the whole reduced value
        assert a.get() is None
        assert ro.value() == 5
        assert re.value() == 7  # expired but never cleaned up: returned as configured
        clock.advance(200)
        assert lst.get() == [] and m.is_empty() and r.get() is None and ro.value() is None
    finally:
        be.close()


def test_rocksdb_ttl_cleanup_removes_expired_entries_that_are_never_read_again():
    clock = ManualClock(0)
    be = make_backend("rocksdb", clock)
    try:
        d = ValueStateDescriptor("v")
        d.enable_time_to_live(StateTtlConfig.new_builder(100).cleanup_incrementally(10, False).build())
        s = be.get_state(d)
        for i in range(50):
            be.set_current_key(f"old-{i}")
            s.update(i)
        clock.advance(200)
        be.set_current_key("fresh")
        for _ in range(20):  # 20 accesses x 10 entries: every old entry was looked at
            s.update(1)
        assert be.keys("v") == ["fresh"]
    finally:
        be.close()


# -- configuration and lifecycle ----------------------------------------------------------------------
def test_state_backend_type_selects_the_backend_and_rejects_unknown_values():
    heap = make_backend("hashmap")
    rocks = make_backend("rocksdb")
    try:
        assert isinstance(heap, HeapKeyedStateBackend) and isinstance(rocks, RocksDBKeyedStateBackend)
    finally:
        rocks.close()
    with pytest.raises(ConfigError, match="state.backend.type"):
        make_backend("leveldb")
    with pytest.raises(ConfigError, match="timer-service.factory"):
        make_backend("rocksdb", **{"state.backend.rocksdb.timer-service.factory": "ROCKSDB"})


def test_rocksdb_works_under_the_configured_local_dir_and_removes_it_on_close(tmp_path: Path):
    be = make_backend("rocksdb", **{"state.backend.rocksdb.localdir": str(tmp_path / "rocks")})
    be.set_current_key("k")
    be.get_state(ValueStateDescriptor("v")).update(1)
    assert os.path.dirname(be.workdir) == str(tmp_path / "rocks") and os.path.isdir(be.workdir)
    be.close()
    be.close()
    assert not os.path.exists(be.workdir)


# -- snapshots ----------------------------------------------------------------------------------------
def _timers(backend: Any) -> InternalTimerService:
    return InternalTimerService(
        backend=backend,
        on_event_time=lambda t: None,
        on_processing_time=lambda t: None,
        processing_time_service=ProcessingTimeService(ManualClock(0)),
    )


def _fill(backend: Any, timers: InternalTimerService, keys: range) -> dict[str, Any]:
    """Write every state kind for each key; returns the model: key -> what each state holds."""
    v = backend.get_state(ValueStateDescriptor("v"))
    lst = backend.get_state(ListStateDescriptor("l"))
    m = backend.get_state(MapStateDescriptor("m"))
    r = backend.get_state(ReducingStateDescriptor("r", lambda a, b: a + b))
    ttl = ValueStateDescriptor("t")
    ttl.enable_time_to_live(_ttl(10_000))
    t = backend.get_state(ttl)
    w = backend.create_namespaced_state(ListStateDescriptor("w"))
    model = {}
    for i in keys:
        key = f"key-{i}"
        backend.set_current_key(key)
        v.update(i)
        lst.add_all([i, i + 1, i + 2])
        m.put_all({"a": i, ("b", i): [i]})
        r.add(i)
        r.add(1)
        t.update(i * 10)
        w.set_current_namespace(TimeWindow(i, i + 5))
        w.add(-i)
        timers.register_event_time_timer(TimeWindow(i, i + 5), i + 4)
        model[key] = (i, [i, i + 1, i + 2], {"a": i, ("b", i): [i]}, i + 1, i * 10, [-i])
    return model


def _read(backend: Any, timers: InternalTimerService, keys: list[str]) -> dict[str, Any]:
    v = backend.get_state(ValueStateDescriptor("v"))
    lst = backend.get_state(ListStateDescriptor("l"))
    m = backend.get_state(MapStateDescriptor("m"))
    r = backend.get_state(ReducingStateDescriptor("r", lambda a, b: a + b))
    ttl = ValueStateDescriptor("t")
    ttl.enable_time_to_live(_ttl(10_000))
    t = backend.get_state(ttl)
    w = backend.create_namespaced_state(ListStateDescriptor("w"))
    out = {}
    for key in keys:
        backend.set_current_key(key)
        i = int(key.split("-")[1])
        w.set_current_namespace(TimeWindow(i, i + 5))
        out[key] = (v.value(), lst.get(), dict(m.items()), r.get(), t.value(), w.get())
    return out


def _subtask_ranges(parallelism: int) -> list[KeyGroupRange]:
    return [KeyGroupRange.for_subtask(MAX_P, parallelism, i) for i in range(parallelism)]


def _mine(keys: list[str], rng: KeyGroupRange) -> list[str]:
    return [k for k in keys if assign_to_key_group(k, MAX_P) in rng]


class _Storage:
    """A file storage and an uploader into `<job>/shared/`, as the checkpoint writer uses them."""

    def __init__(self, storage: CheckpointStorage, checkpoint_id: int = 1) -> None:
        self.storage = storage
        self.directory = f"{JOB}/chk-{checkpoint_id}"
        self.uploader = SharedFileUploader(storage, JOB)

    def bind(self, handle: IncrementalKeyedStateHandle) -> IncrementalKeyedStateHandle:
        return handle.bound(lambda rel: self.storage.read_bytes(resolve_relative(self.directory, rel)))


def _take(kind: str, parallelism: int, keys: range, storage: _Storage, **conf: Any) -> tuple[list[Any], dict]:
    """Fill `parallelism` subtasks of a backend with the keys they own, snapshot each."""
    snaps, model = [], {}
    for rng in _subtask_ranges(parallelism):
        be = make_backend(kind, rng=rng, **conf)
        ts = _timers(be)
        model.update(_fill(be, ts, [i for i in keys if assign_to_key_group(f"key-{i}", MAX_P) in rng]))
        if isinstance(be, HeapKeyedStateBackend):
            snaps.append(serialize_keyed(snapshot_keyed(be, ts, operator_uid="uid-1")))
        else:
            snap = materialize(snapshot_rocksdb(be, ts, operator_uid="uid-1"), storage.uploader)
            snaps.append(storage.bind(snap) if isinstance(snap, IncrementalKeyedStateHandle) else snap)
        be.close()
    return snaps, model


@pytest.mark.parametrize(
    ("source", "target", "incremental"),
    [
        ("rocksdb", "rocksdb", False),
        ("rocksdb", "rocksdb", True),
        ("rocksdb", "hashmap", False),
        ("rocksdb", "hashmap", True),
        ("hashmap", "rocksdb", False),
    ],
)
@pytest.mark.parametrize("after", [1, 2, 3])
def test_snapshots_restore_at_other_parallelisms_and_into_either_backend(
    tmp_path: Path, source: str, target: str, incremental: bool, after: int
):
    storage = _Storage(checkpoint_storage_for(tmp_path.as_uri()))
    conf = {"state.backend.incremental": incremental}
    snaps, model = _take(source, 2, range(60), storage, **conf)
    keys = sorted(model)
    restored: dict[str, Any] = {}
    timers: set[tuple[int, Any, Any]] = set()
    for rng in _subtask_ranges(after):
        be = make_backend(target, rng=rng)
        ts = _timers(be)
        if isinstance(be, HeapKeyedStateBackend):
            restore_keyed(be, ts, [to_canonical(s) if isinstance(s, IncrementalKeyedStateHandle) else s for s in snaps])
        else:
            restore_keyed(be, ts, snaps)
        restored.update(_read(be, ts, _mine(keys, rng)))
        timers.update(ts.event_timers())
        be.close()
    assert restored == model
    assert timers == {(i + 4, f"key-{i}", TimeWindow(i, i + 5)) for i in range(60)}


def test_incremental_restore_of_the_same_key_groups_reuses_uploaded_files(tmp_path: Path):
    storage = _Storage(checkpoint_storage_for(tmp_path.as_uri()))
    (snap,), model = _take("rocksdb", 1, range(30), storage, **{"state.backend.incremental": True})
    be = make_backend("rocksdb", **{"state.backend.incremental": True})
    ts = _timers(be)
    restore_keyed(be, ts, [snap])
    assert _read(be, ts, sorted(model)) == model
    # nothing changed since the restore: the next checkpoint uploads no SST file again
    again = materialize(snapshot_rocksdb(be, ts, operator_uid="uid-1"), storage.uploader)
    assert again.uploaded_bytes == 0 and again.shared == snap.shared
    be.close()


def test_an_incremental_handle_pickled_under_its_old_module_path_still_loads():
    """Checkpoints written before the state package was split name the class
    strom.runtime.state.rocksdb_snapshots.IncrementalKeyedStateHandle; a restart from one must find it."""
    import pickle

    handle = IncrementalKeyedStateHandle(
        "uid-1", MAX_P, KeyGroupRange(0, MAX_P - 1), (), {"000009.sst": "../shared/a"}, {"CURRENT": b"M\n"}, b"", 7
    )
    new_path, old_path = b"strom.runtime.state.rocksdb.snapshots", b"strom.runtime.state.rocksdb_snapshots"
    data = pickle.dumps(handle, protocol=0)  # protocol 0 names classes as plain text lines
    assert new_path in data
    loaded = pickle.loads(data.replace(new_path, old_path))
    assert type(loaded) is IncrementalKeyedStateHandle and loaded == handle


def test_a_full_rocksdb_snapshot_is_consistent_while_processing_goes_on():
    be = make_backend("rocksdb")
    s = be.get_state(ValueStateDescriptor("v"))
    for i in range(20):
        be.set_current_key(i)
        s.update(i)
    snap = snapshot_rocksdb(be, None, operator_uid="uid-1")
    for i in range(20):  # after the barrier: must not be in the snapshot
        be.set_current_key(i)
        s.update(-1)
    be.set_current_key(99)
    s.update(99)
    serialized = materialize(snap, None)
    heap = make_backend("hashmap")
    restore_keyed(heap, None, [serialized])
    assert {k: v for _, d in heap.entries_by_key_group().items() for k, _, v in d["v"]} == {i: i for i in range(20)}
    be.close()


def test_restoring_a_state_as_another_kind_fails_naming_the_state(tmp_path: Path):
    snaps, _ = _take("rocksdb", 1, range(3), _Storage(checkpoint_storage_for(tmp_path.as_uri())))
    be = make_backend("rocksdb")
    be.get_state(ValueStateDescriptor("l"))  # 'l' was a list state
    with pytest.raises(StateRestoreError, match="'l'"):
        restore_keyed(be, _timers(be), snaps)
    be.close()


# -- incremental checkpoints: bytes uploaded ---------------------------------------------------------
def _shared_bytes(storage: CheckpointStorage) -> int:
    return sum(len(storage.read_bytes(p)) for p in storage.list(f"{JOB}/shared"))


def _incremental_uploads(storage: CheckpointStorage) -> tuple[int, int, IncrementalKeyedStateHandle]:
    """A few MB of state, checkpointed; 1% of it changed, checkpointed again: bytes uploaded each time."""
    up = _Storage(storage)
    be = make_backend("rocksdb", **{"state.backend.incremental": True})
    try:
        s = be.get_state(ValueStateDescriptor("v"))
        rnd = random.Random(3)
        for i in range(4000):  # ~4 MB of incompressible values: the SST files are as large as the state
            be.set_current_key(i)
            s.update(rnd.randbytes(1000))
        first = materialize(snapshot_rocksdb(be, None, operator_uid="uid-1"), up.uploader)
        after_first = _shared_bytes(storage)
        for i in range(0, 4000, 100):
            be.set_current_key(i)
            s.update(b"changed")
        second = materialize(snapshot_rocksdb(be, None, operator_uid="uid-1"), up.uploader)
        after_second = _shared_bytes(storage)
    finally:
        be.close()
    assert first.uploaded_bytes == after_first
    assert second.uploaded_bytes == after_second - after_first
    assert set(first.shared.values()) <= set(second.shared.values())  # the first files are re-used
    return first.uploaded_bytes, second.uploaded_bytes, up.bind(second)


def test_second_incremental_checkpoint_after_a_small_change_uploads_far_fewer_bytes(tmp_path: Path):
    first, second, handle = _incremental_uploads(checkpoint_storage_for(tmp_path.as_uri()))
    print(f"RocksDB incremental: first checkpoint uploaded {first} bytes, second {second} bytes")
    assert first > 3_000_000
    assert 0 < second < first / 4
    # and the second checkpoint alone restores the whole, changed state
    be = make_backend("rocksdb")
    restore_keyed(be, None, [handle])
    s = be.get_state(ValueStateDescriptor("v"))
    for i in (0, 1, 100, 3999):
        be.set_current_key(i)
        assert (s.value() == b"changed") == (i % 100 == 0)
    be.close()


def test_incremental_checkpoints_on_s3(s3_server: S3Server):
    storage = checkpoint_storage_for(f"s3://{s3_server.bucket}/t-{secrets.token_hex(6)}/chk", s3_server.config())
    first, second, handle = _incremental_uploads(storage)
    assert 0 < second < first / 4
    restored = to_canonical(handle)
    assert sum(len(b) for b in restored.key_groups.values()) > 3_000_000


# -- the value-state cache and bounded scans (issue 23) --------------------------------------------------
class _Pair(NamedTuple):
    name: str
    n: int


@pytest.mark.parametrize("incremental", [False, True])
def test_value_state_writes_held_in_its_cache_reach_every_snapshot_past_the_cache_bound(
    tmp_path: Path, incremental: bool
):
    """Immutable values stay in the value cache until a snapshot; a tiny bound forces write-backs mid-run.
    The restored backend (a fresh one, heap and RocksDB) must hold what a plain dict says."""
    rnd = random.Random(23)
    storage = _Storage(checkpoint_storage_for(tmp_path.as_uri()))
    be = make_backend(
        "rocksdb", **{"state.backend.incremental": incremental, "state.backend.rocksdb.value-cache.size": "1500b"}
    )
    s = be.get_state(ValueStateDescriptor("v"))
    model: dict[str, Any] = {}
    for step in range(600):
        key = f"key-{rnd.randrange(40)}"
        be.set_current_key(key)
        action = rnd.random()
        if action < 0.15:
            s.clear()
            model.pop(key, None)
        elif action < 0.3:
            assert s.value() == model.get(key)
        else:
            value = rnd.choice([step, f"s{step}", (step, "t"), _Pair("p", step), [step], {"d": step}])
            s.update(value)
            model[key] = value
    snap = materialize(snapshot_rocksdb(be, None, operator_uid="uid-1"), storage.uploader)
    snap = storage.bind(snap) if isinstance(snap, IncrementalKeyedStateHandle) else snap
    be.close()
    for kind in BACKENDS:
        target = make_backend(kind)
        try:
            if isinstance(target, HeapKeyedStateBackend):
                restore_keyed(target, None, [to_canonical(snap) if incremental else snap])
            else:
                restore_keyed(target, None, [snap])
            restored = target.get_state(ValueStateDescriptor("v"))
            got = {}
            for i in range(40):
                target.set_current_key(f"key-{i}")
                if (v := restored.value()) is not None:
                    got[f"key-{i}"] = v
            assert got == model, kind
        finally:
            target.close()


def test_a_cached_value_is_never_one_the_caller_can_change():
    """Only immutable values are cached: a list or a tuple holding a list is read fresh each time."""
    be = make_backend("rocksdb")
    try:
        s = be.get_state(ValueStateDescriptor("v"))
        be.set_current_key("k")
        s.update((1, [2]))
        s.value()[1].append(3)
        assert s.value() == (1, [2])
        s.update(_Pair("a", 1))
        assert s.value() == _Pair("a", 1) and type(s.value()) is _Pair
    finally:
        be.close()


@pytest.mark.parametrize("prefix", [b"a", b"a\xff", b"\xff\xff", b"ab\x00", b"b"])
def test_scans_list_exactly_the_keys_under_a_prefix_with_deleted_neighbours(prefix: bytes):
    """backend.scan bounds its iterator above by the prefix's successor; compared with startswith over the keys."""
    be = make_backend("rocksdb")
    try:
        keys = [b"a", b"a\x00", b"a\xff", b"a\xff\x00", b"a\xff\xff", b"ab", b"ab\x00\x01", b"b", b"b\x00", b"\xff",
                b"\xff\xff", b"\xff\xff\x01"]
        for k in keys:
            be.db.put(k, b"v")
        for k in keys[::3]:
            be.db.delete(k)
        live = sorted(k for i, k in enumerate(keys) if i % 3)
        assert [k for k, _ in be.scan(prefix)] == [k for k in live if k.startswith(prefix)]
    finally:
        be.close()


@pytest.mark.parametrize("incremental", [False, True])
def test_a_snapshot_outlives_its_closed_backend(tmp_path: Path, incremental: bool):
    """A task may end (closing its backend, which removes its working directory) while the asynchronous phase
    of its last checkpoint still reads the local RocksDB checkpoint: that phase must still see the files
    (before: 'No such file or directory: .../chk-.../000014.sst' declined the checkpoint and failed the job)."""
    storage = _Storage(checkpoint_storage_for(tmp_path.as_uri()))
    be = make_backend("rocksdb", **{"state.backend.incremental": incremental})
    s = be.get_state(ValueStateDescriptor("v"))
    for i in range(50):
        be.set_current_key(i)
        s.update(i * 10)
    snap = snapshot_rocksdb(be, None, operator_uid="uid-1")
    local_dir = snap.local_dir
    be.close()
    assert not os.path.exists(be.workdir) and os.path.isdir(local_dir)
    handle = materialize(snap, storage.uploader)
    assert not os.path.exists(local_dir)  # the asynchronous phase removes it
    heap = make_backend("hashmap")
    restore_keyed(heap, None, [storage.bind(handle) if isinstance(handle, IncrementalKeyedStateHandle) else handle])
    restored = {k: v for _, d in heap.entries_by_key_group().items() for k, _, v in d["v"]}
    assert restored == {i: i * 10 for i in range(50)}


def test_a_snapshot_dropped_without_its_asynchronous_phase_leaves_no_directory():
    be = make_backend("rocksdb")
    be.get_state(ValueStateDescriptor("v"))
    snap = snapshot_rocksdb(be, None, operator_uid="uid-1")
    local_dir = snap.local_dir
    assert os.path.isdir(local_dir)
    del snap
    be.close()
    assert not os.path.exists(local_dir)
