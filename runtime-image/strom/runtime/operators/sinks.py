"""Sinks: print (Flink's `N> ` prefix when parallel), user SinkFunctions, collect."""

from __future__ import annotations

import os
import queue
import sys
import threading
from typing import Any

from strom.common.java_strings import java_formatter
from strom.common.row import detached
from strom.runtime.operators.base import StreamOperator

_print_lock = threading.Lock()
_stdout_closed = False


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
        # PyFlink prints Java's toString of the declared type's value: (And,5), +I[And, 5]; untyped: str(value)
        self._format = java_formatter(self.params.get("type_info"))

    def redirect(self, stream: Any) -> None:
        """Write to `stream` (a file-like with write and flush) instead: BATCH mode on Spark sends
        the lines back to the driver, whose stdout is the user's."""
        self._stream = stream

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        prefix = self._prefix
        fmt = self._format
        text = "".join(f"{prefix}{fmt(v)}\n" for v in values)
        global _stdout_closed
        with _print_lock:
            if _stdout_closed:
                return
            try:
                self._stream.write(text)
                self._stream.flush()
            except BrokenPipeError:
                # The reader went away (e.g. `strom run job.py | head`): stop printing quietly, as
                # command-line tools do, and point the descriptor at /dev/null so that the
                # interpreter's final flush does not fail either.
                _stdout_closed = True
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self._stream.fileno())


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


def write_each(write: Any, ctx: Any, values: list[Any], timestamps: list[Any] | None) -> None:
    """Hand each record to a per-record sink call with its timestamp on `ctx._ts`."""
    # hot path: one call per record
    if timestamps is None:
        ctx._ts = None
        for v in values:
            write(v, ctx)
    else:
        for v, t in zip(values, timestamps, strict=True):
            ctx._ts = t
            write(v, ctx)


class SinkFunctionOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._invoke = self.function.invoke
        self._sctx = SinkContext(self)

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        write_each(self._invoke, self._sctx, values, timestamps)

    def finish(self) -> None:
        finish = getattr(self.function, "finish", None)
        if finish is not None:
            finish()


class CollectSinkOperator(StreamOperator):
    """Hands records to the client of `execute_and_collect`: through its queue when the client
    is in this process, else over TCP to the client's collect server."""

    def open(self) -> None:
        super().open()
        from strom.datastream import collect

        self._id = self.params["collect_id"]
        self._collect = collect
        self._queue = None
        self._sock = None
        try:
            self._queue = collect.result_queue(self._id)
        except KeyError:
            import socket

            self._sock = socket.create_connection(tuple(self.params["address"]), timeout=30)
            self._sock.settimeout(None)
        ctx = self.ctx
        self._attempt = ctx.attempt if ctx is not None else 0
        self._subtask = ctx.subtask_index if ctx is not None else 0

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        if self._sock is not None:
            self._collect.send_frame(self._sock, ("records", self._attempt, self._subtask, list(values)))
            return
        rows = detached(values)  # PyFlink's collect sink serializes: later assignments to a Row do not show
        item = ("records", list(rows) if rows is values else rows)
        while True:
            try:
                self._queue.put(item, timeout=0.1)  # type: ignore[union-attr]
                return
            except queue.Full:
                if not self._collect.is_open(self._id):
                    return  # the client stopped reading; the job is being cancelled

    def finish(self) -> None:
        if self._sock is not None:
            self._collect.send_frame(self._sock, ("done", self._attempt, self._subtask, None))
        else:
            self._collect.mark_done(self._id, self._attempt, self._subtask)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        super().close()
