"""Retry strategies of async I/O: PyFlink's `pyflink.datastream.async_retry_strategies` classes and
Flink's `AsyncRetryStrategies` builders / `AsyncRetryPredicates` under their Java names.

A strategy says whether attempt n may be followed by another (`can_retry(n)`: at most
`max_attempts` retries), the pause before it, and which outcomes are retried: results for which the
result predicate holds (e.g. an empty list), exceptions for which the exception predicate holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from strom.datastream.async_functions import AsyncRetryPredicate, AsyncRetryStrategy

OUT = TypeVar("OUT")

ResultPredicate = Callable[[list[Any]], bool]
ExceptionPredicate = Callable[[Exception], bool]

__all__ = [
    "NO_RETRY_STRATEGY",
    "AsyncRetryPredicates",
    "AsyncRetryStrategies",
    "ExponentialBackoffDelayRetryStrategy",
    "FixedDelayRetryStrategy",
    "NoRetryStrategy",
    "RetryPredicate",
]


class RetryPredicate(AsyncRetryPredicate, Generic[OUT]):
    def __init__(self, result_predicate: ResultPredicate | None, exception_predicate: ExceptionPredicate | None):
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate | None:
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate | None:
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(None, None)


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise ValueError(f"{name} must be greater than zero, got {value}")


class FixedDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    def __init__(
        self,
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate | None = None,
        exception_predicate: ExceptionPredicate | None = None,
    ) -> None:
        _positive("max_attempts", max_attempts)
        _positive("backoff_time_millis", backoff_time_millis)
        self._max_attempts = max_attempts
        self._backoff = backoff_time_millis
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return self._backoff

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Pause `initial_delay * multiplier ** (n - 1)` before retry n, capped at `max_retry_delay`
    (computed from n, so concurrent requests do not share a pause)."""

    def __init__(
        self,
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate | None = None,
        exception_predicate: ExceptionPredicate | None = None,
    ) -> None:
        for name, value in (("max_attempts", max_attempts), ("initial_delay", initial_delay),
                            ("max_retry_delay", max_retry_delay), ("multiplier", multiplier)):
            _positive(name, value)
        self._max_attempts = max_attempts
        self._initial = initial_delay
        self._max_delay = max_retry_delay
        self._multiplier = multiplier
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return int(min(self._initial * self._multiplier ** max(0, current_attempts - 1), self._max_delay))

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


NO_RETRY_STRATEGY: AsyncRetryStrategy = NoRetryStrategy()


class AsyncRetryPredicates:
    """Flink's ready-made predicates."""

    EMPTY_RESULT_PREDICATE: ResultPredicate = staticmethod(lambda results: not results)  # type: ignore[assignment]
    HAS_EXCEPTION_PREDICATE: ExceptionPredicate = staticmethod(lambda error: True)  # type: ignore[assignment]


class _StrategyBuilder:
    def __init__(self) -> None:
        self._result: ResultPredicate | None = None
        self._exception: ExceptionPredicate | None = None

    def if_result(self, result_predicate: ResultPredicate) -> Any:
        self._result = result_predicate
        return self

    def if_exception(self, exception_predicate: ExceptionPredicate) -> Any:
        self._exception = exception_predicate
        return self


class AsyncRetryStrategies:
    """Flink's builders: `AsyncRetryStrategies.FixedDelayRetryStrategyBuilder(3, 100).if_exception(...).build()`."""

    NO_RETRY_STRATEGY = NO_RETRY_STRATEGY

    class FixedDelayRetryStrategyBuilder(_StrategyBuilder):
        def __init__(self, max_attempts: int, backoff_time_millis: int) -> None:
            super().__init__()
            self._args = (max_attempts, backoff_time_millis)

        def build(self) -> FixedDelayRetryStrategy:
            return FixedDelayRetryStrategy(*self._args, self._result, self._exception)

    class ExponentialBackoffDelayRetryStrategyBuilder(_StrategyBuilder):
        def __init__(self, max_attempts: int, initial_delay: int, max_retry_delay: int, multiplier: float) -> None:
            super().__init__()
            self._args = (max_attempts, initial_delay, max_retry_delay, multiplier)

        def build(self) -> ExponentialBackoffDelayRetryStrategy:
            return ExponentialBackoffDelayRetryStrategy(*self._args, self._result, self._exception)
