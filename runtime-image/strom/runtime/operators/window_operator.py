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
from strom.datastream.windowing.triggers import TriggerResult
from strom.runtime.operators.base import StreamOperator
from strom.runtime.operators.contexts import SideOutputBuffer
from strom.runtime.operators.merging_window_set import MergingWindowSet
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
            self.backend.create_namespaced_state(ValueStateDescriptor(MERGING_WINDOW_SET))  # type: ignore[union-attr]
            if self.merging
            else None
        )
        restored_fast_timers = getattr(self, "_restored_fast_timers", None)
        live = AlignedWindowAggregator.live_namespaces(self) if AlignedWindowAggregator.applies(self) else None
        self.fast = (
            AlignedWindowAggregator(self, live, restored_timers=restored_fast_timers) if live is not None else None
        )
        if self.fast is None and restored_fast_timers is not None:  # a fast-path snapshot, restored off it
            restore_timers_on_the_generic_path(self, restored_fast_timers)

    # -- snapshots: the fast path keeps its per-window timers outside the timer service ----------------
    def snapshot_state(self) -> dict[str, Any]:
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

    def _is_window_late(self, window: Any) -> bool:
        return self.is_event_time and self.cleanup_time(window) <= self.current_watermark

    def _register_cleanup_timer(self, window: Any) -> None:
        t = self.cleanup_time(window)
        if t == MAX_WATERMARK:
            return  # a window that never ends (GlobalWindow) is never cleaned up
        if self.is_event_time:
            self.timer_service.register_event_time_timer(window, t)  # type: ignore[union-attr]
        else:
            self.timer_service.register_processing_time_timer(window, t)  # type: ignore[union-attr]

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
        backend = self.backend
        assign = self.assigner.assign_windows
        actx = self.assigner_context
        late_v: list[Any] = []
        late_t: list[Any] = []
        for i, value in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            if ts is None and self.is_event_time:
                raise self.no_timestamp_error()
            key = keys[i]
            backend.current_key = key  # type: ignore[union-attr]
            windows = assign(value, ts, actx)
            if self.merging:
                skipped = self._add_to_merging_windows(key, value, ts, windows)
            else:
                skipped = self._add_to_windows(key, value, ts, windows)
            # late: dropped from every window and behind the watermark by more than the lateness
            if skipped and self.is_event_time and ts + self.allowed_lateness <= self.current_watermark:
                late_v.append(value)
                late_t.append(ts)
        if late_v:
            self.emit_late(late_v, late_t)

    def _stored(self, value: Any, ts: int | None) -> Any:
        return TimestampedValue(value, ts) if self.evictor is not None else value

    def _contents(self) -> Any:
        """The pane's contents, or None when it has none (an empty list counts as none, as in Flink)."""
        contents = self.window_state.get()
        return None if contents is None or (isinstance(contents, list) and not contents) else contents

    # hot path: called per record (generic path)
    def _add_to_windows(self, key: Any, value: Any, ts: int | None, windows: Any) -> bool:
        skipped = True
        state, tctx, trigger = self.window_state, self.trigger_context, self.trigger
        for window in windows:
            if self.is_event_time and self._is_window_late(window):
                continue
            skipped = False
            bind_namespace(state, window)
            state.add(self._stored(value, ts))  # one TimestampedValue per window: evictors may change it
            tctx.window = window
            result = trigger.on_element(value, ts, window, tctx)
            # most elements neither fire nor purge: one identity test instead of two enum-value reads
            if result is not _CONTINUE:
                if result.is_fire():
                    contents = self._contents()
                    if contents is None:
                        continue
                    self._fire(key, window, contents)
                if result.is_purge():
                    state.clear()
                    self.release_namespace(window)
            self._register_cleanup_timer(window)
        return skipped

    def _merging_set(self) -> MergingWindowSet:
        mapping = self._merging_sets.value()  # type: ignore[union-attr]
        return MergingWindowSet(self.assigner, dict(mapping) if mapping else {})

    def _persist(self, mws: MergingWindowSet) -> None:
        # stored as a tuple of (window, state window) pairs: an immutable value, which RocksDB's value cache keeps
        # as an object (a dict would be unpickled on every record); `_merging_set` reads a dict (older snapshots)
        # or pairs alike
        mapping = mws.mapping
        self._merging_sets.update(tuple(mapping.items()) if mapping else None)  # type: ignore[union-attr]

    def _add_to_merging_windows(self, key: Any, value: Any, ts: int | None, windows: Any) -> bool:
        skipped = True
        state, tctx, trigger = self.window_state, self.trigger_context, self.trigger
        mws = self._merging_set()
        for window in windows:
            actual = mws.add_window(window, self._merge)
            if self._is_window_late(actual):
                mws.retire_window(actual)
                continue
            skipped = False
            state_window = mws.get_state_window(actual)
            if state_window is None:
                raise RuntimeError(f"window {actual!r} is not in the in-flight window set")
            bind_namespace(state, state_window)
            state.add(self._stored(value, ts))
            tctx.window = actual
            result = trigger.on_element(value, ts, actual, tctx)
            if result.is_fire():
                contents = self._contents()
                if contents is None:
                    continue
                self._fire(key, actual, contents)
            if result.is_purge():
                state.clear()
            self._register_cleanup_timer(actual)
        self._persist(mws)
        return skipped

    def _merge(
        self, merge_result: Any, merged_windows: list[Any], state_window: Any, merged_state_windows: list[Any]
    ) -> None:
        if self.is_event_time and merge_result.max_timestamp() + self.allowed_lateness <= self.current_watermark:
            raise RuntimeError(
                f"operator {self.ctx.operator_name!r}: the end timestamp of an event-time window cannot become "  # type: ignore[union-attr]
                f"earlier than the current watermark by merging; current watermark: {self.current_watermark}, "
                f"window: {merge_result!r}"
            )
        if not self.is_event_time and merge_result.max_timestamp() <= self.ctx.processing_time_service.now():  # type: ignore[union-attr]
            raise RuntimeError(
                f"operator {self.ctx.operator_name!r}: the end timestamp of a processing-time window cannot become "  # type: ignore[union-attr]
                f"earlier than the current processing time by merging; window: {merge_result!r}"
            )
        tctx = self.trigger_context
        tctx.window = merge_result
        tctx.merged_windows = merged_windows
        self.trigger.on_merge(merge_result, tctx)
        tctx.merged_windows = []
        for w in merged_windows:
            tctx.window = w
            self.trigger.clear(w, tctx)
            self._delete_cleanup_timer(w)
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
            mws = self._merging_set()
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
        if mws is not None:
            self._persist(mws)

    def _clear_all_state(self, window: Any, state_window: Any, mws: MergingWindowSet | None) -> None:
        bind_namespace(self.window_state, state_window)
        self.window_state.clear()
        tctx = self.trigger_context
        tctx.window = window
        self.trigger.clear(window, tctx)
        self.runner.clear(window)
        if mws is not None:
            mws.retire_window(window)
        self.release_namespace(window)
        if state_window != window:
            self.release_namespace(state_window)
