"""Window assigners: which windows an element belongs to (`pyflink.datastream.window`).

Time windows are aligned to the epoch plus an offset, exactly as Flink computes them;
session assigners create one window per element and merge overlapping ones; count
assigners number a key's elements with a counter in keyed state.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from typing import Any, Generic, TypeVar

from strom.common.time import Duration, to_millis
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.windowing.triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
)
from strom.datastream.windowing.windows import CountWindow, GlobalWindow, TimeWindow, Window

Size = Duration | int


T = TypeVar("T")  # the element type
W = TypeVar("W")  # the window type
W2 = TypeVar("W2")


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns zero or more windows to an element."""

    class WindowAssignerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int:
            """Wall-clock milliseconds."""

        @abstractmethod
        def get_runtime_context(self) -> Any:
            """The operator's RuntimeContext (keyed state of the current key)."""

    @abstractmethod
    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Collection[Window]:
        """The windows of `element`."""

    @abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used unless `.trigger(...)` replaces it."""

    @abstractmethod
    def is_event_time(self) -> bool:
        """True if windows are based on element timestamps."""

    def get_window_serializer(self) -> None:
        """PyFlink compatibility: windows are Python objects here and need no serializer."""
        return None


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows can merge (sessions)."""

    class MergeCallback(ABC, Generic[W2]):
        """PyFlink's callback shape for merge_windows; Strom passes a plain callable `(merged, result)`."""

        @abstractmethod
        def merge(self, to_be_merged: Iterable[W2], merge_result: W2) -> None:
            """Merge `to_be_merged` into `merge_result`."""

    @abstractmethod
    def merge_windows(
        self, windows: Iterable[Window], callback: Callable[[list[Window], Window], None]
    ) -> None:
        """Call `callback(merged, result)` for every group of windows that merge."""


class SessionWindowTimeGapExtractor(ABC):
    """Extracts the session gap (milliseconds) from an element, for dynamic session windows."""

    @abstractmethod
    def extract(self, element: Any) -> int:
        """The gap after `element`."""


def _positive(value: Size, what: str, owner: str) -> int:
    ms = to_millis(value, what=what)
    if ms <= 0:
        raise ValueError(f"{owner}: {what} must be positive, got {ms} ms")
    return ms


# -- tumbling ------------------------------------------------------------------------------------
class _TumblingWindows(WindowAssigner):
    _last: TimeWindow | None = None  # the window handed out last (see window_of)

    def __init__(self, size: int, offset: int) -> None:
        if abs(offset) >= size:
            raise ValueError(
                f"{type(self).__name__} parameters must satisfy abs(offset) < size, got size={size} ms, "
                f"offset={offset} ms"
            )
        self.size = size
        self.offset = offset

    # hot path: called per element
    def window_of(self, time: int) -> list[Window]:
        """The window containing `time`. Consecutive elements mostly fall in the same window: the last one is
        handed out again (the same object, which spares window operators work keyed by the window)."""
        last = self._last
        if last is not None and last[0] <= time < last[1]:
            return [last]
        start = time - (time - self.offset) % self.size  # TimeWindow.get_window_start_with_offset
        last = self._last = TimeWindow(start, start + self.size)
        return [last]

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_last"}  # what it remembers is no part of it

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size})"


class TumblingEventTimeWindows(_TumblingWindows):
    """Fixed-size, non-overlapping windows by element timestamp."""

    @staticmethod
    def of(size: Size, offset: Size = 0) -> TumblingEventTimeWindows:
        owner = "TumblingEventTimeWindows"
        return TumblingEventTimeWindows(_positive(size, "size", owner), to_millis(offset, what="offset"))

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        if timestamp is None:
            raise ValueError(_NO_TIMESTAMP)
        return self.window_of(timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class TumblingProcessingTimeWindows(_TumblingWindows):
    """Fixed-size, non-overlapping windows by the operator's wall clock."""

    @staticmethod
    def of(size: Size, offset: Size = 0) -> TumblingProcessingTimeWindows:
        owner = "TumblingProcessingTimeWindows"
        return TumblingProcessingTimeWindows(_positive(size, "size", owner), to_millis(offset, what="offset"))

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        return self.window_of(context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


# -- sliding -------------------------------------------------------------------------------------
class _SlidingWindows(WindowAssigner):
    def __init__(self, size: int, slide: int, offset: int) -> None:
        if abs(offset) >= slide:
            raise ValueError(
                f"{type(self).__name__} parameters must satisfy abs(offset) < slide, got slide={slide} ms, "
                f"offset={offset} ms"
            )
        self.size = size
        self.slide = slide
        self.offset = offset

    def windows_for(self, timestamp: int) -> list[Window]:
        """Every window containing `timestamp`, latest start first (Flink's order)."""
        size, slide = self.size, self.slide
        last_start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, slide)
        return [TimeWindow(s, s + size) for s in range(last_start, timestamp - size, -slide)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size}, {self.slide})"


class SlidingEventTimeWindows(_SlidingWindows):
    """Windows of `size` starting every `slide`, by element timestamp."""

    @staticmethod
    def of(size: Size, slide: Size, offset: Size = 0) -> SlidingEventTimeWindows:
        owner = "SlidingEventTimeWindows"
        return SlidingEventTimeWindows(
            _positive(size, "size", owner), _positive(slide, "slide", owner), to_millis(offset, what="offset")
        )

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        if timestamp is None:
            raise ValueError(_NO_TIMESTAMP)
        return self.windows_for(timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class SlidingProcessingTimeWindows(_SlidingWindows):
    """Windows of `size` starting every `slide`, by the operator's wall clock."""

    @staticmethod
    def of(size: Size, slide: Size, offset: Size = 0) -> SlidingProcessingTimeWindows:
        owner = "SlidingProcessingTimeWindows"
        return SlidingProcessingTimeWindows(
            _positive(size, "size", owner), _positive(slide, "slide", owner), to_millis(offset, what="offset")
        )

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        return self.windows_for(context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


# -- sessions ------------------------------------------------------------------------------------
class _GapExtractor(SessionWindowTimeGapExtractor):
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def extract(self, element: Any) -> int:
        return to_millis(self.fn(element), what="session gap")


def _as_gap_extractor(extractor: Any) -> SessionWindowTimeGapExtractor:
    if isinstance(extractor, SessionWindowTimeGapExtractor):
        return extractor
    if callable(extractor):
        return _GapExtractor(extractor)
    raise TypeError(
        f"with_dynamic_gap expects a SessionWindowTimeGapExtractor or a function element -> gap, "
        f"got {type(extractor).__name__}"
    )


class _SessionWindows(MergingWindowAssigner):
    def __init__(self, gap: int | None, extractor: SessionWindowTimeGapExtractor | None) -> None:
        self.gap = gap
        self.extractor = extractor

    def _session(self, element: Any, start: int) -> list[Window]:
        gap = self.gap
        if gap is None:
            gap = to_millis(self.extractor.extract(element), what="session gap")  # type: ignore[union-attr]
            if gap <= 0:
                raise ValueError(
                    f"{type(self).__name__}: the dynamic session gap must be positive, got {gap} ms "
                    f"for element {element!r}"
                )
        return [TimeWindow(start, start + gap)]

    def merge_windows(
        self, windows: Iterable[Window], callback: Callable[[list[Window], Window], None]
    ) -> None:
        TimeWindow.merge_windows(windows, callback)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        gap = self.gap if self.gap is not None else "dynamic"
        return f"{type(self).__name__}({gap})"


class EventTimeSessionWindows(_SessionWindows):
    """Sessions by element timestamp: a window closes after `gap` without elements."""

    @staticmethod
    def with_gap(size: Size) -> EventTimeSessionWindows:
        return EventTimeSessionWindows(_positive(size, "session gap", "EventTimeSessionWindows"), None)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> EventTimeSessionWindows:
        return EventTimeSessionWindows(None, _as_gap_extractor(extractor))

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        if timestamp is None:
            raise ValueError(_NO_TIMESTAMP)
        gap = self.gap
        if gap is not None:  # hot path: called per element
            return [TimeWindow(timestamp, timestamp + gap)]
        return self._session(element, timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class ProcessingTimeSessionWindows(_SessionWindows):
    """Sessions by the operator's wall clock."""

    @staticmethod
    def with_gap(size: Size) -> ProcessingTimeSessionWindows:
        return ProcessingTimeSessionWindows(_positive(size, "session gap", "ProcessingTimeSessionWindows"), None)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> ProcessingTimeSessionWindows:
        return ProcessingTimeSessionWindows(None, _as_gap_extractor(extractor))

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        return self._session(element, context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class DynamicEventTimeSessionWindows(EventTimeSessionWindows):
    """PyFlink's name for event-time sessions with a per-element gap."""

    def __init__(self, session_window_time_gap_extractor: Any) -> None:
        super().__init__(None, _as_gap_extractor(session_window_time_gap_extractor))


class DynamicProcessingTimeSessionWindows(ProcessingTimeSessionWindows):
    """PyFlink's name for processing-time sessions with a per-element gap."""

    def __init__(self, session_window_time_gap_extractor: Any) -> None:
        super().__init__(None, _as_gap_extractor(session_window_time_gap_extractor))


# -- global and count ----------------------------------------------------------------------------
class GlobalWindows(WindowAssigner):
    """One window per key for all its elements; fires only through a custom trigger."""

    def __init__(self, trigger: Trigger | None = None) -> None:
        self._trigger = trigger

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    @staticmethod
    def create_with_end_of_stream_trigger() -> GlobalWindows:
        """Flink 2.x: fire the global window once, when a bounded input ends."""
        from strom.datastream.windowing.triggers import EndOfStreamTrigger

        return GlobalWindows(EndOfStreamTrigger())

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        return [GlobalWindow.get()]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return self._trigger if self._trigger is not None else NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindows()"


class CountTumblingWindowAssigner(WindowAssigner):
    """PyFlink's count windows: element i of a key goes to CountWindow(i // size)."""

    def __init__(self, window_size: int) -> None:
        if not isinstance(window_size, int) or window_size <= 0:
            raise ValueError(f"CountTumblingWindowAssigner: window size must be a positive int, got {window_size!r}")
        self.window_size = window_size
        self._count = ValueStateDescriptor("tumble-count-assigner")

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        state = context.get_runtime_context().get_state(self._count)
        count = state.value() or 0
        state.update(count + 1)
        return [CountWindow(count // self.window_size)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        # a count window never receives another element once full, so purging changes no
        # result and frees its state
        return PurgingTrigger.of(CountTrigger.of(self.window_size))

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self.window_size})"


class CountSlidingWindowAssigner(WindowAssigner):
    """PyFlink's sliding count windows: CountWindow(n) holds elements [n*slide, n*slide + size)."""

    def __init__(self, window_size: int, window_slide: int) -> None:
        for what, v in (("size", window_size), ("slide", window_slide)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"CountSlidingWindowAssigner: window {what} must be a positive int, got {v!r}")
        self.window_size = window_size
        self.window_slide = window_slide
        self._count = ValueStateDescriptor("slide-count-assigner")

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[Window]:
        state = context.get_runtime_context().get_state(self._count)
        count = state.value() or 0
        state.update(count + 1)
        size, slide = self.window_size, self.window_slide
        last_id = count // slide
        windows: list[Window] = []
        # every window whose element range [id*slide, id*slide + size) contains `count`
        wid = last_id
        while wid >= 0 and wid * slide + size > count:
            windows.append(CountWindow(wid))
            wid -= 1
        return windows

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return PurgingTrigger.of(CountTrigger.of(self.window_size))

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self.window_size}, {self.window_slide})"


_NO_TIMESTAMP = (
    "Record has no timestamp. Is the time characteristic set to 'ProcessingTime', or did you forget to call "
    "'assign_timestamps_and_watermarks(...)' / a WatermarkStrategy with a timestamp assigner?"
)
