"""The async I/O operator's element queues (Flink's Ordered/UnorderedStreamElementQueue): pure logic.

Every input element waiting for its results, or holding results not yet emitted, is an `AsyncEntry`
in the queue; the queue's length is what the operator's capacity bounds. `complete(entry)` returns
what may leave now, in order: entries (their results) and watermarks (ints).

* Ordered: results leave in input order; a watermark leaves once every element before it left.
* Unordered: results leave as they complete, but never across a watermark: the elements between two
  watermarks form a segment, a segment's results leave only after the previous segment's watermark,
  and a watermark only after every element of its segment (Flink's semantics: results may reorder
  between watermarks, never past one).
"""

from __future__ import annotations

from collections import deque
from typing import Any


class AsyncEntry:
    __slots__ = ("seq", "value", "timestamp", "results", "error", "segment")

    def __init__(self, seq: int, value: Any, timestamp: int | None) -> None:
        self.seq = seq
        self.value = value
        self.timestamp = timestamp
        self.results: list[Any] | None = None
        self.error: BaseException | None = None
        self.segment: Any = None


Emitted = AsyncEntry | int  # an entry whose results leave, or a watermark


class OrderedQueue:
    def __init__(self) -> None:
        self._items: deque[Any] = deque()  # AsyncEntry or int (watermark)
        self._done: set[int] = set()  # seq of completed entries not yet at the head
        self._entries = 0

    def __len__(self) -> int:
        return self._entries

    def add(self, entry: AsyncEntry) -> None:
        self._items.append(entry)
        self._entries += 1

    def add_watermark(self, timestamp: int) -> bool:
        """Queue the watermark behind the elements before it; False: none wait, emit it now."""
        if not self._items:
            return False
        self._items.append(timestamp)
        return True

    def complete(self, entry: AsyncEntry) -> list[Emitted]:
        self._done.add(entry.seq)
        out: list[Emitted] = []
        items, done = self._items, self._done
        while items:
            head = items[0]
            if type(head) is int:
                out.append(items.popleft())
            elif head.seq in done:
                done.discard(head.seq)
                out.append(items.popleft())
                self._entries -= 1
            else:
                break
        return out

    def pending(self) -> list[AsyncEntry]:
        """Every element not emitted yet, in input order (what a checkpoint stores)."""
        return [e for e in self._items if type(e) is not int]


class _Segment:
    __slots__ = ("waiting", "completed", "watermark")

    def __init__(self, watermark: int | None = None) -> None:
        self.waiting: dict[int, AsyncEntry] = {}
        self.completed: list[AsyncEntry] = []
        self.watermark = watermark  # None: the open segment new elements join


class UnorderedQueue:
    def __init__(self) -> None:
        self._segments: deque[_Segment] = deque([_Segment()])
        self._entries = 0

    def __len__(self) -> int:
        return self._entries

    def add(self, entry: AsyncEntry) -> None:
        last = self._segments[-1]
        if last.watermark is not None:
            last = _Segment()
            self._segments.append(last)
        last.waiting[entry.seq] = entry
        entry.segment = last
        self._entries += 1

    def add_watermark(self, timestamp: int) -> bool:
        if self._entries == 0:
            return False
        last = self._segments[-1]
        if last.watermark is None:
            last.watermark = timestamp
        else:
            self._segments.append(_Segment(timestamp))
        return True

    def complete(self, entry: AsyncEntry) -> list[Emitted]:
        segment = entry.segment
        del segment.waiting[entry.seq]
        entry.segment = None
        segments = self._segments
        if segment is not segments[0]:
            segment.completed.append(entry)  # waits for the watermark before its segment
            return []
        self._entries -= 1
        out: list[Emitted] = [entry]
        while not segments[0].waiting and segments[0].watermark is not None:
            out.append(segments.popleft().watermark)  # type: ignore[arg-type]
            if not segments:
                segments.append(_Segment())
            head = segments[0]
            out.extend(head.completed)
            self._entries -= len(head.completed)
            head.completed = []
        return out

    def pending(self) -> list[AsyncEntry]:
        entries = [e for s in self._segments for e in (*s.waiting.values(), *s.completed)]
        return sorted(entries, key=lambda e: e.seq)
