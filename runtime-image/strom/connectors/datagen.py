"""`DataGeneratorSource`: records made by a generator function from indexes (Flink's Java DataGeneratorSource).

The function maps index 0..count-1 to a record. Bounded: the indexes are split into
contiguous ranges among subtasks, as NumberSequenceSource splits numbers. Unbounded
(`count=None`): subtask i generates i, i+p, i+2p, ... forever. An optional rate limit
(records per second over all subtasks) is shared evenly among subtasks and enforced by
a token bucket that waits on an event, never by spinning.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext
from strom.connectors.index_splits import IndexSplitCursor, Split, redistribute

_MAX_POLL_WAIT_S = 0.05


class TokenBucket:
    """Permits at `rate` per second, at most one second's worth saved up (as Guava's
    SmoothBursty, which Flink's rate limiter uses). Pure arithmetic over an injected clock."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError(f"rate limit must be positive, got {rate}")
        self.rate = rate
        self._clock = clock
        self._capacity = max(1.0, rate)
        self._tokens = 1.0  # the first record goes out at once
        self._last = clock()

    def take(self, wanted: int) -> int:
        """Up to `wanted` permits available now."""
        now = self._clock()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now
        granted = min(wanted, int(self._tokens))
        self._tokens -= granted
        return granted

    def seconds_until_next(self) -> float:
        return max(0.0, (1.0 - self._tokens) / self.rate)


class DataGeneratorReader(SourceReader):
    """Generates the indexes of its index splits in increasing order: next, next + step, ... below
    `end` (None: forever). The splits with their next indexes are the reader's whole state, so a
    checkpoint keeps them and a restored reader resumes exactly, at any parallelism."""

    def __init__(
        self,
        generator: Callable[[int], Any],
        *,
        start: int,
        step: int,
        end: int | None,
        bucket: TokenBucket | None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._generate = generator
        self._cursor = IndexSplitCursor([(start, step, end)])
        self._bucket = bucket
        self._on_close = on_close
        self._cancelled = threading.Event()

    def poll(self, max_records: int) -> list[Any] | None:
        remaining = self._cursor.remaining()
        n = max_records if remaining is None else min(max_records, remaining)
        if n <= 0:
            return None
        if self._bucket is not None:
            n = self._bucket.take(n)
            if n == 0:
                # Wait for the next permit, then say "nothing available" ([]) rather than emit: the task
                # counts a poll that gave nothing as idle, so the wait is idle time, as behind the
                # availability future of Flink's RateLimitedSourceReader. The next poll takes the permit.
                self._cancelled.wait(min(_MAX_POLL_WAIT_S, self._bucket.seconds_until_next()))
                return []
        indexes = self._cursor.take(n) or []
        gen = self._generate
        return [gen(i) for i in indexes]

    def snapshot_splits(self) -> list[Split]:
        return list(self._cursor.splits)

    def restore_splits(self, splits: list[Split]) -> None:
        self._cursor = IndexSplitCursor(splits)

    def pending_records(self) -> int | None:
        """Records this reader has yet to generate; None when unbounded (no backlog to speak of)."""
        return self._cursor.remaining()

    def cancel(self) -> None:
        self._cancelled.set()

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()
            self._on_close = None


class DataGeneratorSource(Source):
    name = "DataGeneratorSource"

    def __init__(
        self,
        generator_function: Any,
        count: int | None,
        rate_limit: float | None = None,
        type_info: Any = None,
    ) -> None:
        if count is not None and (not isinstance(count, int) or count < 0):
            raise ValueError(f"DataGeneratorSource: count must be a non-negative integer or None, got {count!r}")
        if rate_limit is not None and rate_limit <= 0:
            raise ValueError(f"DataGeneratorSource: rate_limit must be positive records/s, got {rate_limit!r}")
        if not callable(generator_function) and not callable(getattr(generator_function, "map", None)):
            raise TypeError(
                "DataGeneratorSource: generator_function must be a callable index -> record "
                f"or a GeneratorFunction with map(index), got {generator_function!r}"
            )
        self.generator_function = generator_function
        self.count = count
        self.rate_limit = rate_limit
        self.type_info = type_info

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED if self.count is not None else Boundedness.CONTINUOUS_UNBOUNDED

    def get_produced_type(self) -> Any:
        return self.type_info

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        p, i = context.parallelism, context.subtask_index
        fn = self.generator_function
        # A GeneratorFunction object (map/open/close, as in Java) or a plain callable.
        generate = fn.map if callable(getattr(fn, "map", None)) else fn
        open_fn = getattr(fn, "open", None)
        if callable(open_fn) and generate is not fn:
            open_fn(context)
        close_fn = getattr(fn, "close", None)
        on_close = close_fn if callable(close_fn) and generate is not fn else None
        bucket = TokenBucket(self.rate_limit / p) if self.rate_limit is not None else None
        if self.count is None:
            return DataGeneratorReader(generate, start=i, step=p, end=None, bucket=bucket, on_close=on_close)
        lo, hi = self.count * i // p, self.count * (i + 1) // p
        return DataGeneratorReader(generate, start=lo, step=1, end=hi, bucket=bucket, on_close=on_close)

    def redistribute_splits(self, splits: list[Split], subtask_index: int, parallelism: int) -> list[Split]:
        return redistribute(splits, subtask_index, parallelism)
