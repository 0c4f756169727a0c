"""The savepoint operations of one job, as `GET /jobs/:jobid/savepoints/:triggerid` reports them.

Each `POST /jobs/:jobid/savepoints` or `/stop` starts an operation with a random trigger id; it is
IN_PROGRESS until the coordinator reports the savepoint's location or its failure. Operations stay
after the job ended, because a client (the Kubernetes operator) polls the result of a
stop-with-savepoint after the job has stopped — but a completed operation's result is kept only
`rest.async.store-duration` (Flink's CompletedOperationCache, default 5 min), then its trigger id is
unknown (404). `TriggerResults` is the same bound for results kept by trigger id elsewhere (savepoint
disposal).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from strom.runtime.jobmanager.retention import operations_to_drop

# Flink's rest.async.store-duration default (common/config_options.REST_ASYNC_STORE_DURATION)
DEFAULT_STORE_DURATION_MS = 300_000

T = TypeVar("T")


class SavepointRefused(Exception):
    """A savepoint cannot be started for this job now (not running, no checkpointing); answered with 409."""


@dataclass(slots=True)
class SavepointOperation:
    trigger_id: str
    status: str = "IN_PROGRESS"  # Flink's QueueStatus: IN_PROGRESS or COMPLETED
    location: str | None = None
    failure: str | None = None


class TriggerResults(Generic[T]):
    """Results by trigger id; a result marked completed is dropped `store_duration_ms` later (checked
    on every access, so nothing runs in the background). Thread-safe: disposals finish on executor
    threads. `clock` (seconds, monotonic) is injectable for tests."""

    def __init__(
        self,
        store_duration_ms: int = DEFAULT_STORE_DURATION_MS,
        *,
        is_completed: Callable[[T], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._duration_s = store_duration_ms / 1000.0
        self._is_completed = is_completed
        self._clock = clock
        self._results: dict[str, T] = {}
        self._completed_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def _expire(self) -> None:
        for trigger_id in operations_to_drop(self._completed_at, now=self._clock(), store_duration_s=self._duration_s):
            del self._completed_at[trigger_id]
            del self._results[trigger_id]

    def __setitem__(self, trigger_id: str, result: T) -> None:
        with self._lock:
            self._expire()
            self._results[trigger_id] = result
            if self._is_completed(result):
                self._completed_at.setdefault(trigger_id, self._clock())
            else:
                self._completed_at.pop(trigger_id, None)

    def get(self, trigger_id: str) -> T | None:
        with self._lock:
            self._expire()
            return self._results.get(trigger_id)

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._results)


class SavepointOperations:
    """Trigger id -> operation, for one job."""

    def __init__(
        self, store_duration_ms: int = DEFAULT_STORE_DURATION_MS, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._operations: TriggerResults[SavepointOperation] = TriggerResults(
            store_duration_ms, is_completed=lambda op: op.status == "COMPLETED", clock=clock
        )

    def start(self, trigger_id: str | None = None) -> SavepointOperation:
        """A new operation, under the client's `trigger_id` when it gives one (Flink's `triggerId`)."""
        op = SavepointOperation(trigger_id or uuid.uuid4().hex)
        self._operations[op.trigger_id] = op
        return op

    def finish(self, trigger_id: str, location: str | None, failure: str | None) -> None:
        op = self._operations.get(trigger_id)
        if op is not None and op.status == "IN_PROGRESS":
            op.status, op.location, op.failure = "COMPLETED", location, failure
            self._operations[trigger_id] = op  # its result is kept from now on, for the store duration

    def get(self, trigger_id: str) -> SavepointOperation | None:
        return self._operations.get(trigger_id)
