"""`CompletableFuture` (`pyflink.common.CompletableFuture`): a result that arrives later.

PyFlink wraps a Java CompletableFuture; Strom wraps a `concurrent.futures.Future`. `result()`
blocks until the value is there (or raises the failure); Strom also takes a `timeout` in seconds.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class CompletableFuture(Generic[T]):
    def __init__(self, future: concurrent.futures.Future[T]) -> None:
        self._future = future

    @staticmethod
    def completed(value: T) -> CompletableFuture[T]:
        f: concurrent.futures.Future[T] = concurrent.futures.Future()
        f.set_result(value)
        return CompletableFuture(f)

    def cancel(self) -> bool:
        return self._future.cancel()

    def cancelled(self) -> bool:
        return self._future.cancelled()

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> T:
        return self._future.result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._future.exception(timeout)

    def add_done_callback(self, fn: Callable[[Any], Any]) -> None:
        """`fn` gets the value (PyFlink passes the result to the callback)."""
        self._future.add_done_callback(lambda f: fn(f.result()) if f.exception() is None else None)

    def __repr__(self) -> str:
        return f"CompletableFuture(done={self.done()})"
