"""AlignedWindowAggregator: the window operator's fast path for aligned time windows.

It applies when the assigner is tumbling or sliding (event or processing time), the
trigger is the assigner's default, there is no evictor and the function is an
incremental reduce or aggregate. Then a record's windows follow from its timestamp by
arithmetic, and the default trigger's decisions are known in advance: fire at
max_timestamp, fire again at once for an element that arrives within the allowed
lateness, clean up at max_timestamp + allowed_lateness.

Accumulators live in the window-contents state table of the keyed backend (namespace =
TimeWindow, then key), exactly where the generic path keeps them, so state stays
addressable by key and window for snapshots. Timers are the same per (key, window)
timers, registered once, when a pane's accumulator is created.
"""

from __future__ import annotations

from typing import Any

from strom.common.time import MAX_WATERMARK, MIN_WATERMARK
from strom.datastream.windowing.assigners import (
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from strom.datastream.windowing.triggers import EventTimeTrigger, ProcessingTimeTrigger
from strom.datastream.windowing.windows import TimeWindow

_MISSING = object()
_ALIGNED = (
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
)


class AlignedWindowAggregator:
    @staticmethod
    def applies(op: Any) -> bool:
        assigner = op.assigner
        if type(assigner) not in _ALIGNED or op.evictor is not None or op.contents_kind == "list":
            return False
        default = EventTimeTrigger if op.is_event_time else ProcessingTimeTrigger
        return type(op.trigger) is default

    def __init__(self, op: Any) -> None:
        self.op = op
        a = op.assigner
        self.size: int = a.size
        self.slide: int = getattr(a, "slide", a.size)
        self.offset: int = a.offset
        self.tumbling = self.slide == self.size
        self.event_time: bool = op.is_event_time
        self.lateness: int = op.allowed_lateness if self.event_time else 0
        self.is_aggregate = op.contents_kind == "aggregate"
        if self.is_aggregate:
            agg = op.params["aggregate_function"]
            self.add = agg.add
            self.create_accumulator = agg.create_accumulator
            self.get_result = agg.get_result
        else:
            self.reduce = op.params["reduce_function"].reduce
        self.table = op.window_state.table
        # window start -> that window's {key: accumulator} map in the state table, and the window
        self.maps: dict[int, dict[Any, Any]] = {}
        self.windows: dict[int, TimeWindow] = {}
        self.backend = op.backend
        self.timers = op.timer_service

    # -- panes ------------------------------------------------------------------------------------
    def _namespace(self, start: int) -> dict[Any, Any]:
        window = TimeWindow(start, start + self.size)
        m = self.table.map_for(window)
        self.maps[start] = m
        self.windows[start] = window
        return m

    def _new_pane(self, key: Any, start: int, watermark: int) -> None:
        """Timers of a pane that just got its first element (what the default trigger would register)."""
        window = self.windows[start]
        self.backend.current_key = key
        max_ts = window.end - 1
        if not self.event_time:
            self.timers.register_processing_time_timer(window, max_ts)
            return
        if max_ts > watermark:
            self.timers.register_event_time_timer(window, max_ts)
        cleanup = max_ts + self.lateness
        if cleanup != max_ts and cleanup < MAX_WATERMARK:
            self.timers.register_event_time_timer(window, cleanup)

    def _first(self, value: Any) -> Any:
        """The accumulator of a pane whose first element is `value`."""
        return self.add(value, self.create_accumulator()) if self.is_aggregate else value

    def _emit(self, key: Any, window: TimeWindow, acc: Any) -> None:
        result = self.get_result(acc) if self.is_aggregate else acc
        runner = self.op.runner
        if runner.kind is None:
            self.op.out_values.append(result)
            self.op.out_timestamps.append(window.end - 1)
        else:
            self.backend.current_key = key
            self.op.emit_pane(key, window, [result])

    def _bounds(self) -> tuple[int, int]:
        """(late_start, refire_start): a window starting at or before late_start is past its
        cleanup time; one starting at or before refire_start is past its end (fires at once)."""
        if not self.event_time:
            return MIN_WATERMARK, MIN_WATERMARK
        wm = self.op.current_watermark
        refire = wm - self.size + 1
        return refire - self.lateness, refire

    # -- records ----------------------------------------------------------------------------------
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any]) -> None:
        if self.event_time:
            if timestamps is None:
                raise self.op.no_timestamp_error()
        else:
            timestamps = [self.op.ctx.processing_time_service.now()] * len(values)
        try:
            if not self.tumbling:
                late = self._sliding(values, timestamps, keys)
            elif self.is_aggregate:
                late = self._tumbling_aggregate(values, timestamps, keys)
            else:
                late = self._tumbling_reduce(values, timestamps, keys)
        except TypeError:
            if any(t is None for t in timestamps):
                raise self.op.no_timestamp_error() from None
            raise
        if late:
            self.op.emit_late([v for v, _ in late], [t for _, t in late])

    def _tumbling_reduce(self, values: list[Any], timestamps: list[Any], keys: list[Any]) -> list[Any] | None:
        size, offset = self.size, self.offset
        late_start, refire_start = self._bounds()
        maps, reduce, missing = self.maps, self.reduce, _MISSING
        late = None
        # hot path: called per record
        for k, v, ts in zip(keys, values, timestamps, strict=True):
            start = ts - (ts - offset) % size
            if start <= late_start:
                if late is None:
                    late = []
                late.append((v, ts))
                continue
            m = maps.get(start)
            if m is None:
                m = self._namespace(start)
            acc = m.get(k, missing)
            if acc is missing:
                acc = m[k] = v
                self._new_pane(k, start, self.op.current_watermark)
            else:
                acc = m[k] = reduce(acc, v)
            if start <= refire_start:
                self._emit(k, self.windows[start], acc)
        return late

    def _tumbling_aggregate(self, values: list[Any], timestamps: list[Any], keys: list[Any]) -> list[Any] | None:
        size, offset = self.size, self.offset
        late_start, refire_start = self._bounds()
        maps, add, missing = self.maps, self.add, _MISSING
        late = None
        # hot path: called per record
        for k, v, ts in zip(keys, values, timestamps, strict=True):
            start = ts - (ts - offset) % size
            if start <= late_start:
                if late is None:
                    late = []
                late.append((v, ts))
                continue
            m = maps.get(start)
            if m is None:
                m = self._namespace(start)
            acc = m.get(k, missing)
            if acc is missing:
                acc = m[k] = add(v, self.create_accumulator())
                self._new_pane(k, start, self.op.current_watermark)
            else:
                acc = m[k] = add(v, acc)
            if start <= refire_start:
                self._emit(k, self.windows[start], acc)
        return late

    def _sliding(self, values: list[Any], timestamps: list[Any], keys: list[Any]) -> list[Any] | None:
        size, slide, offset = self.size, self.slide, self.offset
        late_start, refire_start = self._bounds()
        maps, missing, is_agg = self.maps, _MISSING, self.is_aggregate
        combine = self.add if is_agg else self.reduce
        late = None
        # hot path: called per record
        for k, v, ts in zip(keys, values, timestamps, strict=True):
            start = ts - (ts - offset) % slide
            lowest = ts - size
            if start <= late_start:
                # the latest window is past cleanup, hence all of them: a late element
                if late is None:
                    late = []
                late.append((v, ts))
                continue
            while start > lowest:
                if start > late_start:
                    m = maps.get(start)
                    if m is None:
                        m = self._namespace(start)
                    acc = m.get(k, missing)
                    if acc is missing:
                        acc = m[k] = self._first(v)
                        self._new_pane(k, start, self.op.current_watermark)
                    else:
                        acc = m[k] = combine(v, acc) if is_agg else combine(acc, v)
                    if start <= refire_start:
                        self._emit(k, self.windows[start], acc)
                start -= slide
        return late

    # -- timers -----------------------------------------------------------------------------------
    def on_timer(self, timer: Any) -> None:
        window, key, t = timer.namespace, timer.key, timer.timestamp
        start = window.start
        m = self.maps.get(start)
        if m is None:
            m = self.table.maps.get(window)  # restored state not seen since
            if m is None:
                return
            self.maps[start] = m
            self.windows[start] = window
        acc = m.get(key, _MISSING)
        if acc is _MISSING:
            return
        max_ts = window.end - 1
        if t == max_ts:
            self._emit(key, window, acc)
        if t == max_ts + self.lateness:
            del m[key]
            self.op.runner.clear(window)
            if not m:
                del self.maps[start]
                del self.windows[start]
                self.op.release_namespace(window)
