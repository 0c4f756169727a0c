"""The timer service against a plain-Python reference: random registrations and deletions of event-time
and processing-time timers (repeats included), watermarks and clock moves, and timers that register and
delete others while firing. Each timer fires once, only if it is live when its time comes, in timestamp
order, with its key current; a timer registered while others fire fires in the same pass if it is due.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from strom.runtime.state import timers as timers_module
from strom.runtime.state.timers import InternalTimer, InternalTimerService
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService


class FakeBackend:
    """What the timer service needs of a keyed backend: the current key."""

    current_key: Any = None


class Reference:
    """Live timers as a set; firing takes the smallest due timestamp first."""

    def __init__(self) -> None:
        self.live: set[tuple[int, str, str]] = set()

    def due(self, time: int) -> tuple[int, str, str] | None:
        due = [t for t in self.live if t[0] <= time]
        return min(due) if due else None


def _callback_actions(timer: tuple[int, str, str]) -> list[tuple[str, tuple[int, str, str]]]:
    """What a firing timer does, decided by the timer alone: register timers later than itself, some due in
    this same pass. Only registrations, which commute, so timers of equal timestamps may fire in any order
    (Flink leaves it open); a deletion while firing is the hand-worked test below."""
    rnd = random.Random(repr(timer))
    ts = timer[0]
    return [
        ("register", (ts + rnd.randint(1, 6), rnd.choice("xyz"), rnd.choice("pq")))
        for _ in range(rnd.choice([0, 0, 1, 2]))
    ]


class EventTimeJob:
    """A timer service whose timers, firing, record themselves and register what `_callback_actions` says."""

    def __init__(self) -> None:
        self.backend = FakeBackend()
        self.fired: list[tuple[int, str, str]] = []
        self.service = InternalTimerService(
            backend=self.backend, on_event_time=self.on_event_time, on_processing_time=lambda t: None,
            processing_time_service=ProcessingTimeService(ManualClock(0)),
        )

    def on_event_time(self, timer: InternalTimer) -> None:
        assert self.backend.current_key == timer.key  # the timer's key is current while it fires
        t = (timer.timestamp, timer.key, timer.namespace)
        self.fired.append(t)
        for _, (ts, key, ns) in _callback_actions(t):
            self.backend.current_key = key
            self.service.register_event_time_timer(ns, ts)


@pytest.mark.parametrize("new_timers_max", [65_536, 3])
def test_event_time_timers_fire_once_in_timestamp_order_as_a_plain_python_replay(monkeypatch, new_timers_max):
    monkeypatch.setattr(timers_module, "_NEW_TIMERS_MAX", new_timers_max)  # 3: the heap also fills on register
    rnd = random.Random(new_timers_max)
    fired_in_pass_by_callbacks = 0
    for _ in range(200):
        job = EventTimeJob()
        backend, fired, service = job.backend, job.fired, job.service
        ref = Reference()
        watermark = -10
        for _ in range(rnd.randint(1, 60)):
            op = rnd.random()
            timer = (rnd.randint(watermark - 2, watermark + 15), rnd.choice("xyz"), rnd.choice("pq"))
            backend.current_key = timer[1]
            if op < 0.5:
                service.register_event_time_timer(timer[2], timer[0])
                ref.live.add(timer)  # one at or before the watermark fires when the watermark next moves
            elif op < 0.75:
                service.delete_event_time_timer(timer[2], timer[0])
                ref.live.discard(timer)
            else:
                watermark += rnd.randint(0, 8)
                fired.clear()
                service.advance_watermark(watermark)
                want = []
                while (t := ref.due(watermark)) is not None:
                    ref.live.discard(t)
                    want.append(t)
                    for _, other in _callback_actions(t):
                        ref.live.add(other)
                        fired_in_pass_by_callbacks += other[0] <= watermark
                assert [t[0] for t in fired] == sorted(t[0] for t in fired)  # timestamp order
                assert sorted(fired) == want  # each due live timer once, none deleted, none early
            assert sorted(service.timer_entries()[0]) == sorted(ref.live)
            assert service.num_event_time_timers() == len(ref.live)
    assert fired_in_pass_by_callbacks > 20  # timers registered while firing and already due do occur


def test_a_timer_registered_while_firing_at_a_passed_time_fires_in_the_same_pass():
    """Worked by hand: the watermark goes to 10; the timer at 5 registers one at 3 and one at 12 and deletes
    the one at 8; 3 fires next in the same pass (before 7), 8 never, 12 at the next watermark."""
    backend = FakeBackend()
    fired: list[int] = []
    service: InternalTimerService

    def on_event_time(timer: InternalTimer) -> None:
        fired.append(timer.timestamp)
        if timer.timestamp == 5:
            service.register_event_time_timer("w", 3)
            service.register_event_time_timer("w", 12)
            service.delete_event_time_timer("w", 8)

    service = InternalTimerService(
        backend=backend, on_event_time=on_event_time, on_processing_time=lambda t: None,
        processing_time_service=ProcessingTimeService(ManualClock(0)),
    )
    backend.current_key = "k"
    for ts in (7, 5, 8, 20):
        service.register_event_time_timer("w", ts)
    service.advance_watermark(10)
    assert fired == [5, 3, 7]
    service.advance_watermark(15)
    assert fired == [5, 3, 7, 12]


def test_processing_time_timers_fire_once_in_timestamp_order_as_a_plain_python_replay():
    rnd = random.Random(11)
    for _ in range(200):
        backend = FakeBackend()
        clock = ManualClock(0)
        pts = ProcessingTimeService(clock)
        fired: list[tuple[int, str, str]] = []

        def on_processing_time(timer: InternalTimer, backend: FakeBackend = backend, fired: list = fired) -> None:
            assert backend.current_key == timer.key
            fired.append((timer.timestamp, timer.key, timer.namespace))

        service = InternalTimerService(
            backend=backend, on_event_time=lambda t: None, on_processing_time=on_processing_time,
            processing_time_service=pts,
        )
        ref = Reference()
        for _ in range(rnd.randint(1, 60)):
            op = rnd.random()
            timer = (rnd.randint(clock.ms + 1, clock.ms + 15), rnd.choice("xyz"), rnd.choice("pq"))
            backend.current_key = timer[1]
            if op < 0.5:
                service.register_processing_time_timer(timer[2], timer[0])
                ref.live.add(timer)
            elif op < 0.75:
                service.delete_processing_time_timer(timer[2], timer[0])
                ref.live.discard(timer)
            else:
                clock.ms += rnd.randint(0, 8)
                fired.clear()
                pts.run_due()
                want = []
                while (t := ref.due(clock.ms)) is not None:
                    ref.live.discard(t)
                    want.append(t)
                assert [t[0] for t in fired] == sorted(t[0] for t in fired)
                assert sorted(fired) == want
            assert sorted(service.timer_entries()[1]) == sorted(ref.live)
