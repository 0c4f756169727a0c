"""`NumberSequenceSource`: the numbers [start, end], split evenly among subtasks."""

from __future__ import annotations

from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext
from strom.connectors.index_splits import IndexSplitCursor, Split, redistribute


class NumberSequenceReader(SourceReader):
    def __init__(self, start: int, end: int) -> None:
        self._cursor = IndexSplitCursor([(start, 1, end + 1)])  # end inclusive

    def poll(self, max_records: int) -> list[int] | None:
        return self._cursor.take(max_records)

    def snapshot_splits(self) -> list[Split]:
        """The numbers still to emit, as index splits: a restored reader resumes exactly, at any parallelism."""
        return list(self._cursor.splits)

    def restore_splits(self, splits: list[Split]) -> None:
        self._cursor = IndexSplitCursor(splits)

    def pending_records(self) -> int:
        """Numbers this reader has yet to emit (the source's backlog, Flink's pendingRecords)."""
        return self._cursor.remaining() or 0


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

    def redistribute_splits(self, splits: list[Split], subtask_index: int, parallelism: int) -> list[Split]:
        return redistribute(splits, subtask_index, parallelism)
