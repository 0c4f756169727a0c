"""Windows: the finite buckets that a window assigner puts elements into.

A window is also a state namespace and a timer namespace, so every window type is
immutable and hashable by value. `TimeWindow` is `[start, end)`; its last timestamp,
`max_timestamp()`, is when an event-time window is complete.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter

from strom.common.time import MAX_WATERMARK

MAX_TIMESTAMP = MAX_WATERMARK


class Window(ABC):
    """A grouping of elements with a maximum timestamp (when all of its elements have arrived)."""

    __slots__ = ()

    @abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to this window."""


class TimeWindow(tuple, Window):
    """The interval `[start, end)` in milliseconds. Ordered by start, then end (as Flink).

    A tuple `(start, end)` underneath: windows are created, hashed and compared per record in
    window operators (state and timer namespaces), and tuple's C implementations of those are
    several times faster than a frozen dataclass's."""

    __slots__ = ()

    def __new__(cls, start: int, end: int) -> TimeWindow:
        return tuple.__new__(cls, (start, end))

    def __getnewargs__(self) -> tuple[int, int]:  # type: ignore[override]
        return (self[0], self[1])

    start = property(itemgetter(0), doc="First timestamp in the window.")
    end = property(itemgetter(1), doc="First timestamp after the window.")

    def max_timestamp(self) -> int:
        return self[1] - 1  # end - 1 (without the property: called per record)

    def get_start(self) -> int:
        return self.start

    def get_end(self) -> int:
        return self.end

    def intersects(self, other: TimeWindow) -> bool:
        """True if the windows overlap or touch (Flink merges touching session windows)."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window that contains both."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Start of the aligned window of `window_size` containing `timestamp`.

        Python's `%` is a floor modulo, so this is also right for negative timestamps
        (the case Flink handles with an explicit branch)."""
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(
        windows: Iterable[TimeWindow], callback: Callable[[list[TimeWindow], TimeWindow], None]
    ) -> None:
        """Merge overlapping windows: `callback(merged_windows, result)` per group of two or more."""
        current: TimeWindow | None = None
        group: list[TimeWindow] = []
        groups: list[tuple[TimeWindow, list[TimeWindow]]] = []
        # hot path: called per record of a session-window operator. Sorted by start, so a window that
        # intersects the current one (`intersects`) starts within it and covers up to the larger end (`cover`)
        for candidate in sorted(windows):
            if current is None:
                current, group = candidate, [candidate]
            elif candidate[0] <= current[1]:
                if candidate[1] > current[1]:
                    current = TimeWindow(current[0], candidate[1])
                group.append(candidate)
            else:
                groups.append((current, group))
                current, group = candidate, [candidate]
        if current is not None:
            groups.append((current, group))
        for result, merged in groups:
            if len(merged) > 1:
                callback(merged, result)

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"


@dataclass(frozen=True, slots=True, order=True)
class CountWindow(Window):
    """A count window, identified by a per-key sequence number."""

    id: int

    def max_timestamp(self) -> int:
        return MAX_TIMESTAMP

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


@dataclass(frozen=True, slots=True)
class GlobalWindow(Window):
    """The single window of `GlobalWindows`: all elements of a key."""

    @staticmethod
    def get() -> GlobalWindow:
        return _GLOBAL_WINDOW

    def max_timestamp(self) -> int:
        return MAX_TIMESTAMP

    def __repr__(self) -> str:
        return "GlobalWindow"


_GLOBAL_WINDOW = GlobalWindow()
