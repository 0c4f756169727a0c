"""`NexmarkSource`: Nexmark events as a bounded source split among subtasks.

Subtask i of p generates the event numbers i, i+p, i+2p, ... below `events`. Striding (rather than
contiguous ranges) keeps every subtask at the same point of event time, so watermarks advance together
and windows close as they would with one subtask. The reader's position is how many of its numbers it
has emitted: all a restored reader needs, since an event is a pure function of its number.

With `rate` > 0 each subtask emits its share (rate / p per second) on a wall-clock schedule, as
Nexmark's generator does when rate-limited; it waits on an event, never spins.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from strom.common.time import Duration
from strom.common.watermark_strategy import WatermarkStrategy
from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext
from strom.connectors.nexmark.config import NexmarkConfig
from strom.connectors.nexmark.generator import EventBatchGenerator

_MAX_WAIT_S = 0.05
# Events are generated this many at a time (numpy's per-call cost is then small per event) and handed
# out in the slices the source task asks for. Measured (benchmarks.nexmark_generator): 4096 beats 8192 by
# ~15% and 2048 by ~10%; a larger batch's records no longer stay in the CPU's caches until they are used.
GENERATE_CHUNK = 4096
# Nexmark's DDL: WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
WATERMARK_DELAY_MS = 4000


class NexmarkReader(SourceReader):
    """Emits this subtask's events in batches; `last_timestamps` are their event times."""

    def __init__(
        self,
        config: NexmarkConfig,
        *,
        subtask: int,
        parallelism: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._first = subtask
        self._step = parallelism
        self._count = len(range(subtask, config.events, parallelism))
        self._emitted = 0
        self._generator = EventBatchGenerator(config)
        self._clock = clock
        self._rate = config.rate / parallelism if config.rate > 0 else 0.0
        self._paced_from: tuple[float, int] | None = None  # (clock, emitted) where pacing started
        self._cancelled = threading.Event()
        self.last_timestamps: list[int] | None = None
        self._buffer: list[Any] = []
        self._buffer_ts: list[int] = []
        self._buffer_pos = 0

    def poll(self, max_records: int) -> list[Any] | None:
        remaining = self._count - self._emitted
        if remaining <= 0:
            return None
        n = min(max_records, remaining)
        if self._rate:
            n = min(n, self._due())
            if n <= 0:
                return []
        pos = self._buffer_pos
        if pos >= len(self._buffer):
            self._fill(max(n, GENERATE_CHUNK))
            pos = 0
        end = min(pos + n, len(self._buffer))
        events = self._buffer[pos:end]
        self.last_timestamps = self._buffer_ts[pos:end]
        self._buffer_pos = end
        self._emitted += end - pos
        return events

    def _fill(self, wanted: int) -> None:
        """Generate this subtask's next `wanted` events (fewer at its end) into the buffer."""
        k = self._emitted
        n = min(wanted, self._count - k)
        start = self._first + k * self._step
        numbers = np.arange(start, start + n * self._step, self._step, dtype=np.int64)
        self._buffer, self._buffer_ts = self._generator.generate(numbers)
        self._buffer_pos = 0

    def _due(self) -> int:
        """How many events the wall-clock schedule allows now; waits briefly when none."""
        now = self._clock()
        if self._paced_from is None:
            self._paced_from = (now, self._emitted)
        start, emitted_at_start = self._paced_from
        due = int((now - start) * self._rate) + 1 - (self._emitted - emitted_at_start)
        if due <= 0:
            next_at = start + (self._emitted - emitted_at_start) / self._rate
            self._cancelled.wait(min(_MAX_WAIT_S, max(0.0, next_at - now)))
        return due

    def snapshot_position(self) -> int:
        """How many of this subtask's events were emitted."""
        return self._emitted

    def restore_position(self, position: int) -> None:
        self._emitted = int(position)
        self._buffer, self._buffer_ts, self._buffer_pos = [], [], 0
        self._paced_from = None

    def pending_records(self) -> int:
        return max(0, self._count - self._emitted)

    def cancel(self) -> None:
        self._cancelled.set()


class NexmarkSource(Source):
    """`NexmarkSource(events=1_000_000)` or `NexmarkSource(NexmarkConfig(...))`; keyword arguments are
    NexmarkConfig's fields (`rate`, `event_rate`, `out_of_order_group_size`, proportions, ...)."""

    name = "Nexmark Source"

    def __init__(self, config: NexmarkConfig | None = None, **fields: Any) -> None:
        if config is not None and fields:
            raise TypeError("NexmarkSource takes a NexmarkConfig or its fields as keywords, not both")
        self.config = config if config is not None else NexmarkConfig(**fields)

    @staticmethod
    def watermark_strategy() -> WatermarkStrategy:
        """Nexmark's watermark: 4 s behind the largest event time seen (timestamps come from the reader)."""
        return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(WATERMARK_DELAY_MS))

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        return NexmarkReader(self.config, subtask=context.subtask_index, parallelism=context.parallelism)
