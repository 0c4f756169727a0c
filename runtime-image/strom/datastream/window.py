"""Windows on streams (`pyflink.datastream.window`): WindowedStream and AllWindowedStream.

This module is the user's entry point: it re-exports the windows, assigners, triggers and
evictors of `strom.datastream.windowing` under PyFlink's names, and records a window
transformation when a terminal operation (reduce, aggregate, apply, process) is called.
The runtime's WindowOperator interprets the recorded parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from strom.common.refused_names import refused_name
from strom.common.time import Duration, to_millis
from strom.common.typeinfo import TypeInformation
from strom.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    KeySelector,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    ReduceFunction,
    WindowFunction,
    as_reduce_function,
)
from strom.datastream.output_tag import OutputTag
from strom.datastream.windowing.assigners import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from strom.datastream.windowing.evictors import (
    CountEvictor,
    DeltaEvictor,
    DeltaFunction,
    Evictor,
    TimeEvictor,
    TimestampedValue,
)
from strom.datastream.windowing.triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    EndOfStreamTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from strom.datastream.windowing.windows import CountWindow, GlobalWindow, TimeWindow, Window
from strom.graph.transformations import OperatorDescriptor

if TYPE_CHECKING:
    from strom.datastream.data_stream import DataStream, KeyedStream


def count_window_parts(size: int, slide: int | None = None) -> tuple[WindowAssigner, Trigger, Evictor | None]:
    """PyFlink's count_window: `count_window(size)` = CountTumblingWindowAssigner(size),
    `count_window(size, slide)` = CountSlidingWindowAssigner(size, slide), each with its default
    trigger (fire and purge when a window holds `size` elements).

    PyFlink and Java Flink differ here and the API follows PyFlink (ARCHITECTURE.md): Java's
    countWindow(size, slide) is GlobalWindows + CountTrigger(slide) + CountEvictor(size), which
    also fires partly filled windows; build that with `window(GlobalWindows.create())
    .trigger(CountTrigger.of(slide)).evictor(CountEvictor.of(size))` if you want it.
    """
    if not isinstance(size, int) or size <= 0:
        raise ValueError(f"count_window: size must be a positive int, got {size!r}")
    if slide is None or slide == 0:
        tumbling = CountTumblingWindowAssigner.of(size)
        return tumbling, tumbling.get_default_trigger(), None
    if not isinstance(slide, int) or slide < 0:
        raise ValueError(f"count_window: slide must be a positive int, got {slide!r}")
    sliding = CountSlidingWindowAssigner.of(size, slide)
    return sliding, sliding.get_default_trigger(), None


# -- plain callables as window functions -----------------------------------------------------------
class _CallableWindowFunction(WindowFunction):
    def __init__(self, fn: Callable[[Any, Any, Iterable[Any]], Iterable[Any]]) -> None:
        self.fn = fn

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        return self.fn(key, window, inputs)


class _CallableAllWindowFunction(AllWindowFunction):
    def __init__(self, fn: Callable[[Any, Iterable[Any]], Iterable[Any]]) -> None:
        self.fn = fn

    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        return self.fn(window, inputs)


class _NullKeySelector(KeySelector):
    """window_all: every element has the same key, so one subtask sees the whole stream."""

    def get_key(self, value: Any) -> int:
        return 0


def _function_name(fn: Any) -> str:
    return type(fn).__name__ if not type(fn).__name__.startswith("_Callable") else "Lambda"


class _WindowedBase:
    """Configuration shared by keyed and non-keyed windowed streams."""

    _all = False

    def __init__(self, keyed_stream: KeyedStream, window_assigner: WindowAssigner) -> None:
        if not isinstance(window_assigner, WindowAssigner):
            raise TypeError(
                f"window() expects a WindowAssigner (e.g. TumblingEventTimeWindows.of(...)), "
                f"got {type(window_assigner).__name__}"
            )
        self._keyed_stream = keyed_stream
        self._assigner = window_assigner
        self._trigger: Trigger | None = None
        self._evictor: Evictor | None = None
        self._allowed_lateness = 0
        self._late_tag: OutputTag | None = None

    def get_execution_environment(self) -> Any:
        return self._keyed_stream.get_execution_environment()

    def get_input_type(self) -> TypeInformation | None:
        return self._keyed_stream.get_type()

    def trigger(self, trigger: Trigger) -> Any:
        if not isinstance(trigger, Trigger):
            raise TypeError(f"trigger() expects a Trigger, got {type(trigger).__name__}")
        if isinstance(self._assigner, MergingWindowAssigner) and not trigger.can_merge():
            raise TypeError(
                f"a merging window assigner ({self._assigner!r}) cannot be used with a trigger that does not "
                f"support merging ({trigger!r}): implement can_merge() and on_merge()"
            )
        self._trigger = trigger
        return self

    def evictor(self, evictor: Evictor | None) -> Any:
        if evictor is not None and not isinstance(evictor, Evictor):
            raise TypeError(f"evictor() expects an Evictor, got {type(evictor).__name__}")
        self._evictor = evictor
        return self

    def allowed_lateness(self, time_ms: Duration | int) -> Any:
        lateness = to_millis(time_ms, what="allowed lateness")
        if lateness < 0:
            raise ValueError(f"allowed_lateness: the allowed lateness cannot be negative, got {lateness} ms")
        self._allowed_lateness = lateness
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> Any:
        if not isinstance(output_tag, OutputTag):
            raise TypeError("side_output_late_data() expects an OutputTag")
        self._late_tag = output_tag
        return self

    # -- building the transformation ------------------------------------------------------------
    def _build(
        self,
        *,
        contents: str,
        window_function: Any,
        window_function_kind: str | None,
        reduce_function: ReduceFunction | None = None,
        aggregate_function: Any = None,
        output_type: TypeInformation | None,
        fn_name: str,
    ) -> DataStream:
        from strom.datastream.data_stream import DataStream

        trigger = self._trigger if self._trigger is not None else self._assigner.get_default_trigger()
        params = {
            "assigner": self._assigner,
            "trigger": trigger,
            "evictor": self._evictor,
            "allowed_lateness": self._allowed_lateness,
            "late_data_tag": self._late_tag,
            "contents": contents,
            "reduce_function": reduce_function,
            "aggregate_function": aggregate_function,
            "window_function": window_function,
            "window_function_kind": window_function_kind,
        }
        prefix = "AllWindow" if self._all else "Window"
        evictor = f", {self._evictor!r}" if self._evictor is not None else ""
        name = f"{prefix}({self._assigner!r}, {trigger!r}{evictor}, {fn_name})"
        t = self._keyed_stream._keyed(name, OperatorDescriptor("window", params=params), output_type)
        if self._all:
            # Flink runs non-keyed windows in one subtask
            t.parallelism = 1
            t.parallelism_fixed = True
        return DataStream(self._keyed_stream._env, t)

    def _window_function(self, fn: Any, *, allow_none: bool, what: str) -> tuple[Any, str | None]:
        """(function, kind) for an optional WindowFunction / ProcessWindowFunction (or All*)."""
        if fn is None:
            if allow_none:
                return None, None
            raise TypeError(f"{what}() needs a window function")
        if self._all:
            if isinstance(fn, ProcessAllWindowFunction):
                return fn, "process_all"
            if isinstance(fn, AllWindowFunction):
                return fn, "all_window"
            if callable(fn) and not isinstance(fn, ProcessWindowFunction | WindowFunction):
                return _CallableAllWindowFunction(fn), "all_window"
            raise TypeError(
                f"{what}() on a non-keyed window expects an AllWindowFunction or ProcessAllWindowFunction, "
                f"got {type(fn).__name__}"
            )
        if isinstance(fn, ProcessWindowFunction):
            return fn, "process"
        if isinstance(fn, WindowFunction):
            return fn, "window"
        if callable(fn) and not isinstance(fn, ProcessAllWindowFunction | AllWindowFunction):
            return _CallableWindowFunction(fn), "window"
        raise TypeError(
            f"{what}() on a keyed window expects a WindowFunction or ProcessWindowFunction, got {type(fn).__name__}"
        )

    # -- terminal operations ----------------------------------------------------------------------
    def reduce(
        self,
        reduce_function: ReduceFunction | Callable[[Any, Any], Any],
        window_function: Any = None,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Incrementally reduce each window; optionally hand the result to a window function."""
        reduce_fn = as_reduce_function(reduce_function)
        wf, kind = self._window_function(window_function, allow_none=True, what="reduce")
        if wf is None and output_type is None:
            output_type = self._keyed_stream.get_type()
        return self._build(
            contents="reduce",
            reduce_function=reduce_fn,
            window_function=wf,
            window_function_kind=kind,
            output_type=output_type,
            fn_name=_function_name(wf if wf is not None else reduce_fn),
        )

    def aggregate(
        self,
        aggregate_function: AggregateFunction,
        window_function: Any = None,
        accumulator_type: TypeInformation | None = None,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Incrementally aggregate each window; optionally hand the result to a window function."""
        if not all(hasattr(aggregate_function, m) for m in ("create_accumulator", "add", "get_result")):
            raise TypeError(
                f"aggregate() expects an AggregateFunction (create_accumulator, add, get_result), "
                f"got {type(aggregate_function).__name__}"
            )
        wf, kind = self._window_function(window_function, allow_none=True, what="aggregate")
        return self._build(
            contents="aggregate",
            aggregate_function=aggregate_function,
            window_function=wf,
            window_function_kind=kind,
            output_type=output_type,
            fn_name=_function_name(wf if wf is not None else aggregate_function),
        )

    def apply(self, window_function: Any, output_type: TypeInformation | None = None) -> DataStream:
        """Evaluate a WindowFunction (AllWindowFunction) over all elements of each window."""
        wf, kind = self._window_function(window_function, allow_none=False, what="apply")
        return self._build(
            contents="list", window_function=wf, window_function_kind=kind, output_type=output_type,
            fn_name=_function_name(wf),
        )

    def process(self, process_window_function: Any, output_type: TypeInformation | None = None) -> DataStream:
        """Evaluate a ProcessWindowFunction (ProcessAllWindowFunction) over all elements of each window."""
        expected = ProcessAllWindowFunction if self._all else ProcessWindowFunction
        if not isinstance(process_window_function, expected):
            raise TypeError(
                f"process() expects a {expected.__name__}, got {type(process_window_function).__name__}"
            )
        wf, kind = self._window_function(process_window_function, allow_none=False, what="process")
        return self._build(
            contents="list", window_function=wf, window_function_kind=kind, output_type=output_type,
            fn_name=_function_name(wf),
        )


class WindowedStream(_WindowedBase):
    """A keyed stream split into windows per key: `key_by(...).window(assigner)`."""

    def trigger(self, trigger: Trigger) -> WindowedStream:
        return super().trigger(trigger)  # type: ignore[no-any-return]

    def evictor(self, evictor: Evictor | None) -> WindowedStream:
        return super().evictor(evictor)  # type: ignore[no-any-return]

    def allowed_lateness(self, time_ms: Duration | int) -> WindowedStream:
        return super().allowed_lateness(time_ms)  # type: ignore[no-any-return]

    def side_output_late_data(self, output_tag: OutputTag) -> WindowedStream:
        return super().side_output_late_data(output_tag)  # type: ignore[no-any-return]


class AllWindowedStream(_WindowedBase):
    """A non-keyed stream split into windows: `window_all(assigner)`, evaluated in one subtask."""

    _all = True

    def __init__(self, data_stream: DataStream, window_assigner: WindowAssigner) -> None:
        super().__init__(data_stream.key_by(_NullKeySelector()), window_assigner)

    def trigger(self, trigger: Trigger) -> AllWindowedStream:
        return super().trigger(trigger)  # type: ignore[no-any-return]

    def evictor(self, evictor: Evictor | None) -> AllWindowedStream:
        return super().evictor(evictor)  # type: ignore[no-any-return]

    def allowed_lateness(self, time_ms: Duration | int) -> AllWindowedStream:
        return super().allowed_lateness(time_ms)  # type: ignore[no-any-return]

    def side_output_late_data(self, output_tag: OutputTag) -> AllWindowedStream:
        return super().side_output_late_data(output_tag)  # type: ignore[no-any-return]


_NO_SERIALIZERS = "Strom's windows are Python objects, pickled with the state that holds them"
TimeWindowSerializer = refused_name("TimeWindowSerializer", _NO_SERIALIZERS, "use TimeWindow itself")
CountWindowSerializer = refused_name("CountWindowSerializer", _NO_SERIALIZERS, "use CountWindow itself")

__all__ = [
    "CountWindowSerializer",
    "TimeWindowSerializer",
    "AllWindowedStream",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountEvictor",
    "CountSlidingWindowAssigner",
    "CountTrigger",
    "CountTumblingWindowAssigner",
    "CountWindow",
    "DeltaEvictor",
    "DeltaFunction",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EndOfStreamTrigger",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "Evictor",
    "GlobalWindow",
    "GlobalWindows",
    "MergingWindowAssigner",
    "NeverTrigger",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TimeEvictor",
    "TimeWindow",
    "TimestampedValue",
    "Trigger",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "Window",
    "WindowAssigner",
    "WindowedStream",
    "count_window_parts",
]
