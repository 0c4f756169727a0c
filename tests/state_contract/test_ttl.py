"""Contract: state time-to-live behaves the same on every backend (one TTL layer over each).

Worked by hand, TTL 100 ms, clock in ms: an entry written at 0 expires at 100; a read at 60
under OnReadAndWrite moves its expiry to 160; at 120 an expired entry is gone under
NeverReturnExpired, and still returned under ReturnExpiredIfNotCleanedUp when nothing cleaned
it up (background cleanup off). List elements and map entries carry their own stamps.
"""

from __future__ import annotations

from typing import Any

import pytest
from strom.datastream import AggregateFunction
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from strom.runtime.tasks.processing_time import ManualClock

from tests.state_contract.conftest import MakeBackend

TTL_MS = 100
KINDS = ["value", "list", "map", "reducing", "aggregating"]


class Sum(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, acc: int) -> int:
        return acc + value

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


def _descriptor(kind: str, ttl: StateTtlConfig) -> StateDescriptor:
    d: StateDescriptor = {
        "value": lambda: ValueStateDescriptor(kind),
        "list": lambda: ListStateDescriptor(kind),
        "map": lambda: MapStateDescriptor(kind),
        "reducing": lambda: ReducingStateDescriptor(kind, lambda a, b: a + b),
        "aggregating": lambda: AggregatingStateDescriptor(kind, Sum()),
    }[kind]()
    d.enable_time_to_live(ttl)
    return d


def _ttl(*, on_read: bool = False, return_expired: bool = False, cleanup: bool = True, size: int = 5) -> StateTtlConfig:
    b = StateTtlConfig.new_builder(TTL_MS)
    if on_read:
        b.update_ttl_on_read_and_write()
    if return_expired:
        b.return_expired_if_not_cleaned_up()
    if cleanup:
        b.cleanup_incrementally(size, False)
    else:
        b.disable_cleanup_in_background()
    return b.build()


def _write(kind: str, state: Any, n: int) -> None:
    if kind == "value":
        state.update(n)
    elif kind == "map":
        state.put(f"k{n}", n)
    else:
        state.add(n)


def _read(kind: str, state: Any) -> Any:
    """What the state shows, in one comparable form (None when empty)."""
    if kind == "value":
        return state.value()
    if kind == "list":
        return state.get() or None
    if kind == "map":
        return dict(state.items()) or None
    return state.get()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("on_read", [False, True], ids=["on-write", "on-read"])
@pytest.mark.parametrize("return_expired", [False, True], ids=["never-expired", "return-expired"])
def test_an_entry_expires_ttl_after_its_last_stamp(
    make_backend: MakeBackend, clock: ManualClock, kind: str, on_read: bool, return_expired: bool
):
    backend = make_backend(clock=clock)
    state = backend.get_state(_descriptor(kind, _ttl(on_read=on_read, return_expired=return_expired, cleanup=False)))
    backend.set_current_key("k")
    _write(kind, state, 5)
    clock.advance(60)
    written = {"value": 5, "list": [5], "map": {"k5": 5}, "reducing": 5, "aggregating": 5}[kind]
    assert _read(kind, state) == written  # at 60: alive; under OnReadAndWrite this read restamps it
    clock.advance(60)  # 120
    alive = on_read or return_expired
    assert _read(kind, state) == (written if alive else None)
    clock.advance(200)  # 320: past every stamp
    assert _read(kind, state) == (written if return_expired else None)


@pytest.mark.parametrize("kind", ["list", "map"])
def test_list_elements_and_map_entries_expire_one_by_one(make_backend: MakeBackend, clock: ManualClock, kind: str):
    backend = make_backend(clock=clock)
    state = backend.get_state(_descriptor(kind, _ttl()))
    backend.set_current_key("k")
    _write(kind, state, 1)
    clock.advance(60)
    _write(kind, state, 2)
    clock.advance(60)  # 120: the first expired at 100, the second lives until 160
    assert _read(kind, state) == ([2] if kind == "list" else {"k2": 2})
    clock.advance(40)  # 160
    assert _read(kind, state) is None


@pytest.mark.parametrize("kind", ["reducing", "aggregating"])
def test_adding_to_an_expired_accumulator_starts_a_new_one(make_backend: MakeBackend, clock: ManualClock, kind: str):
    backend = make_backend(clock=clock)
    state = backend.get_state(_descriptor(kind, _ttl(return_expired=True, cleanup=False)))
    backend.set_current_key("k")
    state.add(3)
    clock.advance(60)
    state.add(4)  # a write restamps the whole accumulator: lives until 160
    clock.advance(60)
    assert state.get() == 7
    clock.advance(100)  # 220: expired (returned while not cleaned up)
    assert state.get() == 7
    state.add(1)
    assert state.get() == 1


def test_values_written_before_expiry_are_stamped_at_their_write(make_backend: MakeBackend, clock: ManualClock):
    """A value updated at 90 lives until 190 even though it was first written at 0."""
    backend = make_backend(clock=clock)
    state = backend.get_state(_descriptor("value", _ttl()))
    backend.set_current_key("k")
    state.update(1)
    clock.advance(90)
    state.update(2)
    clock.advance(99)  # 189
    assert state.value() == 2
    clock.advance(1)  # 190
    assert state.value() is None


@pytest.mark.parametrize("kind", KINDS)
def test_incremental_cleanup_drops_expired_entries_that_are_never_read_again(
    make_backend: MakeBackend, clock: ManualClock, kind: str
):
    """200 keys written at 0, then only key 'live' is accessed after expiry: the accesses clean up the
    others a few at a time (5 per access; RocksDB in batches), so after enough of them one remains."""
    backend = make_backend(clock=clock)
    state = backend.get_state(_descriptor(kind, _ttl(size=5)))
    for i in range(200):
        backend.set_current_key(i)
        _write(kind, state, i)
    clock.advance(TTL_MS)
    backend.set_current_key("live")
    for i in range(200):
        _write(kind, state, i)
        if backend.num_entries() == 1:
            break
    assert backend.num_entries() == 1
    assert backend.keys(kind) == ["live"]


def test_without_background_cleanup_expired_entries_stay_until_read(make_backend: MakeBackend, clock: ManualClock):
    backend = make_backend(clock=clock)
    state = backend.get_state(_descriptor("value", _ttl(cleanup=False)))
    for i in range(50):
        backend.set_current_key(i)
        state.update(i)
    clock.advance(TTL_MS)
    backend.set_current_key("live")
    for i in range(200):
        state.update(i)
    assert backend.num_entries() == 51
    backend.set_current_key(3)
    assert state.value() is None  # the read drops it
    assert backend.num_entries() == 50
