"""Contexts a window operator hands to triggers, assigners, evictors and window functions.

Each context is one object per operator whose current window is set before a call (no
per-record allocation). State handed out through them is scoped to the current key
(set on the backend) and the context's window (set as the state's namespace).
"""

from __future__ import annotations

from typing import Any

from strom.datastream.functions import ProcessWindowFunction
from strom.datastream.state import StateDescriptor
from strom.datastream.windowing.assigners import WindowAssigner
from strom.datastream.windowing.evictors import Evictor
from strom.datastream.windowing.triggers import Trigger
from strom.runtime.state.api import VOID

_MERGING_KINDS = ("list", "reducing", "aggregating")


# hot path: called per record
def bind_namespace(state: Any, namespace: Any) -> Any:
    """Point `state` at `namespace`, re-resolving its map even for the same window object:
    clearing or merging a window may have replaced that window's map in the state table.
    States re-resolve whenever the namespace object changes, so only the same object needs the detour
    (and a state that does not say what it is bound to)."""
    if getattr(state, "namespace", namespace) is namespace:
        state.set_current_namespace(VOID)
    state.set_current_namespace(namespace)
    return state


class WindowTriggerContext(Trigger.OnMergeContext):
    """Trigger.TriggerContext / OnMergeContext for the current key and `window`."""

    def __init__(self, operator: Any) -> None:
        self._op = operator
        self._timers = operator.timer_service  # triggers register timers per element: one lookup less each
        self.window: Any = None
        self.merged_windows: list[Any] = []

    def get_current_processing_time(self) -> int:
        return self._op.ctx.processing_time_service.now()

    def get_metric_group(self) -> Any:
        return self._op.ctx.metrics

    def get_current_watermark(self) -> int:
        return self._op.current_watermark

    # hot path: the timer methods are called per element by most triggers
    def register_processing_time_timer(self, time: int) -> None:
        self._timers.register_processing_time_timer(self.window, int(time))

    def register_event_time_timer(self, time: int) -> None:
        self._timers.register_event_time_timer(self.window, int(time))

    def delete_processing_time_timer(self, time: int) -> None:
        self._timers.delete_processing_time_timer(self.window, int(time))

    def delete_event_time_timer(self, time: int) -> None:
        self._timers.delete_event_time_timer(self.window, int(time))

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        return bind_namespace(self._op.namespaced_state(state_descriptor), self.window)

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        if state_descriptor.kind not in _MERGING_KINDS:
            raise TypeError(
                f"operator {self._op.ctx.operator_name!r}: merge_partitioned_state({state_descriptor.name!r}) needs "
                f"list, reducing or aggregating state, not {state_descriptor.kind} state"
            )
        if self.merged_windows:
            state = bind_namespace(self._op.namespaced_state(state_descriptor), self.window)
            state.merge_namespaces(self.window, list(self.merged_windows))


class WindowAssignerContext(WindowAssigner.WindowAssignerContext):
    def __init__(self, operator: Any) -> None:
        self._op = operator
        self._pts = operator.ctx.processing_time_service  # processing-time assigners ask per element
        self._runtime_context: Any = None

    def get_current_processing_time(self) -> int:
        return self._pts.now()

    def get_runtime_context(self) -> Any:
        if self._runtime_context is None:
            self._runtime_context = self._op.runtime_context()
        return self._runtime_context


class WindowEvictorContext(Evictor.EvictorContext):
    def __init__(self, operator: Any) -> None:
        self._op = operator

    def get_current_processing_time(self) -> int:
        return self._op.ctx.processing_time_service.now()

    def get_metric_group(self) -> Any:
        return self._op.ctx.metrics

    def get_current_watermark(self) -> int:
        return self._op.current_watermark


class KeyedStateStore:
    """get_state & co. for ProcessWindowFunction contexts: across windows, or of one window."""

    def __init__(self, operator: Any, context: ProcessWindowContext | None) -> None:
        self._op = operator
        self._context = context  # None: global (VOID namespace) state

    def _state(self, descriptor: StateDescriptor) -> Any:
        if self._context is None:
            return self._op.backend.get_state(descriptor)
        if self._op.merging:
            raise TypeError(
                f"operator {self._op.ctx.operator_name!r}: per-window state is not allowed with merging "
                f"(session) windows; use global_state() instead"
            )
        return bind_namespace(self._op.namespaced_state(descriptor), self._context.current_window)

    get_state = _state
    get_list_state = _state
    get_map_state = _state
    get_reducing_state = _state
    get_aggregating_state = _state


class ProcessWindowContext(ProcessWindowFunction.Context):
    """Context of ProcessWindowFunction / ProcessAllWindowFunction for the window being evaluated."""

    def __init__(self, operator: Any) -> None:
        self._op = operator
        self.current_window: Any = None
        self._window_store = KeyedStateStore(operator, self)
        self._global_store = KeyedStateStore(operator, None)

    def window(self) -> Any:
        return self.current_window

    def current_processing_time(self) -> int:
        return self._op.ctx.processing_time_service.now()

    def current_watermark(self) -> int:
        return self._op.current_watermark

    def window_state(self) -> KeyedStateStore:
        return self._window_store

    def global_state(self) -> KeyedStateStore:
        return self._global_store

    def output(self, output_tag: Any, value: Any) -> None:
        self._op.side.add(output_tag, value, self.current_window.max_timestamp())
