"""The async I/O operator behind `AsyncDataStream.ordered_wait/unordered_wait` (Flink's AsyncWaitOperator).

Each subtask runs an asyncio event loop in a thread of its own; every input element starts one
request there (`async_invoke(value)`, with the retry strategy and the timeout around it). At most
`capacity` elements are in the queue (waiting or holding results not emitted yet): a full queue
blocks the task, which is the back pressure upstream sees. Completions come back to the task
thread through its mailbox, where results are emitted in the order the queue allows
(`async_queues`: input order, or completion order between watermarks).

Checkpoints: before the barrier the results already complete are emitted; the input elements still
in the queue are the operator's state, and a restored subtask issues their requests again (old
subtask j's elements go to new subtask j % parallelism). A failed request (no retry left) fails the
task with one line naming the element.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import deque
from typing import Any

from strom.runtime.network.channels import TaskCancelledError
from strom.runtime.operators.async_queues import AsyncEntry, OrderedQueue, UnorderedQueue
from strom.runtime.operators.base import StreamOperator

IN_FLIGHT = "async-in-flight"
_SUBMIT_CHUNK = 256  # requests handed to the loop per call_soon_threadsafe


class AsyncWaitOperator(StreamOperator):
    def setup(self, ctx: Any, output: Any) -> None:
        super().setup(ctx, output)
        params = self.params
        self._timeout_s = params["timeout_ms"] / 1000.0 if params["timeout_ms"] > 0 else None
        self._capacity = params["capacity"]
        self._ordered = params["ordered"]
        self._strategy = params["retry_strategy"]
        self._queue: OrderedQueue | UnorderedQueue = OrderedQueue() if self._ordered else UnorderedQueue()
        self._restored: list[tuple[Any, int | None]] = []
        self._seq = 0
        self._to_start: list[AsyncEntry] = []
        self._completions: deque[AsyncEntry] = deque()
        self._signal = threading.Event()
        self._wake_pending = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def open(self) -> None:
        ctx = self.ctx
        assert ctx is not None
        self._mailbox = getattr(ctx, "mailbox", None)
        self._convert = None
        out_type = self.params.get("output_type")
        if out_type is not None and out_type.needs_conversion:
            self._convert = out_type.convert
        loop = self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=loop.run_forever, name=f"async-io {ctx.operator_name} ({ctx.subtask_index + 1})", daemon=True
        )
        self._thread.start()
        fn = self.function
        self._initialize_operator_state(fn)
        result = fn.open(self.runtime_context())
        if inspect.isawaitable(result):  # an `async def open` prepares its clients on the operator's loop
            asyncio.run_coroutine_threadsafe(result, loop).result()
        restored, self._restored = self._restored, []
        for value, timestamp in restored:  # the requests in flight at the restored checkpoint, again
            self._add(value, timestamp)
        self._start_pending()

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        try:
            if loop is not None and thread is not None:
                close = self.function.close
                if inspect.iscoroutinefunction(close):
                    asyncio.run_coroutine_threadsafe(close(), loop).result(30)
                else:
                    close()
                loop.call_soon_threadsafe(_cancel_all_and_stop, loop)
                thread.join(10)
                if not thread.is_alive():
                    loop.close()
        finally:
            self._loop = self._thread = None
            self.close_backend()

    # -- input -------------------------------------------------------------------------------------
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        queue, capacity = self._queue, self._capacity
        for i, value in enumerate(values):
            while len(queue) >= capacity:  # back pressure: the task takes no input until a slot is free
                self._start_pending()
                self._wait_for_completion()
            self._add(value, None if timestamps is None else timestamps[i])
            if len(self._to_start) >= _SUBMIT_CHUNK:
                self._start_pending()
        self._start_pending()
        self._drain()

    def _add(self, value: Any, timestamp: int | None) -> None:
        self._seq += 1
        entry = AsyncEntry(self._seq, value, timestamp)
        self._queue.add(entry)
        self._to_start.append(entry)

    def _start_pending(self) -> None:
        if self._to_start:
            entries, self._to_start = self._to_start, []
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self._start_all, entries)

    def process_watermark(self, timestamp: int) -> None:
        if timestamp <= self.current_watermark:
            return
        self.current_watermark = timestamp
        if not self._queue.add_watermark(timestamp):
            self.output.emit_watermark(timestamp)

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self._drain()  # results complete before the barrier go before it

    def snapshot_state(self) -> dict[str, Any]:
        assert self.ctx is not None
        pending = [(e.value, e.timestamp) for e in self._queue.pending()]
        return {IN_FLIGHT: (self.ctx.subtask_index, pending)}

    def restore_state(self, parts: list[dict[str, Any]]) -> None:
        assert self.ctx is not None
        me, parallelism = self.ctx.subtask_index, self.ctx.parallelism
        for part in parts:
            if IN_FLIGHT in part:
                old_subtask, pending = part[IN_FLIGHT]
                if old_subtask % parallelism == me:
                    self._restored.extend(pending)

    def finish(self) -> None:
        """End of input: every request completes and its results leave before the operator finishes."""
        self._start_pending()
        while len(self._queue):
            self._wait_for_completion()

    # -- completions (task thread) -----------------------------------------------------------------
    def _wait_for_completion(self) -> None:
        signal = self._signal
        while not self._completions:
            signal.wait(0.2)
            signal.clear()
            if self._task_cancelled():
                raise TaskCancelledError()  # a request that never ends must not keep a cancelled task alive
        self._drain()

    def _task_cancelled(self) -> bool:
        task = getattr(self._mailbox, "__self__", None)  # the mailbox is StreamTask.submit
        return bool(getattr(task, "cancelled", False))

    def _drain_from_mailbox(self) -> None:
        self._wake_pending = False
        self._drain()

    def _drain(self) -> None:
        completions = self._completions
        if not completions:
            return
        out: list[Any] = []
        out_ts: list[Any] = []
        complete = self._queue.complete
        while completions:
            entry = completions.popleft()
            if entry.error is not None:
                raise _request_failed(self, entry)
            for item in complete(entry):
                if type(item) is int:
                    self._emit(out, out_ts)
                    out, out_ts = [], []
                    self.output.emit_watermark(item)
                elif item.results:
                    out.extend(item.results)
                    out_ts.extend([item.timestamp] * len(item.results))
        self._emit(out, out_ts)

    def _emit(self, out: list[Any], out_ts: list[Any]) -> None:
        if not out:
            return
        if self._convert is not None:
            out = [self._convert(v) for v in out]
        self.output.collect(out, None if all(t is None for t in out_ts) else out_ts)

    # -- requests (event-loop thread) --------------------------------------------------------------
    def _start_all(self, entries: list[AsyncEntry]) -> None:
        loop = self._loop
        assert loop is not None
        for entry in entries:
            loop.create_task(self._request(entry))

    async def _request(self, entry: AsyncEntry) -> None:
        fn = self.function
        try:
            attempts = asyncio.ensure_future(self._attempts(entry.value))
            done, _ = await asyncio.wait({attempts}, timeout=self._timeout_s)
            if attempts in done:
                entry.results = attempts.result()
            else:
                attempts.cancel()
                entry.results = _as_list(fn.timeout(entry.value))
        except asyncio.CancelledError:
            return  # the operator closes
        except Exception as e:  # noqa: BLE001 - reported by the task thread with the element
            entry.error = e
        self._completions.append(entry)
        self._signal.set()
        if self._mailbox is not None and not self._wake_pending:
            self._wake_pending = True
            self._mailbox(self._drain_from_mailbox)

    async def _attempts(self, value: Any) -> list[Any]:
        fn, strategy = self.function, self._strategy
        predicate = strategy.get_retry_predicate()
        on_result, on_error = predicate.result_predicate(), predicate.exception_predicate()
        attempt = 1
        while True:
            try:
                results = _as_list(await fn.async_invoke(value))
            except Exception as e:
                if on_error is None or not on_error(e) or not strategy.can_retry(attempt):
                    raise
            else:
                if on_result is None or not on_result(results) or not strategy.can_retry(attempt):
                    return results
            await asyncio.sleep(max(0, strategy.get_backoff_time_millis(attempt)) / 1000.0)
            attempt += 1


def _as_list(results: Any) -> list[Any]:
    if results is None:
        return []
    return results if isinstance(results, list) else list(results)


def _request_failed(op: AsyncWaitOperator, entry: AsyncEntry) -> RuntimeError:
    error = entry.error
    assert error is not None and op.ctx is not None
    detail = " ".join(str(error).split()) or type(error).__name__
    failure = RuntimeError(
        f"async I/O operator {op.ctx.operator_name!r}: the request for element {entry.value!r} failed "
        f"({type(error).__name__}: {detail}); retry it with AsyncDataStream.*_wait_with_retry or handle it in "
        "async_invoke / timeout"
    )
    failure.__cause__ = error
    return failure


def _cancel_all_and_stop(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()
    loop.call_soon(loop.stop)
