"""`execute_and_collect`: run the job and stream its records back to the caller.

The collect sink puts record batches into a queue registered under an id; the job
runs in a background thread, and the iterator ends when the job ends (re-raising the
job's failure, if any).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from strom.graph.transformations import OperatorDescriptor

if TYPE_CHECKING:
    from strom.datastream.data_stream import DataStream

_queues: dict[str, queue.Queue[tuple[str, Any]]] = {}
_ids = itertools.count(1)
_lock = threading.Lock()


def result_queue(collect_id: str) -> queue.Queue[tuple[str, Any]]:
    with _lock:
        return _queues[collect_id]


def is_open(collect_id: str) -> bool:
    """False once the consumer closed its iterator: the sink then drops records."""
    with _lock:
        return collect_id in _queues


class CloseableIterator(Iterator[Any]):
    def __init__(self, q: queue.Queue[tuple[str, Any]], collect_id: str, cancel: Any) -> None:
        self._q = q
        self._id = collect_id
        self._cancel = cancel
        self._buffer: list[Any] = []
        self._pos = 0
        self._done = False

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        while self._pos >= len(self._buffer):
            if self._done:
                raise StopIteration
            kind, payload = self._q.get()
            if kind == "records":
                self._buffer, self._pos = payload, 0
            else:
                self._done = True
                self.close()
                if payload is not None:
                    raise payload
        v = self._buffer[self._pos]
        self._pos += 1
        return v

    def close(self) -> None:
        """Stop consuming; a job that is still running (e.g. unbounded) is cancelled."""
        with _lock:
            _queues.pop(self._id, None)
        if not self._done:
            self._done = True
            if self._cancel is not None:
                self._cancel()

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _offer(q: queue.Queue[tuple[str, Any]], item: tuple[str, Any], collect_id: str) -> None:
    while is_open(collect_id):
        try:
            q.put(item, timeout=0.1)
            return
        except queue.Full:
            continue


def collect_results(stream: DataStream, job_name: str | None, limit: int | None) -> Any:
    env = stream._env
    collect_id = f"collect-{next(_ids)}"
    # bounded: a consumer that reads slowly back-pressures the job instead of buffering it all
    q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=64)
    with _lock:
        _queues[collect_id] = q
    env._new_transformation(
        name="Sink: Collect",
        kind="sink",
        inputs=[stream._t],
        operator=OperatorDescriptor("collect", params={"collect_id": collect_id}),
        parallelism=stream.get_parallelism(),
    )
    graph = env.get_stream_graph(job_name, clear_transformations=True)

    from strom.datastream import stream_execution_environment as see

    executor = see._context_executor
    cancel = None
    if executor is None:
        from strom.runtime.local_executor import LocalJob

        job = LocalJob(graph)
        job.start()
        cancel = job.cancel

        def execute(_graph: Any) -> Any:
            return job.wait()

        executor = execute

    def run() -> None:
        try:
            executor(graph)
            _offer(q, ("end", None), collect_id)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            _offer(q, ("end", e), collect_id)

    thread = threading.Thread(target=run, name=f"strom-collect-{collect_id}", daemon=True)
    thread.start()
    it = CloseableIterator(q, collect_id, cancel)
    if limit is not None:
        out = list(itertools.islice(it, limit))
        it.close()
        return out
    return it
