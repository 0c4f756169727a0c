"""Timer service: event-time and processing-time timers per (key, namespace, timestamp).

A timer is registered at most once per (key, namespace, timestamp) (de-duplicated, as
in Flink). Event-time timers fire when the watermark reaches them, in timestamp order,
with their key set as the current key; the operator forwards the watermark only after.
Processing-time timers are scheduled on the task's processing-time service.

The live timers are a set; a heap orders them for firing. A deleted timer stays in the heap
until popped (removing it would cost more), and an event-time timer enters the heap only when
the watermark next moves, so a timer deleted before that (a session window's timer moves
with every element of the session) never costs a push and a pop.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strom.common.time import MIN_WATERMARK

_NEW_TIMERS_MAX = 65_536  # event-time timers registered between two watermarks before the heap takes them


@dataclass(frozen=True, slots=True)
class InternalTimer:
    timestamp: int
    key: Any
    namespace: Any


class InternalTimerService:
    def __init__(
        self,
        *,
        backend: Any,
        on_event_time: Callable[[InternalTimer], None],
        on_processing_time: Callable[[InternalTimer], None],
        processing_time_service: Any,
    ) -> None:
        self.backend = backend
        self._on_event_time = on_event_time
        self._on_processing_time = on_processing_time
        self._pts = processing_time_service
        self._event_heap: list[tuple[int, int, Any, Any]] = []
        self._event_set: set[tuple[int, Any, Any]] = set()
        self._event_new: list[tuple[int, Any, Any]] = []  # registered since the heap was last filled
        self._proc_heap: list[tuple[int, int, Any, Any]] = []
        self._proc_set: set[tuple[int, Any, Any]] = set()
        self._seq = itertools.count()
        self._scheduled_proc: int | None = None
        self.current_watermark = MIN_WATERMARK

    # -- registration (for the current key) ----------------------------------------------------
    # hot path: called per record by most window triggers
    def register_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        entry = (timestamp, self.backend.current_key, namespace)
        if entry not in self._event_set:
            self._event_set.add(entry)
            new = self._event_new
            new.append(entry)
            if len(new) >= _NEW_TIMERS_MAX:  # without watermarks for long: keep the list short
                self._fill_event_heap()

    def _fill_event_heap(self) -> None:
        """Timers registered since the last call into the heap, in registration order (the heap's order
        among equal timestamps), less those deleted since."""
        new = self._event_new
        if new:
            heap, live, seq = self._event_heap, self._event_set, self._seq
            push = heapq.heappush
            for entry in new:
                if entry in live:
                    push(heap, (entry[0], next(seq), entry[1], entry[2]))
            new.clear()

    def delete_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        self._event_set.discard((timestamp, self.backend.current_key, namespace))

    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        entry = (timestamp, self.backend.current_key, namespace)
        if entry in self._proc_set:
            return
        self._proc_set.add(entry)
        heapq.heappush(self._proc_heap, (timestamp, next(self._seq), entry[1], namespace))
        if self._scheduled_proc is None or timestamp < self._scheduled_proc:
            self._scheduled_proc = timestamp
            self._pts.register_timer(timestamp, self._fire_processing_timers)

    def delete_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        self._proc_set.discard((timestamp, self.backend.current_key, namespace))

    # -- firing ---------------------------------------------------------------------------------
    def advance_watermark(self, watermark: int) -> None:
        self.current_watermark = watermark
        heap, live, backend, new = self._event_heap, self._event_set, self.backend, self._event_new
        while True:
            if new:  # also timers that firing ones registered: those now due fire in this pass, as in Flink
                self._fill_event_heap()
            if not heap or heap[0][0] > watermark:
                break
            ts, _, key, ns = heapq.heappop(heap)
            entry = (ts, key, ns)
            if entry not in live:
                continue  # deleted
            live.discard(entry)
            backend.current_key = key
            self._on_event_time(InternalTimer(ts, key, ns))

    def _fire_processing_timers(self, now: int) -> None:
        self._scheduled_proc = None
        heap, live, backend = self._proc_heap, self._proc_set, self.backend
        while heap and heap[0][0] <= now:
            ts, _, key, ns = heapq.heappop(heap)
            entry = (ts, key, ns)
            if entry not in live:
                continue
            live.discard(entry)
            backend.current_key = key
            self._on_processing_time(InternalTimer(ts, key, ns))
        if heap:
            nxt = heap[0][0]
            self._scheduled_proc = nxt
            self._pts.register_timer(nxt, self._fire_processing_timers)

    def current_processing_time(self) -> int:
        now: int = self._pts.now()
        return now

    def num_event_time_timers(self) -> int:
        return len(self._event_set)

    def num_processing_time_timers(self) -> int:
        return len(self._proc_set)

    def timer_entries(self) -> tuple[list[tuple[int, Any, Any]], list[tuple[int, Any, Any]]]:
        """Copies of the live (event-time, processing-time) timers as (timestamp, key, namespace).

        Unsorted, so that a checkpoint's synchronous phase copies them in O(n)."""
        return list(self._event_set), list(self._proc_set)

    def event_timers(self) -> list[tuple[int, Any, Any]]:
        return sorted(self._event_set, key=lambda e: e[0])

    def processing_timers(self) -> list[tuple[int, Any, Any]]:
        return sorted(self._proc_set, key=lambda e: e[0])
