"""Keyed state snapshots: a contract every keyed state backend must meet.

Each test gets a `new_subtask` factory (parametrized by backend) that builds one subtask's
keyed backend and timer service, so another backend joins by adding a factory. Expected
contents come from plain dicts the tests fill as they write state; key placement is checked
against KeyGroupRange.for_subtask.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from strom.datastream.windowing.windows import TimeWindow
from strom.runtime.state.api import StateAccessError, StateRestoreError
from strom.runtime.state.heap.backend import HeapKeyedStateBackend
from strom.runtime.state.restore import restore_keyed
from strom.runtime.state.snapshots import (
    KeyedStateSnapshot,
    SerializedKeyedState,
    key_groups_of,
    serialize_keyed,
    snapshot_keyed,
)
from strom.runtime.state.timers import InternalTimerService
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

UID = "counts-uid"
MAX_P = 128
NOW = 5_000


@dataclass
class Subtask:
    backend: HeapKeyedStateBackend
    timers: InternalTimerService
    pts: ProcessingTimeService
    fired: list[tuple[str, int, Any, Any]] = field(default_factory=list)


def heap_subtask(*, parallelism: int, index: int, max_parallelism: int = MAX_P, clock: ManualClock) -> Subtask:
    backend = HeapKeyedStateBackend(
        max_parallelism=max_parallelism,
        key_group_range=KeyGroupRange.for_subtask(max_parallelism, parallelism, index),
        clock=clock,
        operator_name="counts",
        operator_uid=UID,
    )
    pts = ProcessingTimeService(clock)
    sub = Subtask(backend, None, pts)  # type: ignore[arg-type]
    sub.timers = InternalTimerService(
        backend=backend,
        on_event_time=lambda t: sub.fired.append(("event", t.timestamp, t.key, t.namespace)),
        on_processing_time=lambda t: sub.fired.append(("processing", t.timestamp, t.key, t.namespace)),
        processing_time_service=pts,
    )
    return sub


@pytest.fixture(params=["heap"])
def new_subtask(request):
    return {"heap": heap_subtask}[request.param]


# -- the state every test writes ---------------------------------------------------------------
class ListAccumulatorAvg:
    """An aggregate function that mutates its accumulator in place, as user functions often do."""

    def create_accumulator(self):
        return [0, 0]

    def add(self, value, acc):
        acc[0] += value
        acc[1] += 1
        return acc

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]


def ttl(descriptor):
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(1_000_000).build())
    return descriptor


def descriptors() -> dict[str, Any]:
    return {
        "count": ValueStateDescriptor("count"),
        "events": ListStateDescriptor("events"),
        "attrs": MapStateDescriptor("attrs"),
        "sum": ReducingStateDescriptor("sum", lambda a, b: a + b),
        "avg": AggregatingStateDescriptor("avg", ListAccumulatorAvg()),
        "ttl-count": ttl(ValueStateDescriptor("ttl-count")),
        "ttl-events": ttl(ListStateDescriptor("ttl-events")),
        "ttl-attrs": ttl(MapStateDescriptor("ttl-attrs")),
        "pane": ReducingStateDescriptor("pane", lambda a, b: a + b),
    }


class Writer:
    """Writes state through the state objects and records in `expected` what each table must hold."""

    def __init__(self, sub: Subtask, now: int) -> None:
        self.sub = sub
        self.now = now
        d = descriptors()
        b = sub.backend
        self.states = {name: b.get_state(desc) for name, desc in d.items() if name != "pane"}
        self.pane = b.create_namespaced_state(d["pane"])

    def write(self, key: Any, n: int, expected: dict, timers: Counter) -> None:
        b, s, now = self.sub.backend, self.states, self.now
        b.set_current_key(key)
        s["count"].update(n)
        s["events"].add_all([n, n + 1])
        s["attrs"].put("n", n)
        s["sum"].add(n)
        s["sum"].add(2)
        s["avg"].add(n)
        s["ttl-count"].update(n * 10)
        s["ttl-events"].add(n)
        s["ttl-attrs"].put("m", n)
        window = TimeWindow(n * 10, n * 10 + 10)
        self.pane.set_current_namespace(window)
        self.pane.add(n)
        expected.update({
            ("count", key, None): n,
            ("events", key, None): [n, n + 1],
            ("attrs", key, None): {"n": n},
            ("sum", key, None): n + 2,
            ("avg", key, None): [n, 1],
            ("ttl-count", key, None): (n * 10, now),
            ("ttl-events", key, None): [(n, now)],
            ("ttl-attrs", key, None): {"m": (n, now)},
            ("pane", key, window): n,
        })
        self.sub.timers.register_event_time_timer(window, window.end - 1)
        self.sub.timers.register_processing_time_timer(None, now + 100 + n)
        timers[("event", window.end - 1, key, window)] += 1
        timers[("processing", now + 100 + n, key, None)] += 1


def table_contents(backend: HeapKeyedStateBackend) -> dict:
    return {
        (name, key, ns): value
        for name, table in backend.tables.items()
        for ns, entries in table.maps.items()
        for key, value in entries.items()
    }


def timer_contents(sub: Subtask) -> Counter:
    event, processing = sub.timers.timer_entries()
    return Counter([("event", *t) for t in event] + [("processing", *t) for t in processing])


def subtask_of(key: Any, parallelism: int) -> int:
    group = assign_to_key_group(key, MAX_P)
    return next(i for i in range(parallelism) if group in KeyGroupRange.for_subtask(MAX_P, parallelism, i))


def build(new_subtask, parallelism: int, keys: list[Any], clock: ManualClock) -> tuple[list[Subtask], dict, Counter]:
    subs = [new_subtask(parallelism=parallelism, index=i, clock=clock) for i in range(parallelism)]
    writers = [Writer(s, clock()) for s in subs]
    expected: dict = {}
    timers: Counter = Counter()
    for n, key in enumerate(keys):
        writers[subtask_of(key, parallelism)].write(key, n, expected, timers)
    return subs, expected, timers


def rescale(new_subtask, old: list[Subtask], parallelism: int, clock: ManualClock, *, serialize: bool) -> list[Subtask]:
    snaps = [snapshot_keyed(s.backend, s.timers) for s in old]
    parts: list[Any] = [serialize_keyed(s) for s in snaps] if serialize else snaps
    new = [new_subtask(parallelism=parallelism, index=i, clock=clock) for i in range(parallelism)]
    for s in new:
        restore_keyed(s.backend, s.timers, parts)
    return new


def assert_holds_exactly(subs: list[Subtask], expected: dict, timers: Counter) -> None:
    """Every entry and timer in exactly one subtask: the one whose range holds the key's group."""
    merged: dict = {}
    all_timers: Counter = Counter()
    for i, s in enumerate(subs):
        contents = table_contents(s.backend)
        assert not merged.keys() & contents.keys(), "an entry is restored in two subtasks"
        merged.update(contents)
        t = timer_contents(s)
        all_timers += t
        rng = KeyGroupRange.for_subtask(MAX_P, len(subs), i)
        assert all(assign_to_key_group(key, MAX_P) in rng for _, key, _ in contents)
        assert all(assign_to_key_group(key, MAX_P) in rng for _, _, key, _ in t)
    assert merged == expected
    assert all_timers == timers


KEYS = [f"user-{i}" for i in range(40)] + list(range(25)) + [("t", 1), ("t", 2), 3.5, None]


# -- round trips -------------------------------------------------------------------------------
@pytest.mark.parametrize("serialize", [False, True], ids=["in-memory", "serialized"])
def test_every_state_kind_round_trips_with_ttl_stamps_namespaces_and_timers(new_subtask, serialize):
    clock = ManualClock(NOW)
    old, expected, timers = build(new_subtask, 1, KEYS, clock)
    new = rescale(new_subtask, old, 1, clock, serialize=serialize)
    assert_holds_exactly(new, expected, timers)


def test_restored_state_reads_through_the_state_objects(new_subtask):
    clock = ManualClock(NOW)
    old, _, _ = build(new_subtask, 1, ["a"], clock)
    (new,) = rescale(new_subtask, old, 1, clock, serialize=True)
    b = new.backend
    b.set_current_key("a")
    d = descriptors()
    assert b.get_state(d["count"]).value() == 0
    assert b.get_state(d["events"]).get() == [0, 1]
    assert b.get_state(d["attrs"]).get("n") == 0
    assert b.get_state(d["sum"]).get() == 2
    assert b.get_state(d["avg"]).get() == 0.0
    assert b.get_state(d["ttl-count"]).value() == 0
    assert b.get_state(d["ttl-events"]).get() == [0]
    assert b.get_state(d["ttl-attrs"]).items() == [("m", 0)]
    pane = b.create_namespaced_state(d["pane"])
    pane.set_current_namespace(TimeWindow(0, 10))
    assert pane.get() == 0


def test_rescaling_2_to_1_to_4_keeps_every_keys_state_and_timers_exactly_once(new_subtask):
    clock = ManualClock(NOW)
    two, expected, timers = build(new_subtask, 2, KEYS, clock)
    assert all(table_contents(s.backend) for s in two), "both old subtasks hold keys"
    one = rescale(new_subtask, two, 1, clock, serialize=True)
    assert_holds_exactly(one, expected, timers)
    four = rescale(new_subtask, one, 4, clock, serialize=True)
    assert_holds_exactly(four, expected, timers)


def test_rescaling_3_to_2_keeps_every_keys_state_and_timers_exactly_once(new_subtask):
    clock = ManualClock(NOW)
    three, expected, timers = build(new_subtask, 3, KEYS, clock)
    assert_holds_exactly(rescale(new_subtask, three, 2, clock, serialize=True), expected, timers)


def test_snapshot_holds_only_the_key_groups_of_its_subtask_range(new_subtask):
    clock = ManualClock(NOW)
    subs, _, _ = build(new_subtask, 3, KEYS, clock)
    for i, s in enumerate(subs):
        snap = snapshot_keyed(s.backend, s.timers)
        rng = KeyGroupRange.for_subtask(MAX_P, 3, i)
        assert snap.key_group_range == rng
        groups = key_groups_of(snap)
        assert groups and all(g in rng for g in groups)
        for g, part in groups.items():
            assert all(assign_to_key_group(k, MAX_P) == g for entries in part.entries.values() for k, _, _ in entries)


def test_restored_event_timers_fire_when_the_watermark_passes(new_subtask):
    clock = ManualClock(NOW)
    old, _, _ = build(new_subtask, 1, ["a", "b"], clock)
    (new,) = rescale(new_subtask, old, 1, clock, serialize=True)
    new.timers.advance_watermark(9)
    assert new.fired == [("event", 9, "a", TimeWindow(0, 10))]


def test_overdue_processing_time_timers_fire_at_the_first_run_after_restore(new_subtask):
    clock = ManualClock(NOW)
    old, _, _ = build(new_subtask, 1, ["a", "b"], clock)
    clock.ms = NOW + 10_000  # the job was down past both timers (NOW + 100, NOW + 101)
    (new,) = rescale(new_subtask, old, 1, clock, serialize=True)
    new.pts.run_due()
    assert new.fired == [("processing", NOW + 100, "a", None), ("processing", NOW + 101, "b", None)]


# -- errors ------------------------------------------------------------------------------------
def test_a_state_redeclared_as_another_kind_is_an_error_naming_uid_and_state(new_subtask):
    clock = ManualClock(NOW)
    old, _, _ = build(new_subtask, 1, ["a"], clock)
    (new,) = rescale(new_subtask, old, 1, clock, serialize=True)
    with pytest.raises(StateAccessError, match=r"counts-uid.*'count' holds value state but is declared as list"):
        new.backend.get_state(ListStateDescriptor("count"))


def test_restoring_into_a_state_declared_as_another_kind_is_an_error(new_subtask):
    clock = ManualClock(NOW)
    old, _, _ = build(new_subtask, 1, ["a"], clock)
    snap = serialize_keyed(snapshot_keyed(old[0].backend, old[0].timers))
    new = new_subtask(parallelism=1, index=0, clock=clock)
    new.backend.get_state(MapStateDescriptor("events"))
    expected = r"counts-uid.*'events' was snapshotted as list state but is declared as map"
    with pytest.raises(StateRestoreError, match=expected):
        restore_keyed(new.backend, new.timers, [snap])


def test_switching_ttl_on_or_off_for_a_restored_state_is_an_error(new_subtask):
    clock = ManualClock(NOW)
    old, _, _ = build(new_subtask, 1, ["a"], clock)
    (new,) = rescale(new_subtask, old, 1, clock, serialize=True)
    with pytest.raises(StateAccessError, match=r"'ttl-count' holds value \(TTL\) state but is declared as value state"):
        new.backend.get_state(ValueStateDescriptor("ttl-count"))
    with pytest.raises(StateAccessError, match=r"'count' holds value state but is declared as value \(TTL\)"):
        new.backend.get_state(ttl(ValueStateDescriptor("count")))


def test_a_changed_max_parallelism_is_an_error_naming_both_values(new_subtask):
    clock = ManualClock(NOW)
    old, _, _ = build(new_subtask, 1, ["a"], clock)
    snap = snapshot_keyed(old[0].backend, old[0].timers)
    new = new_subtask(parallelism=1, index=0, max_parallelism=256, clock=clock)
    with pytest.raises(StateRestoreError, match=r"counts-uid.*max parallelism 128.*max parallelism 256"):
        restore_keyed(new.backend, new.timers, [snap])


def test_a_missing_subtask_snapshot_is_an_error_not_lost_state(new_subtask):
    clock = ManualClock(NOW)
    two, _, _ = build(new_subtask, 2, KEYS, clock)
    only_first = [snapshot_keyed(two[0].backend, two[0].timers)]
    new = new_subtask(parallelism=1, index=0, clock=clock)
    with pytest.raises(StateRestoreError, match=r"key groups .* are not all in the given snapshots"):
        restore_keyed(new.backend, new.timers, only_first)


def test_a_corrupt_key_group_is_an_error_naming_uid_and_group(new_subtask):
    clock = ManualClock(NOW)
    old, _, _ = build(new_subtask, 1, ["a"], clock)
    snap = serialize_keyed(snapshot_keyed(old[0].backend, old[0].timers))
    group = next(iter(snap.key_groups))
    broken = SerializedKeyedState(
        snap.operator_uid, snap.max_parallelism, snap.key_group_range, snap.states,
        {**snap.key_groups, group: snap.key_groups[group][:10]},
    )
    new = new_subtask(parallelism=1, index=0, clock=clock)
    with pytest.raises(StateRestoreError, match=rf"counts-uid.*key group {group} of the snapshot is corrupt"):
        restore_keyed(new.backend, new.timers, [broken])


# -- the asynchronous phase sees the state of the barrier ---------------------------------------
def test_serialization_after_the_synchronous_phase_sees_no_later_change(new_subtask):
    clock = ManualClock(NOW)
    (sub,), expected, timers = build(new_subtask, 1, KEYS[:20], clock)
    snap = snapshot_keyed(sub.backend, sub.timers)
    writer = Writer(sub, NOW + 1)

    def process(round_: int) -> None:
        """What the task goes on doing: in-place appends, puts and accumulator updates, user code
        mutating a value it read, new keys, new and deleted timers."""
        for n, key in enumerate(KEYS):
            writer.write(key, n + 1000 * round_, {}, Counter())
            sub.backend.set_current_key(key)
            writer.states["events"].add(-1)
            writer.states["attrs"].put("late", round_)
            writer.states["avg"].add(7)
            sub.timers.delete_event_time_timer(TimeWindow(n * 10, n * 10 + 10), n * 10 + 9)

    process(1)  # before the asynchronous phase starts: it must not see this
    done = threading.Event()
    result: dict[str, SerializedKeyedState] = {}

    def serialize() -> None:
        result["snap"] = serialize_keyed(snap)
        done.set()

    thread = threading.Thread(target=serialize)
    thread.start()
    rounds = 2
    while not done.is_set() or rounds < 4:  # and while it runs
        process(rounds)
        rounds += 1
    thread.join()
    restored = new_subtask(parallelism=1, index=0, clock=clock)
    restore_keyed(restored.backend, restored.timers, [result["snap"]])
    assert_holds_exactly([restored], expected, timers)


def test_live_state_does_not_share_mutable_values_with_an_in_memory_snapshot(new_subtask):
    clock = ManualClock(NOW)
    (sub,), expected, timers = build(new_subtask, 1, ["a"], clock)
    snap: KeyedStateSnapshot = snapshot_keyed(sub.backend, sub.timers)
    new = new_subtask(parallelism=1, index=0, clock=clock)
    restore_keyed(new.backend, new.timers, [snap])
    new.backend.set_current_key("a")
    new.backend.get_state(ListStateDescriptor("events")).add(99)
    again = new_subtask(parallelism=1, index=0, clock=clock)
    restore_keyed(again.backend, again.timers, [snap])
    assert_holds_exactly([again], expected, timers)


# -- property: restore(snapshot(x)) at any parallelism is x -------------------------------------
keys_st = st.one_of(
    st.integers(-(2**40), 2**40), st.text(max_size=6), st.tuples(st.integers(0, 9), st.text(max_size=3))
)
entries_st = st.dictionaries(
    keys_st,
    st.tuples(
        st.integers(),  # value state
        st.lists(st.integers(), min_size=1, max_size=3),  # list state
        st.lists(st.integers(0, 50), max_size=3),  # event timers
        st.lists(st.integers(0, 50), max_size=3),  # processing timers
        st.sampled_from([None, TimeWindow(0, 10), TimeWindow(10, 20)]),  # namespace
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=entries_st, old_p=st.integers(1, 8), new_p=st.integers(1, 8), serialize=st.booleans())
def test_restore_of_a_snapshot_at_any_parallelism_reproduces_the_state(new_subtask, data, old_p, new_p, serialize):
    clock = ManualClock(0)  # processing timers are in the future (>= 1000), so none fires
    old = [new_subtask(parallelism=old_p, index=i, clock=clock) for i in range(old_p)]
    expected: dict = {}
    timers: Counter = Counter()
    for key, (value, items, event_ts, proc_ts, ns) in data.items():
        sub = old[subtask_of(key, old_p)]
        sub.backend.set_current_key(key)
        v = sub.backend.create_namespaced_state(ValueStateDescriptor("v"))
        v.set_current_namespace(ns)
        v.update(value)
        sub.backend.get_state(ListStateDescriptor("l")).add_all(items)
        expected[("v", key, ns)] = value
        expected[("l", key, None)] = list(items)
        for ts in event_ts:
            sub.timers.register_event_time_timer(ns, ts)
        for ts in set(proc_ts):
            sub.timers.register_processing_time_timer(None, ts + 1000)
        timers.update(("event", ts, key, ns) for ts in set(event_ts))
        timers.update(("processing", ts + 1000, key, None) for ts in set(proc_ts))
    new = rescale(new_subtask, old, new_p, clock, serialize=serialize)
    assert_holds_exactly(new, expected, timers)
