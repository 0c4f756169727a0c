"""AlignedWindowAggregator: the window operator's fast path for aligned time windows.

It applies when the assigner is tumbling or sliding (event or processing time), the
trigger is the assigner's default, there is no evictor and the function is an
incremental reduce or aggregate, and the window-contents state offers its namespaces as
live dicts: `api.InMemoryNamespaces` (the heap backend), or a bounded `api.NamespaceCache`
in front of RocksDB, written through at every snapshot. The cache is told what each batch
touches: the batch's keys per window are fetched before it (evicted panes come back in one
multi-get per window) and marked written after it, so the cache evicts past its bound and the
panes stay dicts however many there are; a firing window reads its evicted panes back in one
scan (`namespace_entries`). Then a
record's windows follow from its timestamp by arithmetic, and the default trigger's
decisions are known in advance: fire at max_timestamp, fire again at once for an element
that arrives within the allowed lateness, clean up at max_timestamp + allowed_lateness.

Accumulators live in the window-contents state of the keyed backend (namespace =
TimeWindow, then key), exactly where the generic path keeps them, so state stays
addressable by key and window for snapshots; the per-record loops read and write the
namespace's dict that the state hands out (`namespace_map`).

Timers are kept per window, not per (key, window): every pane of a window would get the
same two timers (fire at max_timestamp, clean up at max_timestamp + lateness), so one
entry per window fires all of its panes at once. This is what makes the common
one-element-per-key-and-window case cheap: a new pane costs one dict insert instead of a
timer-service registration, a heap push and a heap pop. Firing order across windows is
by time, fire before cleanup, as the timer service would order them.
"""

from __future__ import annotations

import heapq
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
from strom.runtime.state.api import CachingNamespaces, InMemoryNamespaces, NamespaceCache

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
        if not isinstance(op.window_state, (InMemoryNamespaces, CachingNamespaces)):
            return False  # it works on live dicts; other backends take the generic path

        default = EventTimeTrigger if op.is_event_time else ProcessingTimeTrigger
        return type(op.trigger) is default

    @staticmethod
    def live_namespaces(op: Any) -> InMemoryNamespaces | None:
        """The window state's live dicts: the heap state itself, or a namespace cache in front of RocksDB
        (None when the backend offers none)."""
        state = op.window_state
        if isinstance(state, InMemoryNamespaces):
            return state
        cache: NamespaceCache | None = state.open_namespace_cache(fetches=True)
        if cache is not None:
            _drop_restored_pane_timers(op)
        return cache

    def __init__(
        self, op: Any, state: InMemoryNamespaces, *, restored_timers: list[tuple[int, int, int]] | None = None
    ) -> None:
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
        self.state = state
        # a bounded cache (RocksDB) is checked per batch; the heap's dicts have no bound
        self.cache: NamespaceCache | None = state if isinstance(state, NamespaceCache) else None
        self.backend = op.backend
        # window start -> that window's {key: accumulator} map in the state table, and the window
        self.maps: dict[int, dict[Any, Any]] = {}
        self.windows: dict[int, TimeWindow] = {}
        # event time: (time, 0 = fire | 1 = clean up, window start)
        self.timers: list[tuple[int, int, int]] = []
        for window, m in self.state.namespace_maps():
            # a cache lists its namespaces with entries, also those whose entries are all in RocksDB
            if isinstance(window, TimeWindow) and (m or self.cache is not None):
                self.maps[window.start] = m
                self.windows[window.start] = window
                if restored_timers is None or not self.event_time:
                    # panes without saved timers fire and clean up like freshly opened ones
                    # (processing-time windows fire at their end, overdue ones at once, as in Flink)
                    self._schedule(window)
        if restored_timers is not None and self.event_time:
            # only what was still pending at the snapshot: a window that already fired and waits
            # out its allowed lateness keeps just its cleanup timer, so it does not fire twice
            for entry in restored_timers:
                if entry[2] in self.maps:
                    heapq.heappush(self.timers, entry)

    # -- windows ----------------------------------------------------------------------------------
    def _open(self, start: int) -> dict[Any, Any]:
        """First pane of a window: its map in the state table and its timers."""
        window = TimeWindow(start, start + self.size)
        m = self.state.namespace_map(window)
        self.maps[start] = m
        self.windows[start] = window
        self._schedule(window)
        return m

    def _schedule(self, window: TimeWindow) -> None:
        max_ts = window.end - 1
        if not self.event_time:
            pts = self.op.ctx.processing_time_service
            pts.register_timer(max_ts, lambda now, w=window: self._fire_processing_time(w))
            return
        # the default trigger registers its timer only while the watermark is before the window's end;
        # after that, elements fire the pane themselves
        if max_ts > self.op.current_watermark:
            heapq.heappush(self.timers, (max_ts, 0, window.start))
        cleanup = max_ts + self.lateness
        if cleanup < MAX_WATERMARK:
            heapq.heappush(self.timers, (cleanup, 1, window.start))

    def _first(self, value: Any) -> Any:
        """The accumulator of a pane whose first element is `value`."""
        return self.add(value, self.create_accumulator()) if self.is_aggregate else value

    def _emit(self, key: Any, window: TimeWindow, acc: Any) -> None:
        result = self.get_result(acc) if self.is_aggregate else acc
        op = self.op
        if op.runner.kind is None:
            op.out_values.append(result)
            op.out_timestamps.append(window.end - 1)
        else:
            self.backend.current_key = key
            op.emit_pane(key, window, [result])

    def _panes(self, start: int, *, keys: bool = True) -> Any:
        """(key, accumulator) of every pane of an open window: its dict's, or the cache's (evicted ones too;
        `keys=False`: their keys are not needed)."""
        m = self.maps.get(start)
        if m is None:
            return ()
        return m.items() if self.cache is None else self.cache.namespace_entries(self.windows[start], keys=keys)

    def _fire_window(self, start: int) -> None:
        op = self.op
        values_only = op.runner.kind is None and not self.is_aggregate
        panes = self._panes(start, keys=not values_only)
        if not panes:
            return
        window = self.windows[start]
        if values_only:
            # every pane's result is its accumulator
            before = len(op.out_values)
            op.out_values.extend([acc for _, acc in panes])
            op.out_timestamps.extend([window.end - 1] * (len(op.out_values) - before))
            return
        emit = self._emit
        for key, acc in panes:
            emit(key, window, acc)

    def _clean_up_window(self, start: int) -> None:
        runner = self.op.runner
        keys = [key for key, _ in self._panes(start)] if runner.clears else ()
        m = self.maps.pop(start, None)
        window = self.windows.pop(start)
        if keys:
            backend = self.backend
            for key in keys:
                backend.current_key = key
                runner.clear(window)
        if m is not None:
            m.clear()
        self.op.release_namespace(window)

    def advance_watermark(self, watermark: int) -> None:
        """Fire and clean up every window whose time the watermark reached, in time order."""
        timers = self.timers
        while timers and timers[0][0] <= watermark:
            _, kind, start = heapq.heappop(timers)
            if kind == 0:
                self._fire_window(start)
            else:
                self._clean_up_window(start)

    def hand_over_to_generic_path(self) -> None:
        """A cache that cannot hold the panes (`over_limit`; RocksDB's evicts instead and never asks): every
        pane into RocksDB, every pending window timer into the timer service as per-pane timers (as a restore
        off the fast path does); this aggregator is done."""
        assert self.cache is not None
        timers = list(self.timers)
        self.timers.clear()
        self.maps.clear()
        self.windows.clear()  # pending processing-time callbacks find no window and do nothing
        self.cache.close()
        restore_timers_on_the_generic_path(self.op, timers)

    def _fire_processing_time(self, window: TimeWindow) -> None:
        # ProcessingTimeTrigger fires at max_timestamp, which is also the cleanup time
        start = window.start
        if self.windows.get(start) is window:
            self._fire_window(start)
            self._clean_up_window(start)
        self.op.flush()

    def _bounds(self) -> tuple[int, int]:
        """(late_start, refire_start): a window starting at or before late_start is past its
        cleanup time; one starting at or before refire_start is past its end (fires at once)."""
        if not self.event_time:
            return MIN_WATERMARK, MIN_WATERMARK
        refire = self.op.current_watermark - self.size + 1
        return refire - self.lateness, refire

    # -- records ----------------------------------------------------------------------------------
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any]) -> None:
        if self.event_time:
            if timestamps is None:
                raise self.op.no_timestamp_error()
        else:
            timestamps = [self.op.ctx.processing_time_service.now()] * len(values)
        cache = self.cache
        try:
            # nothing to fetch or mark while every window's panes are in memory only (within the bound, no snapshot)
            panes = self._panes_by_window(keys, timestamps) if cache is not None and cache.tracking() else None
            if panes:
                windows = self.windows
                for start, pane_keys in panes.items():
                    window = windows.get(start)
                    if window is not None:  # a window opened by this batch has nothing in RocksDB
                        cache.fetch_missing(window, pane_keys)  # type: ignore[union-attr]
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
        if cache is not None:
            if panes:
                windows = self.windows
                for start, pane_keys in panes.items():
                    cache.mark_written(windows[start], pane_keys)
            cache.trim()  # after every mark: eviction writes the marked entries
        if late:
            self.op.emit_late([v for v, _ in late], [t for _, t in late])

    def _panes_by_window(self, keys: list[Any], timestamps: list[Any]) -> dict[int, list[Any]]:
        """window start -> the keys of the batch's records in that window (late ones left out): what a batch
        reads and writes, told to the namespace cache."""
        size, slide, offset = self.size, self.slide, self.offset
        late_start = self._bounds()[0]
        if self.tumbling:
            starts = [ts - (ts - offset) % size for ts in timestamps]
            first = starts[0] if starts else late_start
            if starts.count(first) == len(starts):  # the common case: the whole batch in one window
                return {first: keys} if first > late_start else {}
            out: dict[int, list[Any]] = {}
            for k, start in zip(keys, starts, strict=True):
                if start > late_start:
                    ks = out.get(start)
                    if ks is None:
                        out[start] = [k]
                    else:
                        ks.append(k)
            return out
        out = {}
        for k, ts in zip(keys, timestamps, strict=True):
            start = ts - (ts - offset) % slide
            lowest = ts - size
            while start > lowest and start > late_start:
                ks = out.get(start)
                if ks is None:
                    out[start] = [k]
                else:
                    ks.append(k)
                start -= slide
        return out

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
                m = self._open(start)
            acc = m.get(k, missing)
            acc = m[k] = v if acc is missing else reduce(acc, v)
            if start <= refire_start:
                self._emit(k, self.windows[start], acc)
        return late

    def _tumbling_aggregate(self, values: list[Any], timestamps: list[Any], keys: list[Any]) -> list[Any] | None:
        size, offset = self.size, self.offset
        late_start, refire_start = self._bounds()
        maps, add, create, missing = self.maps, self.add, self.create_accumulator, _MISSING
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
                m = self._open(start)
            acc = m.get(k, missing)
            acc = m[k] = add(v, create() if acc is missing else acc)
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
                        m = self._open(start)
                    acc = m.get(k, missing)
                    if acc is missing:
                        acc = m[k] = self._first(v)
                    else:
                        acc = m[k] = combine(v, acc) if is_agg else combine(acc, v)
                    if start <= refire_start:
                        self._emit(k, self.windows[start], acc)
                start -= slide
        return late


def restore_timers_on_the_generic_path(op: Any, timers: list[tuple[int, int, int]]) -> None:
    """A snapshot taken on the fast path restored where the fast path does not apply (RocksDB, whose
    savepoints restore from the heap's, or an assigner that is no longer aligned): the generic path
    needs per-pane timers in the timer service, as the default trigger (fire at max_timestamp) and the
    operator (cleanup) would have registered them.

    Event time: the fast path kept one (time, fire | clean up, start) timer per window outside the timer
    service; each becomes a timer of every pane of that window. Processing time: the fast path kept its
    timers in the processing-time service, which no snapshot holds, so every restored pane gets the timer
    a fresh pane gets (max_timestamp: fire, then clean up; overdue ones fire at once, as in Flink)."""
    backend, service, contents = op.backend, op.timer_service, op.window_state.table.name
    if not op.is_event_time:
        for key_group_states in backend.entries_by_key_group().values():
            for key, window, _ in key_group_states.get(contents, ()):
                if isinstance(window, TimeWindow):
                    backend.current_key = key
                    service.register_processing_time_timer(window, window.max_timestamp())
        return
    size = op.assigner.size
    for ts, _, start in timers:
        window = TimeWindow(start, start + size)
        for key in backend.keys(contents, window):
            backend.current_key = key
            service.register_event_time_timer(window, ts)


def _drop_restored_pane_timers(op: Any) -> None:
    """Per-pane timers of a generic-path snapshot, restored before the fast path opened a namespace cache:
    they would fire from RocksDB behind the cache's back. The fast path schedules the same firing and
    cleanup for every restored window itself (the default trigger registers no other timers)."""
    service = op.timer_service
    if service is None:
        return
    backend = op.backend
    event, processing = service.timer_entries()
    for ts, key, window in event:
        backend.current_key = key
        service.delete_event_time_timer(window, ts)
    for ts, key, window in processing:
        backend.current_key = key
        service.delete_processing_time_timer(window, ts)
