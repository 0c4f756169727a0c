"""Evictors: remove elements from a window before and/or after its function runs.

Flink's evictors remove through an iterator; in Python they receive the window's
elements as a mutable `list[TimestampedValue]` and delete from it in place. Whatever
remains after `evict_after` stays in the window.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strom.common.time import Duration, to_millis


@dataclass(slots=True)
class TimestampedValue:
    """An element with its timestamp (None when the stream has no timestamps)."""

    value: Any
    timestamp: int | None = None

    def get_value(self) -> Any:
        return self.value

    def get_timestamp(self) -> int | None:
        return self.timestamp

    def has_timestamp(self) -> bool:
        return self.timestamp is not None


class Evictor(ABC):
    """Removes elements of a window pane before and/or after the window function."""

    class EvictorContext(ABC):
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
    def evict_before(
        self, elements: list[TimestampedValue], size: int, window: Any, evictor_context: Evictor.EvictorContext
    ) -> None:
        """Delete from `elements` before the window function sees them."""

    @abstractmethod
    def evict_after(
        self, elements: list[TimestampedValue], size: int, window: Any, evictor_context: Evictor.EvictorContext
    ) -> None:
        """Delete from `elements` after the window function ran."""

    def __repr__(self) -> str:
        return type(self).__name__


class _BeforeOrAfter(Evictor):
    def __init__(self, do_evict_after: bool) -> None:
        self.do_evict_after = do_evict_after

    def evict_before(
        self, elements: list[TimestampedValue], size: int, window: Any, evictor_context: Evictor.EvictorContext
    ) -> None:
        if not self.do_evict_after:
            self.evict(elements, size, evictor_context)

    def evict_after(
        self, elements: list[TimestampedValue], size: int, window: Any, evictor_context: Evictor.EvictorContext
    ) -> None:
        if self.do_evict_after:
            self.evict(elements, size, evictor_context)

    @abstractmethod
    def evict(self, elements: list[TimestampedValue], size: int, ctx: Evictor.EvictorContext) -> None:
        """Delete from `elements`."""


class CountEvictor(_BeforeOrAfter):
    """Keeps the last `max_count` elements."""

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        if not isinstance(max_count, int) or max_count < 0:
            raise ValueError(f"CountEvictor: max_count must be a non-negative int, got {max_count!r}")
        super().__init__(do_evict_after)
        self.max_count = max_count

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return CountEvictor(max_count, do_evict_after)

    def evict(self, elements: list[TimestampedValue], size: int, ctx: Evictor.EvictorContext) -> None:
        if size > self.max_count:
            del elements[: size - self.max_count]

    def __repr__(self) -> str:
        return f"CountEvictor({self.max_count})"


class TimeEvictor(_BeforeOrAfter):
    """Keeps elements whose timestamp is within `window_size` of the newest element's."""

    def __init__(self, window_size: int, do_evict_after: bool = False) -> None:
        super().__init__(do_evict_after)
        self.window_size = window_size

    @staticmethod
    def of(window_size: Duration | int, do_evict_after: bool = False) -> TimeEvictor:
        return TimeEvictor(to_millis(window_size, what="window_size"), do_evict_after)

    def evict(self, elements: list[TimestampedValue], size: int, ctx: Evictor.EvictorContext) -> None:
        # as Flink: a pane without timestamps is left alone
        if not elements or not elements[0].has_timestamp():
            return
        newest = max(e.timestamp for e in elements if e.timestamp is not None)
        cutoff = newest - self.window_size
        elements[:] = [e for e in elements if e.timestamp is None or e.timestamp > cutoff]

    def __repr__(self) -> str:
        return f"TimeEvictor({self.window_size})"


class DeltaFunction(ABC):
    """The distance between two elements, for DeltaEvictor."""

    @abstractmethod
    def get_delta(self, old_data_point: Any, new_data_point: Any) -> float:
        """Distance from old to new."""


class DeltaEvictor(_BeforeOrAfter):
    """Removes elements whose delta to the last element is at least `threshold`."""

    def __init__(self, threshold: float, delta_function: Any, do_evict_after: bool = False) -> None:
        super().__init__(do_evict_after)
        if isinstance(delta_function, DeltaFunction):
            self._delta: Callable[[Any, Any], float] = delta_function.get_delta
        elif callable(delta_function):
            self._delta = delta_function
        else:
            raise TypeError(
                f"DeltaEvictor expects a DeltaFunction or a function (a, b) -> float, got "
                f"{type(delta_function).__name__}"
            )
        self.threshold = threshold
        self.delta_function = delta_function

    @staticmethod
    def of(threshold: float, delta_function: Any, do_evict_after: bool = False) -> DeltaEvictor:
        return DeltaEvictor(threshold, delta_function, do_evict_after)

    def evict(self, elements: list[TimestampedValue], size: int, ctx: Evictor.EvictorContext) -> None:
        if not elements:
            return
        last = elements[-1].value
        delta, threshold = self._delta, self.threshold
        elements[:] = [e for e in elements if delta(e.value, last) < threshold]

    def __repr__(self) -> str:
        return f"DeltaEvictor({self.threshold})"
