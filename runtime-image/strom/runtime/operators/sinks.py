"""Sinks: print (Flink's `N> ` prefix when parallel), user SinkFunctions, collect."""

from __future__ import annotations

import sys
import threading
from typing import Any

from strom.runtime.operators.base import StreamOperator

_print_lock = threading.Lock()


class PrintSinkOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        ctx = self.ctx
        assert ctx is not None
        ident = self.params.get("identifier")
        parallel = ctx.parallelism > 1
        if ident and parallel:
            self._prefix = f"{ident}:{ctx.subtask_index + 1}> "
        elif ident:
            self._prefix = f"{ident}> "
        elif parallel:
            self._prefix = f"{ctx.subtask_index + 1}> "
        else:
            self._prefix = ""
        self._stream = sys.stderr if self.params.get("stderr") else sys.stdout

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        prefix = self._prefix
        text = "".join(f"{prefix}{v}\n" for v in values)
        with _print_lock:
            self._stream.write(text)
            self._stream.flush()


class SinkContext:
    __slots__ = ("_ts", "_op")

    def __init__(self, op: StreamOperator) -> None:
        self._ts: int | None = None
        self._op = op

    def timestamp(self) -> int | None:
        return self._ts

    def current_processing_time(self) -> int:
        return self._op.ctx.processing_time_service.now()  # type: ignore[union-attr]

    def current_watermark(self) -> int:
        return self._op.current_watermark


class SinkFunctionOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._invoke = self.function.invoke
        self._sctx = SinkContext(self)

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        invoke, ctx = self._invoke, self._sctx
        if timestamps is None:
            ctx._ts = None
            for v in values:
                invoke(v, ctx)
        else:
            for v, t in zip(values, timestamps, strict=True):
                ctx._ts = t
                invoke(v, ctx)

    def finish(self) -> None:
        finish = getattr(self.function, "finish", None)
        if finish is not None:
            finish()


class CollectSinkOperator(StreamOperator):
    """Hands records to the client of `execute_and_collect` through a registered queue."""

    def open(self) -> None:
        super().open()
        from strom.datastream.collect import result_queue

        self._queue = result_queue(self.params["collect_id"])

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._queue.put(("records", list(values)))
