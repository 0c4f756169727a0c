"""The JobManager's side of log reading: its own files read here, a TaskManager's asked over its RPC
connection (authenticated at registration), answers matched to requests by id and by sender.

`ClusterLogs` is what the REST handlers (`rest_logs`) call; `DispatcherLogs` serves it for a running
JobManager, `JobManagerOnlyLogs` for a REST app without TaskManager connections (tests' fake views).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from strom.runtime.jobmanager.read_model import NotFoundError
from strom.runtime.log_files import answer_log_request
from strom.runtime.rpc import LogAnswer, LogRequest

TASKMANAGER_ANSWER_TIMEOUT_S = 10.0


class ClusterLogs(Protocol):
    def jobmanager(self, kind: str, name: str = "") -> LogAnswer:
        """The JobManager's own log directory, log or stdout (read in the calling thread: a MiB at most)."""

    async def taskmanager(self, tm_id: str, kind: str, name: str = "") -> LogAnswer:
        """Ask TaskManager `tm_id`; `NotFoundError` when no such TaskManager is registered."""


class TaskManagerLogRequests:
    """Requests in flight to TaskManagers. Calls run on the JobManager's event loop."""

    def __init__(self, send: Callable[[str, Any], None], *, timeout_s: float = TASKMANAGER_ANSWER_TIMEOUT_S) -> None:
        self._send = send
        self._timeout_s = timeout_s
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[LogAnswer]]] = {}

    async def ask(self, tm_id: str, kind: str, name: str) -> LogAnswer:
        rid = next(self._ids)
        answer: asyncio.Future[LogAnswer] = asyncio.get_running_loop().create_future()
        self._pending[rid] = (tm_id, answer)
        try:
            self._send(tm_id, LogRequest(rid, kind, name))
            return await asyncio.wait_for(answer, self._timeout_s)
        except TimeoutError:
            return LogAnswer(rid, 504, error=f"TaskManager {tm_id} did not answer within {self._timeout_s:.0f} s")
        finally:
            self._pending.pop(rid, None)

    def answered(self, sender: str, answer: LogAnswer) -> None:
        """An answer from TaskManager `sender`: taken only for a request that was sent to it."""
        entry = self._pending.get(answer.request_id)
        if entry is not None and entry[0] == sender and not entry[1].done():
            entry[1].set_result(answer)

    def lost(self, tm_id: str) -> None:
        for rid, (target, answer) in list(self._pending.items()):
            if target == tm_id and not answer.done():
                answer.set_result(LogAnswer(rid, 503, error=f"the connection to TaskManager {tm_id} was lost"))


class DispatcherLogs:
    """`ClusterLogs` of a running JobManager: `log_file` is its own (None: it logs to stderr only)."""

    def __init__(self, log_file: Path | None, requests: TaskManagerLogRequests, registered: Callable[[str], bool]):
        self._log_file = log_file
        self._requests = requests
        self._registered = registered

    def jobmanager(self, kind: str, name: str = "") -> LogAnswer:
        return answer_log_request(self._log_file, LogRequest(0, kind, name), process="the JobManager")

    async def taskmanager(self, tm_id: str, kind: str, name: str = "") -> LogAnswer:
        if not self._registered(tm_id):
            raise NotFoundError(f"TaskManager {tm_id} not found")
        return await self._requests.ask(tm_id, kind, name)


class JobManagerOnlyLogs:
    """`ClusterLogs` without TaskManager connections: every TaskManager is unknown."""

    def __init__(self, log_file: Path | None) -> None:
        self._log_file = log_file

    def jobmanager(self, kind: str, name: str = "") -> LogAnswer:
        return answer_log_request(self._log_file, LogRequest(0, kind, name), process="the JobManager")

    async def taskmanager(self, tm_id: str, kind: str, name: str = "") -> LogAnswer:
        raise NotFoundError(f"TaskManager {tm_id} not found")
