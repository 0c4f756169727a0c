"""Contract: a snapshot restores into a fresh backend of either kind, at any parallelism.

Savepoints are backend-portable (the canonical form): a snapshot taken on the heap restores into
RocksDB and back, with every state kind, TTL stamps, namespaces and timers. Rescaling keeps each
key's state and timers exactly once, in the subtask that owns its key group. The expected state
is a plain-Python record of what was written, not a backend's earlier output.
"""

from __future__ import annotations

from typing import Any

import pytest
from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from strom.datastream.window import TimeWindow
from strom.runtime.state.api import VOID, KeyedStateBackend, StateRestoreError
from strom.runtime.state.restore import restore_keyed
from strom.runtime.state.snapshots import snapshot_keyed
from strom.runtime.tasks.processing_time import ManualClock

from tests.state_contract.conftest import BACKENDS, MAX_P, Timers, new_backend

NOW = 1_000
KEYS = [f"user-{i}" for i in range(40)] + list(range(20))


def _ttl_value() -> ValueStateDescriptor:
    d = ValueStateDescriptor("ttl-count")
    d.enable_time_to_live(StateTtlConfig.new_builder(10_000).build())
    return d


def _declare(backend: KeyedStateBackend) -> dict[str, Any]:
    return {
        "count": backend.get_state(ValueStateDescriptor("count")),
        "events": backend.get_state(ListStateDescriptor("events")),
        "attrs": backend.get_state(MapStateDescriptor("attrs")),
        "sum": backend.get_state(ReducingStateDescriptor("sum", lambda a, b: a + b)),
        "ttl": backend.get_state(_ttl_value()),
        "pane": backend.create_namespaced_state(ReducingStateDescriptor("pane", lambda a, b: a + b)),
    }


def _fill(backend: KeyedStateBackend, timers: Timers, keys: list[Any]) -> dict[tuple[str, Any, Any], Any]:
    """Write every kind for `keys` (and an event-time timer each); return what a reader must see."""
    s = _declare(backend)
    expected: dict[tuple[str, Any, Any], Any] = {}
    for i, key in enumerate(keys):
        backend.set_current_key(key)
        window = TimeWindow(i // 10 * 10, i // 10 * 10 + 10)
        s["count"].update(i)
        s["events"].add_all([i, i + 1])
        s["attrs"].put("n", i)
        s["sum"].add(i)
        s["sum"].add(2)
        s["ttl"].update(i * 10)
        s["pane"].set_current_namespace(window)
        s["pane"].add(i)
        timers.service.register_event_time_timer(window, window.end - 1)
        expected.update(
            {
                ("count", key, VOID): i,
                ("events", key, VOID): [i, i + 1],
                ("attrs", key, VOID): {"n": i},
                ("sum", key, VOID): i + 2,
                ("ttl", key, VOID): i * 10,
                ("pane", key, window): i,
                ("timer", key, window): window.end - 1,
            }
        )
    return expected


def _read(backend: KeyedStateBackend, timers: Timers, keys: list[Any]) -> dict[tuple[str, Any, Any], Any]:
    """What the backend shows for `keys` through the state API, and the timers that fire."""
    s = _declare(backend)
    seen: dict[tuple[str, Any, Any], Any] = {}
    for key in keys:
        backend.set_current_key(key)
        for name, value in (
            ("count", s["count"].value()),
            ("events", s["events"].get() or None),
            ("attrs", dict(s["attrs"].items()) or None),
            ("sum", s["sum"].get()),
            ("ttl", s["ttl"].value()),
        ):
            if value is not None:
                seen[(name, key, VOID)] = value
    for window_start in range(0, len(KEYS) + 10, 10):
        window = TimeWindow(window_start, window_start + 10)
        s["pane"].set_current_namespace(window)
        for key in backend.keys("pane", window):
            backend.set_current_key(key)
            seen[("pane", key, window)] = s["pane"].get()
    timers.service.advance_watermark(10**9)
    for ts, key, window in timers.fired:
        seen[("timer", key, window)] = ts
    return seen


@pytest.mark.parametrize("source", BACKENDS)
@pytest.mark.parametrize("target", BACKENDS)
@pytest.mark.parametrize("materialized", [True, False], ids=["serialized", "in-memory"])
def test_every_state_kind_restores_into_a_fresh_backend_of_either_kind(source: str, target: str, materialized: bool):
    clock = ManualClock(NOW)
    old = new_backend(source, clock=clock)
    new = new_backend(target, clock=clock)
    try:
        old_timers = Timers(old)
        expected = _fill(old, old_timers, KEYS)
        snap = snapshot_keyed(old, old_timers.service)
        if materialized:
            snap = snap.materialize(None)
        new_timers = Timers(new)
        _declare(new)
        restore_keyed(new, new_timers.service, [snap])
        assert _read(new, new_timers, KEYS) == expected
        # TTL stamps travel with the values: the restored entry expires when the original would have
        clock.advance(10_000)
        ttl = new.get_state(_ttl_value())
        new.set_current_key(KEYS[0])
        assert ttl.value() is None
    finally:
        old.close()
        new.close()


@pytest.mark.parametrize("source", BACKENDS)
@pytest.mark.parametrize("target", BACKENDS)
@pytest.mark.parametrize(("before", "after"), [(2, 3), (3, 1), (1, 4)])
def test_rescaling_keeps_each_keys_state_and_timers_exactly_once_in_its_subtask(
    source: str, target: str, before: int, after: int
):
    clock = ManualClock(NOW)
    snaps, expected = [], {}
    for i in range(before):
        rng = KeyGroupRange.for_subtask(MAX_P, before, i)
        be = new_backend(source, clock=clock, rng=rng)
        try:
            timers = Timers(be)
            mine = [k for k in KEYS if assign_to_key_group(k, MAX_P) in rng]
            expected.update(_fill(be, timers, mine))
            snaps.append(snapshot_keyed(be, timers.service).materialize(None))
        finally:
            be.close()
    seen: dict[tuple[str, Any, Any], Any] = {}
    for i in range(after):
        rng = KeyGroupRange.for_subtask(MAX_P, after, i)
        be = new_backend(target, clock=clock, rng=rng)
        try:
            timers = Timers(be)
            _declare(be)
            restore_keyed(be, timers.service, snaps)
            mine = [k for k in KEYS if assign_to_key_group(k, MAX_P) in rng]
            part = _read(be, timers, KEYS)
            assert {k for _, k, _ in part} <= set(mine), "a subtask holds a key of another subtask's key groups"
            assert not set(part) & set(seen), "a key's state was restored twice"
            seen.update(part)
        finally:
            be.close()
    assert seen == expected


@pytest.fixture(params=BACKENDS)
def taken(request: pytest.FixtureRequest) -> Any:
    """A serialized snapshot of subtask 0 of 2 (key groups 0-63) of the given backend."""
    be = new_backend(request.param, rng=KeyGroupRange.for_subtask(MAX_P, 2, 0))
    try:
        be.get_state(ValueStateDescriptor("count"))
        for key in KEYS:
            if assign_to_key_group(key, MAX_P) in be.key_group_range:
                be.set_current_key(key)
                be.get_state(ValueStateDescriptor("count")).update(1)
        yield snapshot_keyed(be, None).materialize(None)
    finally:
        be.close()


def test_a_snapshot_of_another_max_parallelism_is_refused(backend_kind: str, taken: Any):
    be = new_backend(backend_kind, rng=KeyGroupRange(0, 63))
    be.max_parallelism = 256
    try:
        with pytest.raises(StateRestoreError, match="max parallelism 128.*cannot change"):
            restore_keyed(be, None, [taken])
    finally:
        be.close()


def test_key_groups_missing_from_the_snapshots_are_refused(backend_kind: str, taken: Any):
    be = new_backend(backend_kind)  # all 128 key groups, the snapshot holds 0-63
    try:
        with pytest.raises(StateRestoreError, match="not all in the given snapshots"):
            restore_keyed(be, None, [taken])
    finally:
        be.close()


def test_a_state_restored_as_another_kind_is_refused_naming_it(backend_kind: str, taken: Any):
    be = new_backend(backend_kind, rng=KeyGroupRange(0, 63))
    try:
        be.get_state(ListStateDescriptor("count"))
        with pytest.raises(StateRestoreError, match="'count' was snapshotted as value state but is declared as list"):
            restore_keyed(be, None, [taken])
    finally:
        be.close()


def test_a_corrupt_key_group_is_refused_naming_it(backend_kind: str, taken: Any):
    from dataclasses import replace

    group = min(taken.key_groups)
    broken = replace(taken, key_groups={**taken.key_groups, group: taken.key_groups[group][:7]})
    be = new_backend(backend_kind, rng=KeyGroupRange(0, 63))
    try:
        with pytest.raises(StateRestoreError, match=f"key group {group} of the snapshot is corrupt"):
            restore_keyed(be, None, [broken])
    finally:
        be.close()


def test_timers_fire_once_in_time_order_with_their_key_current(make_backend: Any):
    be = make_backend()
    timers = Timers(be)
    for key, ts in (("a", 30), ("b", 10), ("a", 10), ("a", 30), ("c", 20)):
        be.set_current_key(key)
        timers.service.register_event_time_timer(VOID, ts)
    be.set_current_key("c")
    timers.service.delete_event_time_timer(VOID, 20)
    timers.service.advance_watermark(25)
    assert sorted(timers.fired) == [(10, "a", VOID), (10, "b", VOID)]
    timers.service.advance_watermark(30)
    assert timers.fired[2:] == [(30, "a", VOID)]
