"""Shared test support for connector tests: waiting on conditions and running unbounded jobs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from strom.datastream import DataStream


def wait_until(condition: Callable[[], bool], *, timeout: float = 10.0, what: str = "condition") -> None:
    """Wait for `condition` with a deadline, checking often; never a fixed sleep."""
    deadline = time.monotonic() + timeout
    event = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        event.wait(0.005)


class RecordedJob:
    """An asynchronously running job whose sink appends to `records` (shared, not copied per subtask)."""

    def __init__(self, stream: DataStream) -> None:
        self.records: list[Any] = []
        self._lock = threading.Lock()
        records, lock = self.records, self._lock

        def record(value: Any) -> None:
            with lock:
                records.append(value)

        stream.add_sink(record)
        self.client = stream._env.execute_async("recorded job")

    def snapshot(self) -> list[Any]:
        with self._lock:
            return list(self.records)

    def wait_for(self, n: int, timeout: float = 10.0) -> list[Any]:
        wait_until(lambda: len(self.records) >= n, timeout=timeout, what=f"{n} records")
        return self.snapshot()

    def cancel(self) -> None:
        self.client.cancel()
        try:
            self.client.get_job_execution_result(10)
        except Exception:  # noqa: BLE001 - a cancelled job reports its cancellation as an error
            pass
