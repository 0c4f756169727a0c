"""The source contract the source task drives (Flink's new Source API, simplified).

A `Source` is a description shipped with the job; each parallel subtask asks it for a
`SourceReader` over its share of the splits. Readers hand out records in batches:
per-record calls across this boundary would dominate the cost of a fast pipeline.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Boundedness(Enum):
    BOUNDED = 0
    CONTINUOUS_UNBOUNDED = 1


@dataclass(frozen=True, slots=True)
class SourceReaderContext:
    subtask_index: int
    parallelism: int
    config: Any = None
    # The operator's RuntimeContext, for sources that run user functions (legacy SourceFunction.open).
    runtime_context: Any = None


class SourceReader(ABC):
    """Readers whose records carry timestamps set `last_timestamps` after each poll: a list
    parallel to the returned batch, or None when the batch has none."""

    @abstractmethod
    def poll(self, max_records: int) -> list[Any] | None:
        """Up to max_records records; [] when none are available now (may wait briefly);
        None when the reader has no more records, ever.

        A reader that waits (a rate limit, an empty poll of an external system, a pause between
        directory scans) returns [] after the wait, never records: the task counts the time of a
        poll that returned [] as idle (busyTimeMsPerSecond excludes it), as Flink's sources report
        NOTHING_AVAILABLE and wait on their availability future."""

    def pending_records(self) -> int | None:
        """Records this reader still has to emit (its backlog, reported as Flink's `pendingRecords`
        metric), or None when it does not know. Called from another thread: a cheap estimate."""
        return None

    def close(self) -> None:
        pass


class Source(ABC):
    """A parallel source: splits are divided among subtasks."""

    name: str = "Source"
    # True when the reader itself shapes records by the declared type info (else the source
    # operator converts, e.g. tuples to Rows)
    converts_types: bool = False

    @abstractmethod
    def get_boundedness(self) -> Boundedness:
        """BOUNDED or CONTINUOUS_UNBOUNDED."""

    @abstractmethod
    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        """A reader over this subtask's share."""

    @property
    def max_parallelism(self) -> int | None:
        """Highest parallelism the source supports (None = any)."""
        return None


class IteratorReader(SourceReader):
    """A reader over a plain Python iterator, in slices."""

    def __init__(self, iterator: Any) -> None:
        self._it = iter(iterator)
        self._done = False

    def poll(self, max_records: int) -> list[Any] | None:
        if self._done:
            return None
        from itertools import islice

        batch = list(islice(self._it, max_records))
        if len(batch) < max_records:
            self._done = True
            return batch or None
        return batch
