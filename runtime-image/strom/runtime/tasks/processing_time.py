"""Processing-time service of a task: wall-clock now() and timers run in the task thread.

Tests inject a manual clock to drive processing time deterministically.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


def system_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ProcessingTimeService:
    def __init__(self, clock: Callable[[], int] = system_clock_ms) -> None:
        self.now = clock
        self._heap: list[tuple[int, int, Callable[[int], None]]] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> None:
        with self._lock:
            heapq.heappush(self._heap, (timestamp, next(self._seq), callback))

    def next_deadline(self) -> int | None:
        heap = self._heap
        return heap[0][0] if heap else None

    def run_due(self) -> None:
        heap = self._heap
        if not heap:
            return
        now = self.now()
        while heap and heap[0][0] <= now:
            with self._lock:
                ts, _, cb = heapq.heappop(heap)
            cb(max(now, ts))


class ManualClock:
    """A clock for tests: time moves only when told."""

    def __init__(self, start_ms: int = 0) -> None:
        self.ms = start_ms

    def __call__(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms
