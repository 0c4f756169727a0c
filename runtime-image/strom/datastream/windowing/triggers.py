"""Triggers: when a window's pane is evaluated and/or purged (`pyflink.datastream.window`).

A trigger is stateless; what it must remember lives in state from
`ctx.get_partitioned_state(descriptor)`, scoped to the current key and window, and it
acts through timers registered on the context. The built-in triggers follow Flink's
implementations line by line, including the corner cases (an event-time trigger fires
at once for an element of a window the watermark has already passed).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Generic, TypeVar

from strom.common.time import Duration, to_millis
from strom.datastream.functions import ReduceFunction
from strom.datastream.state import ReducingStateDescriptor, State, StateDescriptor


class TriggerResult(Enum):
    """What happens to a window: (fire?, purge?)."""

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]

    def is_purge(self) -> bool:
        return self.value[1]


T = TypeVar("T")  # the element type
W = TypeVar("W")  # the window type


class Trigger(ABC, Generic[T, W]):
    """Decides per element and per timer whether a window fires and/or is purged."""

    class TriggerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int:
            """Wall-clock milliseconds."""

        @abstractmethod
        def get_metric_group(self) -> Any:
            """The operator's metric group."""

        @abstractmethod
        def get_current_watermark(self) -> int:
            """The operator's current event time."""

        @abstractmethod
        def register_processing_time_timer(self, time: int) -> None:
            """Call on_processing_time when the wall clock reaches `time`."""

        @abstractmethod
        def register_event_time_timer(self, time: int) -> None:
            """Call on_event_time when the watermark reaches `time`."""

        @abstractmethod
        def delete_processing_time_timer(self, time: int) -> None:
            """Remove a processing-time timer of this key and window."""

        @abstractmethod
        def delete_event_time_timer(self, time: int) -> None:
            """Remove an event-time timer of this key and window."""

        @abstractmethod
        def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
            """State scoped to the current key and window."""

    class OnMergeContext(TriggerContext):
        @abstractmethod
        def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
            """Merge this state of the merged windows into the resulting window."""

    @abstractmethod
    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        """An element was added to `window`."""

    @abstractmethod
    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """A processing-time timer of this trigger fired."""

    @abstractmethod
    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """An event-time timer of this trigger fired."""

    def can_merge(self) -> bool:
        """True if on_merge is implemented, so that merging (session) assigners can use this trigger."""
        return False

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        raise TypeError(
            f"{type(self).__name__} does not support merging windows: implement can_merge() and on_merge()"
        )

    @abstractmethod
    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        """The window is purged: delete this trigger's timers and state for it."""

    def __repr__(self) -> str:
        return type(self).__name__


TriggerContext = Trigger.TriggerContext


class _Min(ReduceFunction):
    def reduce(self, value1: int, value2: int) -> int:
        return min(value1, value2)


class _Sum(ReduceFunction):
    def reduce(self, value1: int, value2: int) -> int:
        return value1 + value2


def _java_floor_to_interval(timestamp: int, interval: int) -> int:
    """`timestamp - timestamp % interval` with Java's truncating `%`, as Flink computes it."""
    return timestamp - int(math.fmod(timestamp, interval))


class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the end of the window."""

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            # the watermark is past the window: a late element (within allowed lateness) fires at once
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        # only register a timer if the watermark is not yet past the end of the merged window,
        # else the next element fires it (as in Flink)
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())


class ProcessingTimeTrigger(Trigger):
    """Fires once the wall clock passes the end of the window."""

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())


class CountTrigger(Trigger):
    """Fires every `count` elements of a window (count kept in window state)."""

    def __init__(self, count: int) -> None:
        if not isinstance(count, int) or count <= 0:
            raise ValueError(f"CountTrigger: count must be a positive int, got {count!r}")
        self.count = count
        self.state_desc = ReducingStateDescriptor("count", _Sum())

    @staticmethod
    def of(count: int) -> CountTrigger:
        return CountTrigger(count)

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        count = ctx.get_partitioned_state(self.state_desc)
        count.add(1)  # type: ignore[attr-defined]
        if count.get() >= self.count:  # type: ignore[attr-defined]
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.state_desc)

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        ctx.get_partitioned_state(self.state_desc).clear()

    def __repr__(self) -> str:
        return f"CountTrigger({self.count})"


class PurgingTrigger(Trigger):
    """Turns FIRE of the nested trigger into FIRE_AND_PURGE."""

    def __init__(self, nested_trigger: Trigger) -> None:
        if not isinstance(nested_trigger, Trigger):
            raise TypeError(f"PurgingTrigger.of expects a Trigger, got {type(nested_trigger).__name__}")
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        self.nested_trigger.clear(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger!r})"


class _ContinuousTrigger(Trigger):
    def __init__(self, interval: int) -> None:
        if interval <= 0:
            raise ValueError(f"{type(self).__name__}: interval must be positive, got {interval} ms")
        self.interval = interval
        self.state_desc = ReducingStateDescriptor("fire-time", _Min())

    def _register_next(self, time: int, window: Any, ctx: Trigger.TriggerContext, state: Any) -> None:
        next_fire = min(time + self.interval, window.max_timestamp())
        state.add(next_fire)
        self._register(ctx, next_fire)

    def _register(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.register_event_time_timer(time)

    def _delete(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.delete_event_time_timer(time)

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = ctx.get_partitioned_state(self.state_desc).get()  # type: ignore[attr-defined]
        if next_fire is not None:
            self._register(ctx, next_fire)

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        state = ctx.get_partitioned_state(self.state_desc)
        ts = state.get()  # type: ignore[attr-defined]
        if ts is not None:
            self._delete(ctx, ts)
            state.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.interval})"


class ContinuousEventTimeTrigger(_ContinuousTrigger):
    """Fires every `interval` of event time within a window, and at its end."""

    @staticmethod
    def of(interval: Duration | int) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(to_millis(interval, what="interval"))

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        state = ctx.get_partitioned_state(self.state_desc)
        if state.get() is None:  # type: ignore[attr-defined]
            ts = timestamp if timestamp is not None else ctx.get_current_watermark()
            self._register_next(_java_floor_to_interval(ts, self.interval), window, ctx, state)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        state = ctx.get_partitioned_state(self.state_desc)
        fire_at = state.get()  # type: ignore[attr-defined]
        if fire_at is not None and fire_at == time:
            state.clear()
            self._register_next(time, window, ctx, state)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE


class ContinuousProcessingTimeTrigger(_ContinuousTrigger):
    """Fires every `interval` of wall-clock time within a window."""

    @staticmethod
    def of(interval: Duration | int) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(to_millis(interval, what="interval"))

    def _register(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.register_processing_time_timer(time)

    def _delete(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.delete_processing_time_timer(time)

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        state = ctx.get_partitioned_state(self.state_desc)
        if state.get() is None:  # type: ignore[attr-defined]
            now = ctx.get_current_processing_time()
            self._register_next(_java_floor_to_interval(now, self.interval), window, ctx, state)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        state = ctx.get_partitioned_state(self.state_desc)
        if state.get() == time:  # type: ignore[attr-defined]
            state.clear()
            self._register_next(time, window, ctx, state)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE


class NeverTrigger(Trigger):
    """The default trigger of GlobalWindows: never fires."""

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        pass

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        pass


class EndOfStreamTrigger(NeverTrigger):
    """Fires the global window once, when the maximum watermark (end of a bounded input) arrives."""

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if time == window.max_timestamp() else TriggerResult.CONTINUE
