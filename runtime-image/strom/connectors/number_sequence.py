"""`NumberSequenceSource`: the numbers [start, end], split evenly among subtasks."""

from __future__ import annotations

from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext


class NumberSequenceReader(SourceReader):
    def __init__(self, start: int, end: int) -> None:
        self._next = start
        self._end = end  # inclusive

    def poll(self, max_records: int) -> list[int] | None:
        if self._next > self._end:
            return None
        stop = min(self._next + max_records, self._end + 1)
        batch = list(range(self._next, stop))
        self._next = stop
        return batch

    def snapshot_position(self) -> int:
        """The next number to emit: all a restored reader needs to resume exactly."""
        return self._next

    def restore_position(self, position: int) -> None:
        self._next = int(position)

    def pending_records(self) -> int:
        """Numbers this reader has yet to emit (the source's backlog, Flink's pendingRecords)."""
        return max(0, self._end + 1 - self._next)


class NumberSequenceSource(Source):
    name = "Sequence Source"

    def __init__(self, start: int, end: int) -> None:
        if end < start:
            raise ValueError(f"NumberSequenceSource: end {end} is before start {start}")
        self.start = start
        self.end = end

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        total = self.end - self.start + 1
        p, i = context.parallelism, context.subtask_index
        lo = self.start + total * i // p
        hi = self.start + total * (i + 1) // p - 1
        return NumberSequenceReader(lo, hi)
