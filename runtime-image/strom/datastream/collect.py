"""`execute_and_collect`: run the job and stream its records back to the caller.

The caller registers a bounded queue under an id and listens on a loopback TCP port. A
collect sink in the same process puts record batches straight into the queue; one in
another process (a TaskManager's slot) sends them over TCP, and TCP's flow control carries
the back pressure of a slow reader. The iterator ends when the job ends and every sink
subtask said it is done (re-raising the job's failure, if any).
"""

from __future__ import annotations

import itertools
import pickle
import queue
import socket
import struct
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from strom.graph.transformations import OperatorDescriptor

if TYPE_CHECKING:
    from strom.datastream.data_stream import DataStream

_queues: dict[str, queue.Queue[tuple[str, Any]]] = {}
_servers: dict[str, CollectServer] = {}
_ids = itertools.count(1)
_lock = threading.Lock()


def result_queue(collect_id: str) -> queue.Queue[tuple[str, Any]]:
    with _lock:
        return _queues[collect_id]


def mark_done(collect_id: str, attempt: int, subtask: int) -> None:
    """A collect sink in this process finished (remote ones say so over TCP)."""
    with _lock:
        server = _servers.get(collect_id)
    if server is not None:
        server.mark_done(attempt, subtask)


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


_FRAME = struct.Struct("!I")


def send_frame(sock: socket.socket, message: Any) -> None:
    data = pickle.dumps(message, protocol=5)
    sock.sendall(_FRAME.pack(len(data)) + data)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("collect connection closed")
        buf += chunk
    return bytes(buf)


class CollectServer:
    """Receives the batches of remote collect sinks into the client's queue."""

    def __init__(self, q: queue.Queue[tuple[str, Any]], collect_id: str) -> None:
        self.q = q
        self.collect_id = collect_id
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = self.sock.getsockname()[:2]
        self.done: dict[int, set[int]] = {}  # attempt -> subtasks that finished
        self.cond = threading.Condition()
        threading.Thread(target=self._accept, name=f"strom-{collect_id}-server", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                while True:
                    (n,) = _FRAME.unpack(_recv_exactly(conn, _FRAME.size))
                    kind, attempt, subtask, payload = pickle.loads(_recv_exactly(conn, n))
                    if kind == "records":
                        _offer(self.q, ("records", payload), self.collect_id)
                    elif kind == "done":
                        self.mark_done(attempt, subtask)
            except (ConnectionError, OSError):
                return

    def mark_done(self, attempt: int, subtask: int) -> None:
        with self.cond:
            self.done.setdefault(attempt, set()).add(subtask)
            self.cond.notify_all()

    def wait_done(self, parallelism: int, timeout: float) -> None:
        """After the job finished: wait until every sink subtask's last batch arrived."""
        with self.cond:
            self.cond.wait_for(lambda: any(len(s) >= parallelism for s in self.done.values()), timeout)

    def close(self) -> None:
        with _lock:
            _servers.pop(self.collect_id, None)
        self.sock.close()


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
    server = CollectServer(q, collect_id)
    with _lock:
        _servers[collect_id] = server
    sink = env._new_transformation(
        name="Sink: Collect",
        kind="sink",
        inputs=[stream._t],
        operator=OperatorDescriptor("collect", params={"collect_id": collect_id, "address": server.address}),
        parallelism=stream.get_parallelism(),
    )
    graph = env.get_stream_graph(job_name, clear_transformations=True)
    sink_parallelism = graph.nodes[sink.id].parallelism

    from strom.datastream import stream_execution_environment as see
    from strom.datastream.executors import executor_for

    executor = executor_for(graph, see._context_executor)
    cancel = None
    if hasattr(executor, "start_job"):
        handle = executor.start_job(graph)
        cancel = handle.cancel

        def execute_started(_graph: Any) -> Any:
            return handle.wait()

        executor = execute_started

    def run() -> None:
        try:
            executor(graph)
            server.wait_done(sink_parallelism, timeout=30)
            _offer(q, ("end", None), collect_id)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            _offer(q, ("end", e), collect_id)
        finally:
            server.close()

    thread = threading.Thread(target=run, name=f"strom-collect-{collect_id}", daemon=True)
    thread.start()
    it = CloseableIterator(q, collect_id, cancel)
    if limit is not None:
        out = list(itertools.islice(it, limit))
        it.close()
        return out
    return it
