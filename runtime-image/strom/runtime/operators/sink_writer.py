"""The Sink V2 operator behind `ds.sink_to(sink)`: feeds records to the sink's writer.

It owns the writer's lifecycle: created in open(), flushed with end_of_input=True when
the input ends, closed in every case. It knows nothing about what the sink writes.
"""

from __future__ import annotations

from typing import Any

from strom.connectors.sink_base import SinkInitContext
from strom.runtime.operators.base import StreamOperator
from strom.runtime.operators.sinks import write_each


class _WriterContext:
    """The per-record context; one object reused for every record of the subtask."""

    __slots__ = ("_ts", "_op")

    def __init__(self, op: StreamOperator) -> None:
        self._ts: int | None = None
        self._op = op

    def timestamp(self) -> int | None:
        return self._ts

    def current_watermark(self) -> int:
        return self._op.current_watermark


class SinkWriterOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        ctx = self.ctx
        assert ctx is not None
        init = SinkInitContext(
            subtask_index=ctx.subtask_index,
            parallelism=ctx.parallelism,
            attempt_number=ctx.attempt,
            processing_time_service=ctx.processing_time_service,
            config=ctx.config,
        )
        self.writer = self.params["sink"].create_writer(init)
        self._write = self.writer.write
        self._wctx = _WriterContext(self)

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        write_each(self._write, self._wctx, values, timestamps)

    def finish(self) -> None:
        self.writer.flush(True)

    def close(self) -> None:
        writer = getattr(self, "writer", None)
        try:
            if writer is not None:
                writer.close()
        finally:
            super().close()
