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


class CloseableIterator(Iterator[Any]):
    def __init__(self, q: queue.Queue[tuple[str, Any]], collect_id: str, thread: threading.Thread) -> None:
        self._q = q
        self._id = collect_id
        self._thread = thread
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
        with _lock:
            _queues.pop(self._id, None)

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def collect_results(stream: DataStream, job_name: str | None, limit: int | None) -> Any:
    env = stream._env
    collect_id = f"collect-{next(_ids)}"
    q: queue.Queue[tuple[str, Any]] = queue.Queue()
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

    def run() -> None:
        from strom.datastream import stream_execution_environment as see

        try:
            executor = see._context_executor
            if executor is None:
                from strom.runtime.local_executor import execute_locally as executor
            executor(graph)
            q.put(("end", None))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            q.put(("end", e))

    thread = threading.Thread(target=run, name=f"strom-collect-{collect_id}", daemon=True)
    thread.start()
    it = CloseableIterator(q, collect_id, thread)
    if limit is not None:
        out = list(itertools.islice(it, limit))
        return out
    return it
