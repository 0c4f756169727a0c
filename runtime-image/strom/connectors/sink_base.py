"""The sink contract the sink-writer operator drives (Flink's Sink V2).

A `Sink` is a description shipped with the job; each parallel subtask asks it for a
`SinkWriter`. The operator hands the writer every record with a `SinkWriterContext`,
calls `flush(end_of_input=True)` when the input ended, and `close()` in every case
(also on failure or cancellation, when nothing may be published).

Exactly-once sinks are a `TwoPhaseCommittingSink`: when the job takes checkpoints, before each
barrier the operator asks the writer to `prepare_commit()` (e.g. close the open files, which stay
invisible), keeps the committables in the checkpoint, and hands them to the sink's `Committer` once
that checkpoint completed. A job restored from a checkpoint or savepoint commits the committables
it holds again, so `Committer.commit` must be idempotent (a committable already committed is done).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class ProcessingTimeService(Protocol):
    """The task's timer service: callbacks run in the task thread, so writers need no locks."""

    def now(self) -> int: ...

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> None: ...


@dataclass(frozen=True, slots=True)
class SinkInitContext:
    """What a writer learns about its subtask (Flink's Sink.InitContext)."""

    subtask_index: int
    parallelism: int
    attempt_number: int
    processing_time_service: ProcessingTimeService
    config: Any = None
    # the job takes checkpoints or savepoints: a two-phase committing writer then publishes nothing
    # itself, everything goes through prepare_commit and the committer
    checkpointing: bool = False
    # the sink operator's uid: tells two sinks of one job apart (e.g. whose leftover files are whose)
    operator_uid: str = ""
    # the sink operator's metric group (Flink's InitContext.metricGroup()): writers register their
    # metrics there (Kafka's numRecordsSend, JDBC's numRecordsOut); None outside a running task
    metric_group: Any = None


class SinkWriterContext(Protocol):
    """Per-record context (Flink's SinkWriter.Context)."""

    def timestamp(self) -> int | None: ...

    def current_watermark(self) -> int: ...


class SinkWriter(ABC):
    @abstractmethod
    def write(self, value: Any, context: SinkWriterContext) -> None:
        """Write one record."""

    @abstractmethod
    def flush(self, end_of_input: bool) -> None:
        """Make written records durable; at the end of input, publish everything."""

    def close(self) -> None:
        """Release resources. Called after flush at the end of input, or alone on failure."""


class Sink(ABC):
    """A parallel sink: one writer per subtask."""

    sink_name: str = "Sink"

    @abstractmethod
    def create_writer(self, context: SinkInitContext) -> SinkWriter:
        """A writer for this subtask."""


class PrecommittingSinkWriter(SinkWriter):
    """A writer of a `TwoPhaseCommittingSink` (Flink's PrecommittingSinkWriter)."""

    @abstractmethod
    def prepare_commit(self) -> list[Any]:
        """Everything written since the last call, made durable but not visible: the committables
        (picklable) that the `Committer` publishes once the checkpoint they belong to completed."""


class Committer(ABC):
    @abstractmethod
    def commit(self, committables: list[Any]) -> None:
        """Publish `committables`. Idempotent: one already published is skipped."""

    def close(self) -> None:
        """Release what committing held (connections, clients); called once, when the operator closes
        (Flink's Committer is AutoCloseable)."""


class TwoPhaseCommittingSink(Sink):
    """A sink whose writes become visible only with a completed checkpoint: exactly-once output."""

    @abstractmethod
    def create_writer(self, context: SinkInitContext) -> PrecommittingSinkWriter:
        """A writer for this subtask."""

    @abstractmethod
    def create_committer(self) -> Committer:
        """The committer of this subtask's committables."""
