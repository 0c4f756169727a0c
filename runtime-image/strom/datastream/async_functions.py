"""`AsyncFunction` and the retry contracts of async I/O (`pyflink.datastream.functions` in PyFlink 2.x).

An AsyncFunction's `async_invoke(value)` is an asyncio coroutine returning the list of results for
one input element; many run concurrently on one event loop per subtask (`AsyncDataStream`). When the
request does not complete within the operator's timeout, `timeout(value)` gives the results instead
(by default it fails the job, as Flink's does).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from strom.datastream.functions import Function

IN = TypeVar("IN")
OUT = TypeVar("OUT")


class AsyncFunction(Function, Generic[IN, OUT]):
    """Subclasses write `async def async_invoke(self, value) -> list[OUT]` (PyFlink 2.x's shape)."""

    @abstractmethod
    async def async_invoke(self, value: IN) -> list[OUT]:
        """The results for `value`; raising fails the element (retried if a strategy says so)."""

    def timeout(self, value: IN) -> list[OUT]:
        """The results for `value` when its request timed out; Flink's default fails the job."""
        raise TimeoutError(f"Async function call has timed out for input {value!r}")


class AsyncRetryPredicate(Generic[OUT]):
    """Which outcomes are retried: a result predicate, an exception predicate (either may be None)."""

    def result_predicate(self) -> Callable[[list[OUT]], bool] | None:
        return None

    def exception_predicate(self) -> Callable[[Exception], bool] | None:
        return None


class AsyncRetryStrategy(Generic[OUT]):
    """Whether attempt `n` (1-based, counting the first try) may be retried, after what pause, on what."""

    def can_retry(self, current_attempts: int) -> bool:
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return AsyncRetryPredicate()


def is_async_function(fn: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(getattr(fn, "async_invoke", None))
