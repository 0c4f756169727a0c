"""WindowOperator: Flink's WindowOperator and EvictingWindowOperator in one.

Per record: assign windows (merging session windows through a MergingWindowSet), drop
elements whose windows are past `max_timestamp + allowed_lateness` (to the late side
output if configured), add the element to the pane's keyed state (namespace = window),
and ask the trigger. Timers registered by triggers fire back into the trigger; at a
window's cleanup time (max_timestamp + allowed_lateness in event time, max_timestamp in
processing time) all of its state is cleared. Results carry the window's max_timestamp.

Aligned time windows with the default trigger, no evictor and an incremental function
(the common case) run on `AlignedWindowAggregator`, which computes windows
arithmetically over the same state table and keeps one timer per window.
"""

from __future__ import annotations

from typing import Any

from strom.common.row import Row, copy_row
from strom.common.time import MAX_WATERMARK
from strom.datastream.functions import Function
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from strom.datastream.windowing.assigners import MergingWindowAssigner
from strom.datastream.windowing.evictors import TimestampedValue
from strom.datastream.windowing.triggers import EventTimeTrigger, TriggerResult
from strom.runtime.operators.base import StreamOperator
from strom.runtime.operators.contexts import SideOutputBuffer
from strom.runtime.operators.merging_window_set import MergingWindowSet, MergingWindowSets
from strom.runtime.operators.window_contexts import (
    ProcessWindowContext,
    WindowAssignerContext,
    WindowEvictorContext,
    WindowTriggerContext,
    bind_namespace,
)
from strom.runtime.operators.window_fast_path import AlignedWindowAggregator, restore_timers_on_the_generic_path
from strom.runtime.operators.window_functions import PaneEvaluator, WindowFunctionRunner
from strom.runtime.state.api import VOID, StateAccessError

WINDOW_CONTENTS = "window-contents"
_CONTINUE = TriggerResult.CONTINUE
_FIRE = TriggerResult.FIRE
_NOT_BOUND = object()  # `_bound`: the window state may point anywhere
_NO_WINDOWS: list[Any] = []  # the trigger context's merged windows outside on_merge (never appended to)
MERGING_WINDOW_SET = "merging-window-set"

NO_TIMESTAMP = (
    "Record has no timestamp. Is the time characteristic set to 'ProcessingTime', or did you forget to call "
    "'assign_timestamps_and_watermarks(...)' / a WatermarkStrategy with a timestamp assigner?"
)


class WindowOperator(StreamOperator):
    keyed = True

    # -- lifecycle ----------------------------------------------------------------------------------
    def open(self) -> None:
        super().open()
        p = self.params
        self.assigner = p["assigner"]
        self.trigger = p["trigger"]
        self.evictor = p.get("evictor")
        self.allowed_lateness: int = p.get("allowed_lateness", 0)
        self.late_tag = p.get("late_data_tag")
        self.is_event_time: bool = self.assigner.is_event_time()
        self.merging = isinstance(self.assigner, MergingWindowAssigner)
        self.contents_kind: str = p["contents"]
        self.num_late_records_dropped = 0
        out_type = p.get("output_type")
        self._convert = out_type.convert if out_type is not None and out_type.needs_conversion else None

        self._user_functions = self._distinct_functions(
            p.get("reduce_function"), p.get("aggregate_function"), p.get("window_function")
        )
        rc = self.runtime_context()
        for fn in self._user_functions:
            fn.open(rc)

        self.side = SideOutputBuffer()
        self.out_values: list[Any] = []
        self.out_timestamps: list[Any] = []
        self._ns_states: dict[str, Any] = {}
        self.process_context = ProcessWindowContext(self)
        self.runner = WindowFunctionRunner(
            p.get("window_function_kind"), p.get("window_function"), self.process_context
        )
        self.evaluator = PaneEvaluator(
            self.contents_kind, p.get("reduce_function"), p.get("aggregate_function"), self.evictor is not None
        )
        self.trigger_context = WindowTriggerContext(self)
        self.assigner_context = WindowAssignerContext(self)
        self.evictor_context = WindowEvictorContext(self)
        self.window_state = self.backend.create_namespaced_state(self._contents_descriptor())  # type: ignore[union-attr]
        self._merging_sets = (
            MergingWindowSets(
                self.assigner,
                self.backend,
                self.backend.create_namespaced_state(ValueStateDescriptor(MERGING_WINDOW_SET)),  # type: ignore[union-attr]
            )
            if self.merging
            else None
        )
        # the window the window state was last bound to by the element path, while nothing else touched it
        # since (a clear or merge may replace a window's map in a heap state table: then it is rebound)
        self._bound: Any = _NOT_BOUND
        # the built-in EventTimeTrigger (not a subclass): what it does per element is written out in the session path
        self._event_time_trigger = type(self.trigger) is EventTimeTrigger and self.is_event_time
        restored_fast_timers = getattr(self, "_restored_fast_timers", None)
        live = AlignedWindowAggregator.live_namespaces(self) if AlignedWindowAggregator.applies(self) else None
        self.fast = (
            AlignedWindowAggregator(self, live, restored_timers=restored_fast_timers) if live is not None else None
        )
        if self.fast is None and restored_fast_timers is not None:  # a fast-path snapshot, restored off it
            restore_timers_on_the_generic_path(self, restored_fast_timers)

    # -- snapshots: the fast path keeps its per-window timers outside the timer service ----------------
    def snapshot_state(self) -> dict[str, Any]:
        """Runs before the keyed state is copied (as Flink's snapshotState before the backend's snapshot): the
        session window sets changed since the last snapshot go to keyed state here."""
        sets = getattr(self, "_merging_sets", None)
        if sets is not None:
            sets.write_changed()
        return {"fast_timers": list(self.fast.timers)} if self.fast is not None else {}

    def restore_state(self, parts: list[dict[str, Any]]) -> None:
        """Before open(): the fast path's pending timers of every old subtask (repeats removed)."""
        timers = {t for part in parts for t in part.get("fast_timers", ())}
        self._restored_fast_timers = sorted(timers) if any("fast_timers" in p for p in parts) else None

    def _contents_descriptor(self) -> StateDescriptor:
        p = self.params
        if self.evictor is not None or self.contents_kind == "list":
            return ListStateDescriptor(WINDOW_CONTENTS)
        if self.contents_kind == "reduce":
            return ReducingStateDescriptor(WINDOW_CONTENTS, p["reduce_function"])
        return AggregatingStateDescriptor(WINDOW_CONTENTS, p["aggregate_function"])

    @staticmethod
    def _distinct_functions(*candidates: Any) -> list[Function]:
        out: list[Function] = []
        for fn in candidates:
            if isinstance(fn, Function) and all(fn is not o for o in out):
                out.append(fn)
        return out

    def close(self) -> None:
        try:
            for fn in getattr(self, "_user_functions", ()):
                fn.close()
        finally:
            self.close_backend()

    # -- state helpers --------------------------------------------------------------------------------
    def namespaced_state(self, descriptor: StateDescriptor) -> Any:
        """One state object per name for trigger and per-window user state (namespace set by the caller)."""
        state = self._ns_states.get(descriptor.name)
        if state is None:
            table = self.backend.tables.get(descriptor.name)  # type: ignore[union-attr]
            if table is not None and table.kind != descriptor.kind:
                raise StateAccessError(
                    f"operator {self.ctx.operator_name!r}: state {descriptor.name!r} is already registered as "  # type: ignore[union-attr]
                    f"{table.kind} state, not {descriptor.kind}"
                )
            state = self._ns_states[descriptor.name] = self.backend.create_namespaced_state(descriptor)  # type: ignore[union-attr]
        return state

    def release_namespace(self, namespace: Any) -> None:
        """Drop the (now empty) maps of a cleaned-up window from every window-scoped state table."""
        for state in (self.window_state, *self._ns_states.values()):
            state.set_current_namespace(VOID)
            state.table.drop_namespace_if_empty(namespace)

    def cleanup_time(self, window: Any) -> int:
        if not self.is_event_time:
            return window.max_timestamp()
        t = window.max_timestamp() + self.allowed_lateness
        return t if t < MAX_WATERMARK else MAX_WATERMARK

    def _delete_cleanup_timer(self, window: Any) -> None:
        t = self.cleanup_time(window)
        if t == MAX_WATERMARK:
            return
        if self.is_event_time:
            self.timer_service.delete_event_time_timer(window, t)  # type: ignore[union-attr]
        else:
            self.timer_service.delete_processing_time_timer(window, t)  # type: ignore[union-attr]

    def no_timestamp_error(self) -> ValueError:
        return ValueError(f"operator {self.ctx.operator_name!r} ({self.assigner!r}): {NO_TIMESTAMP}")  # type: ignore[union-attr]

    # -- output -------------------------------------------------------------------------------------
    def emit_pane(self, key: Any, window: Any, elements: list[Any]) -> None:
        """Run the window function over a pane and buffer its results at window.max_timestamp()."""
        results = self.runner.run(key, window, elements)
        out = self.out_values
        before = len(out)
        out.extend(copy_row(o) if type(o) is Row else o for o in results)  # each Row as yielded (PyFlink serializes it)
        n = len(out) - before
        if n:
            self.out_timestamps.extend([window.max_timestamp()] * n)

    def emit_late(self, values: list[Any], timestamps: list[Any]) -> None:
        if self.late_tag is not None:
            self.output.collect_side(self.late_tag, values, timestamps)
        else:
            self.num_late_records_dropped += len(values)

    def flush(self) -> None:
        if self.out_values:
            out, ts = self.out_values, self.out_timestamps
            self.out_values, self.out_timestamps = [], []
            if self._convert is not None:
                conv = self._convert
                out = [conv(v) for v in out]
            self.output.collect(out, ts)
        self.side.drain(self.output)

    # -- records --------------------------------------------------------------------------------------
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        keys = self.keys_for(values, keys)
        fast = self.fast
        if fast is not None:
            fast.process_batch(values, timestamps, keys)
            if fast.cache is not None and fast.cache.over_limit():
                fast.hand_over_to_generic_path()
                self.fast = None
        else:
            self._process_generic(values, timestamps, keys)
        self.flush()

    def _process_generic(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any]) -> None:
        # anything may have happened to the window state between batches (timers, snapshots): bind afresh
        self._bound = _NOT_BOUND
        if self.merging:
            self._process_merging(values, timestamps, keys)
        else:
            self._process_windows(values, timestamps, keys)

    def _process_windows(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any]) -> None:
        """Non-merging windows: per element and window, Flink's WindowOperator.processElement."""
        # hot path: the loop runs per record. Elements in a row mostly share their window object (assigners
        # hand out the same window while time stays in it), so its binding and cleanup time are kept
        backend = self.backend
        assign = self.assigner.assign_windows
        actx = self.assigner_context
        state, tctx, on_element = self.window_state, self.trigger_context, self.trigger.on_element
        event_time = self.is_event_time
        evicting = self.evictor is not None
        timers = self.timer_service
        register = timers.register_event_time_timer if event_time else timers.register_processing_time_timer  # type: ignore[union-attr]
        cleanup_time = self.cleanup_time
        watermark = self.current_watermark  # no watermark arrives within a batch
        cleanup_window, cleanup_t = _NOT_BOUND, 0
        late_v: list[Any] = []
        late_t: list[Any] = []
        for i, value in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            if ts is None and event_time:
                raise self.no_timestamp_error()
            key = keys[i]
            backend.current_key = key  # type: ignore[union-attr]
            skipped = True
            for window in assign(value, ts, actx):
                if window is not cleanup_window:
                    cleanup_window, cleanup_t = window, cleanup_time(window)
                if event_time and cleanup_t <= watermark:
                    continue  # the window is gone
                skipped = False
                if window is not self._bound:
                    bind_namespace(state, window)
                    self._bound = window
                state.add(TimestampedValue(value, ts) if evicting else value)  # evictors may change each copy
                tctx.window = window
                result = on_element(value, ts, window, tctx)
                # most elements neither fire nor purge: one identity test instead of two enum-value reads
                if result is not _CONTINUE and self._on_element_result(key, window, window, result, release=True):
                    continue  # a fire of an empty pane: as Flink, no purge and no cleanup timer
                if cleanup_t != MAX_WATERMARK:  # a window that never ends (GlobalWindow) is never cleaned up
                    register(window, cleanup_t)
            # late: dropped from every window and behind the watermark by more than the lateness
            if skipped and event_time and ts + self.allowed_lateness <= watermark:
                late_v.append(value)
                late_t.append(ts)
        if late_v:
            self.emit_late(late_v, late_t)

    def _on_element_result(self, key: Any, window: Any, state_window: Any, result: Any, *, release: bool) -> bool:
        """A trigger said FIRE and/or PURGE for an element. True if the pane was empty (Flink then skips the
        purge and the cleanup timer). `release`: a purged window's empty maps go (non-merging windows)."""
        self._bound = _NOT_BOUND
        state = self.window_state
        if result.is_fire():
            contents = self._contents()
            if contents is None:
                return True
            self._fire(key, window, contents)
        if result.is_purge():
            bind_namespace(state, state_window)
            state.clear()
            if release:
                self.release_namespace(window)
        return False

    def _process_merging(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any]) -> None:
        """Merging (session) windows: Flink's WindowOperator.processElement with a MergingWindowSet per key.

        With the built-in EventTimeTrigger, its calls are written out here and in `_merge` (the same timer
        registrations and deletions in the same order, less the repeats of one already made for the window)."""
        # hot path: the loop runs per record
        backend = self.backend
        assign = self.assigner.assign_windows
        actx = self.assigner_context
        sets = self._merging_sets
        sets_get, changed = sets.sets.get, sets.changed  # type: ignore[union-attr]
        merge = self._merge
        state, tctx, on_element = self.window_state, self.trigger_context, self.trigger.on_element
        event_trigger = self._event_time_trigger
        event_time = self.is_event_time
        evicting = self.evictor is not None
        timers = self.timer_service
        register = timers.register_event_time_timer if event_time else timers.register_processing_time_timer  # type: ignore[union-attr]
        lateness = self.allowed_lateness
        watermark = self.current_watermark
        late_v: list[Any] = []
        late_t: list[Any] = []
        for i, value in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            if ts is None and event_time:
                raise self.no_timestamp_error()
            key = keys[i]
            backend.current_key = key  # type: ignore[union-attr]
            windows = assign(value, ts, actx)
            mws = sets_get(key)
            if mws is None:
                mws = sets.of(key)  # type: ignore[union-attr]
            changed.add(key)
            skipped = True
            for window in windows:
                actual = mws.add_window(window, merge)
                end = actual.max_timestamp()
                t = end  # cleanup_time(actual)
                if event_time:
                    t += lateness
                    if t >= MAX_WATERMARK:
                        t = MAX_WATERMARK
                    if t <= watermark:
                        mws.retire_window(actual)
                        continue
                skipped = False
                state_window = mws.mapping.get(actual)
                if state_window is None:
                    raise RuntimeError(f"window {actual!r} is not in the in-flight window set")
                if state_window is not self._bound:
                    bind_namespace(state, state_window)
                    self._bound = state_window
                state.add(TimestampedValue(value, ts) if evicting else value)
                if event_trigger:  # EventTimeTrigger.on_element
                    if end <= watermark:
                        result = _FIRE  # a late element within the lateness fires the window at once
                    else:
                        register(actual, end)
                        result = _CONTINUE
                else:
                    tctx.window = actual
                    result = on_element(value, ts, actual, tctx)
                if result is not _CONTINUE and self._on_element_result(
                    key, actual, state_window, result, release=False
                ):
                    continue
                if t != MAX_WATERMARK and not (event_trigger and t == end and result is _CONTINUE):
                    register(actual, t)
            if not mws.mapping:
                sets.forget_if_empty(key, mws)  # type: ignore[union-attr]
            if skipped and event_time and ts + lateness <= watermark:
                late_v.append(value)
                late_t.append(ts)
        if late_v:
            self.emit_late(late_v, late_t)

    def _contents(self) -> Any:
        """The pane's contents, or None when it has none (an empty list counts as none, as in Flink)."""
        contents = self.window_state.get()
        return None if contents is None or (isinstance(contents, list) and not contents) else contents

    # hot path: called per record of a session whose window grows (sessions merge with every element)
    def _merge(
        self, merge_result: Any, merged_windows: list[Any], state_window: Any, merged_state_windows: list[Any]
    ) -> None:
        end = merge_result.max_timestamp()
        timers = self.timer_service
        if self.is_event_time:
            watermark = self.current_watermark
            if end + self.allowed_lateness <= watermark:
                raise RuntimeError(
                    f"operator {self.ctx.operator_name!r}: the end timestamp of an event-time window cannot become "  # type: ignore[union-attr]
                    f"earlier than the current watermark by merging; current watermark: {watermark}, "
                    f"window: {merge_result!r}"
                )
            if self._event_time_trigger:
                # EventTimeTrigger.on_merge, then per merged window its clear() and the cleanup timer's deletion
                if end > watermark:
                    timers.register_event_time_timer(merge_result, end)  # type: ignore[union-attr]
                lateness = self.allowed_lateness
                delete = timers.delete_event_time_timer  # type: ignore[union-attr]
                for w in merged_windows:
                    w_end = w.max_timestamp()
                    delete(w, w_end)
                    if lateness:
                        self._delete_cleanup_timer(w)
                self._merge_state(state_window, merged_state_windows)
                return
        elif end <= self.ctx.processing_time_service.now():  # type: ignore[union-attr]
            raise RuntimeError(
                f"operator {self.ctx.operator_name!r}: the end timestamp of a processing-time window cannot become "  # type: ignore[union-attr]
                f"earlier than the current processing time by merging; window: {merge_result!r}"
            )
        tctx, trigger = self.trigger_context, self.trigger
        tctx.window = merge_result
        tctx.merged_windows = merged_windows
        trigger.on_merge(merge_result, tctx)
        tctx.merged_windows = _NO_WINDOWS
        delete_cleanup_timer = self._delete_cleanup_timer
        for w in merged_windows:
            tctx.window = w
            trigger.clear(w, tctx)
            delete_cleanup_timer(w)
        self._merge_state(state_window, merged_state_windows)

    def _merge_state(self, state_window: Any, merged_state_windows: list[Any]) -> None:
        if merged_state_windows:  # a window that only grew has no other state to take in
            self._bound = _NOT_BOUND
            bind_namespace(self.window_state, state_window)
            self.window_state.merge_namespaces(state_window, merged_state_windows)

    def _fire(self, key: Any, window: Any, contents: Any) -> None:
        if self.evictor is None:
            self.emit_pane(key, window, self.evaluator.elements(contents))
            return
        # EvictingWindowOperator: evict, evaluate what is left, evict again, keep the rest
        records: list[TimestampedValue] = list(contents)
        ectx = self.evictor_context
        self.evictor.evict_before(records, len(records), window, ectx)
        self.emit_pane(key, window, self.evaluator.elements([r.value for r in records]))
        self.evictor.evict_after(records, len(records), window, ectx)
        self.window_state.update(records)

    # -- timers ---------------------------------------------------------------------------------------
    def process_watermark(self, timestamp: int) -> None:
        if timestamp <= self.current_watermark:
            return
        self.current_watermark = timestamp
        self.timer_service.advance_watermark(timestamp)  # type: ignore[union-attr]
        if self.fast is not None:
            self.fast.advance_watermark(timestamp)
        # results of the fired windows go out before the watermark that completed them
        self.flush()
        self.output.emit_watermark(timestamp)

    def on_event_time(self, timer: Any) -> None:
        self._on_timer(timer, event_time=True)

    def on_processing_time(self, timer: Any) -> None:
        self._on_timer(timer, event_time=False)
        self.flush()

    def _on_timer(self, timer: Any, *, event_time: bool) -> None:
        window = timer.namespace
        tctx = self.trigger_context
        tctx.window = window
        mws: MergingWindowSet | None = None
        if self.merging:
            mws = self._merging_sets.of(timer.key)  # type: ignore[union-attr]
            state_window = mws.get_state_window(window)
            if state_window is None:
                # a trigger left a timer of a window that is gone; its state is already cleared
                return
            bind_namespace(self.window_state, state_window)
        else:
            bind_namespace(self.window_state, window)
        trigger = self.trigger
        if event_time:
            result = trigger.on_event_time(timer.timestamp, window, tctx)
        else:
            result = trigger.on_processing_time(timer.timestamp, window, tctx)
        if result.is_fire():
            contents = self._contents()
            if contents is not None:
                self._fire(timer.key, window, contents)
        if result.is_purge():
            self.window_state.clear()
            if mws is None:
                self.release_namespace(window)
        if self.is_event_time == event_time and timer.timestamp == self.cleanup_time(window):
            self._clear_all_state(window, state_window if mws is not None else window, mws)

    def _clear_all_state(self, window: Any, state_window: Any, mws: MergingWindowSet | None) -> None:
        bind_namespace(self.window_state, state_window)
        self.window_state.clear()
        tctx = self.trigger_context
        tctx.window = window
        self.trigger.clear(window, tctx)
        self.runner.clear(window)
        if mws is not None:
            mws.retire_window(window)
            key = self.backend.current_key  # type: ignore[union-attr]
            self._merging_sets.changed.add(key)  # type: ignore[union-attr]
            self._merging_sets.forget_if_empty(key, mws)  # type: ignore[union-attr]
        self.release_namespace(window)
        if state_window != window:
            self.release_namespace(state_window)
