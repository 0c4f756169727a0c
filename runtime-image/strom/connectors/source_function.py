"""`SourceFunctionSource`: runs a legacy `SourceFunction` behind `env.add_source`.

The function's `run(ctx)` runs in a helper thread and hands records through a bounded
buffer, so a fast function is back-pressured by the task instead of filling memory.
Timestamps given with `ctx.collect_with_timestamp` travel with the records: after each
poll the reader exposes them as `last_timestamps` (None when the batch has none). The
source ends when run() returns; an exception raised in run() is re-raised in the task;
cancelling the reader calls the function's cancel() and releases a blocked collect().
"""

from __future__ import annotations

import threading
from typing import Any

from strom.common import config_options as opts
from strom.common.record_size import record_size
from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext

_MAX_POLL_WAIT_S = 0.05
# How long close() waits for run() to return after cancel(); the thread is a daemon.
_JOIN_TIMEOUT_S = 1.0


class SourceFunctionContext:
    """What run(ctx) sees (Flink's SourceFunction.SourceContext)."""

    def __init__(self, reader: SourceFunctionReader) -> None:
        self._reader = reader
        # Flink sources emit and update their state under this lock, so that a checkpoint
        # taken under it sees state and emitted records agree.
        self._checkpoint_lock = threading.RLock()

    def collect(self, value: Any) -> None:
        self._reader._put(value, None)

    def collect_with_timestamp(self, value: Any, timestamp: int) -> None:
        self._reader._put(value, timestamp)

    def get_checkpoint_lock(self) -> threading.RLock:
        return self._checkpoint_lock


class SourceFunctionReader(SourceReader):
    def __init__(self, function: Any, capacity: int, capacity_bytes: int = 32 * 1024) -> None:
        self._function = function
        self._max_capacity = capacity
        self._capacity_bytes = capacity_bytes
        self._capacity = capacity  # records the queue holds: capacity_bytes by the size of its first record
        self._cond = threading.Condition()
        self._values: list[Any] = []
        self._timestamps: list[Any] | None = None  # created at the first timestamped record
        self._done = False
        self._failure: BaseException | None = None
        self._cancelled = False
        self.last_timestamps: list[Any] | None = None
        self._thread = threading.Thread(target=self._run, name=f"SourceFunction {type(function).__name__}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._function.run(SourceFunctionContext(self))
        except BaseException as e:  # noqa: BLE001 - handed to the task thread, which fails the task
            with self._cond:
                self._failure = e
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    # hot path: called per record, in the function's thread
    def _put(self, value: Any, timestamp: int | None) -> None:
        with self._cond:
            while len(self._values) >= self._capacity and not self._cancelled:
                self._cond.wait()
            if self._cancelled:
                return  # records emitted after cancel() are dropped, as Flink drops them
            if not self._values:
                self._capacity = max(1, min(self._max_capacity, self._capacity_bytes // record_size(value)))
            self._values.append(value)
            if timestamp is not None and self._timestamps is None:
                self._timestamps = [None] * (len(self._values) - 1)
            if self._timestamps is not None:
                self._timestamps.append(timestamp)
            if len(self._values) == 1:
                self._cond.notify_all()

    def poll(self, max_records: int) -> list[Any] | None:
        with self._cond:
            if self._failure is not None:
                raise self._failure
            if not self._values:
                if self._done:
                    return None
                # Wait for the function's next record, then report "nothing available" ([]) even if it
                # came: the task counts such a poll as idle, so a function that sleeps between records
                # (a rate-limited source) shows as idle, not busy. The next poll takes what arrived.
                self._cond.wait(_MAX_POLL_WAIT_S)
                if self._failure is not None:
                    raise self._failure
                self.last_timestamps = None
                return [] if self._values or not self._done else None
            values, ts = self._values, self._timestamps
            if len(values) > max_records:
                self._values = values[max_records:]
                values = values[:max_records]
                if ts is not None:
                    self._timestamps = ts[max_records:]
                    ts = ts[:max_records]
            else:
                self._values = []
                self._timestamps = None
            self._cond.notify_all()  # room again for a blocked collect()
        self.last_timestamps = ts
        return values

    def cancel(self) -> None:
        with self._cond:
            if self._cancelled:
                return
            self._cancelled = True
            self._cond.notify_all()
        self._function.cancel()

    def close(self) -> None:
        if self._thread.is_alive():
            self.cancel()
            self._thread.join(_JOIN_TIMEOUT_S)
        close = getattr(self._function, "close", None)
        if callable(close):
            close()


class SourceFunctionSource(Source):
    name = "Custom Source"

    def __init__(self, source_function: Any) -> None:
        if not callable(getattr(source_function, "run", None)):
            raise TypeError(f"add_source expects a SourceFunction with run(ctx), got {source_function!r}")
        self.source_function = source_function

    def get_boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED  # as Flink treats every legacy source

    @property
    def max_parallelism(self) -> int | None:
        return 1

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        fn = self.source_function
        open_fn = getattr(fn, "open", None)
        if callable(open_fn) and context.runtime_context is not None:
            open_fn(context.runtime_context)
        config = context.config
        if config is None:
            return SourceFunctionReader(fn, 1024)
        return SourceFunctionReader(fn, config.get(opts.BUFFER_RECORDS), config.get(opts.SEGMENT_SIZE))
