"""`AsyncDataStream`: async I/O on a DataStream (`pyflink.datastream.AsyncDataStream`, PyFlink 2.x).

`AsyncDataStream.unordered_wait(stream, async_function, timeout, capacity, output_type)` runs
`async_function.async_invoke(value)` (an asyncio coroutine) for every element, up to `capacity`
at once per subtask; `ordered_wait` emits the results in input order. `timeout` bounds each
element's request including its retries (`*_wait_with_retry` with an `AsyncRetryStrategy`); on
expiry `async_function.timeout(value)` gives the results. See runtime/operators/async_wait.py for
checkpoints (requests in flight are restored and issued again) and watermarks.
"""

from __future__ import annotations

from typing import Any

from strom.common.time import Duration, to_millis
from strom.common.typeinfo import TypeInformation
from strom.datastream.async_functions import AsyncFunction, AsyncRetryStrategy, is_async_function
from strom.datastream.async_retry_strategies import NO_RETRY_STRATEGY
from strom.datastream.data_stream import DataStream
from strom.graph.transformations import OperatorDescriptor


class AsyncDataStream:
    @staticmethod
    def unordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Duration | int,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Results leave as their requests complete (never past a watermark)."""
        return AsyncDataStream._wait(data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity,
                                     output_type, ordered=False)

    @staticmethod
    def unordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Duration | int,
        async_retry_strategy: AsyncRetryStrategy,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        return AsyncDataStream._wait(data_stream, async_function, timeout, async_retry_strategy, capacity,
                                     output_type, ordered=False)

    @staticmethod
    def ordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Duration | int,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Results leave in the order of the input elements."""
        return AsyncDataStream._wait(data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity,
                                     output_type, ordered=True)

    @staticmethod
    def ordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Duration | int,
        async_retry_strategy: AsyncRetryStrategy,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        return AsyncDataStream._wait(data_stream, async_function, timeout, async_retry_strategy, capacity,
                                     output_type, ordered=True)

    @staticmethod
    def _wait(
        data_stream: DataStream,
        async_function: Any,
        timeout: Any,
        strategy: AsyncRetryStrategy,
        capacity: int,
        output_type: TypeInformation | None,
        *,
        ordered: bool,
    ) -> DataStream:
        if not is_async_function(async_function):
            raise TypeError(
                f"AsyncDataStream: {type(async_function).__name__}.async_invoke must be declared 'async def' "
                "(an AsyncFunction whose async_invoke returns the list of results)"
            )
        timeout_ms = to_millis(timeout, what="timeout")
        if not isinstance(capacity, int) or capacity <= 0:
            raise ValueError(f"AsyncDataStream: capacity must be a positive number of elements, got {capacity!r}")
        if strategy is None or strategy.get_retry_predicate() is None:
            raise ValueError("AsyncDataStream: the async retry strategy and its retry predicate must not be None")
        if strategy is not NO_RETRY_STRATEGY and timeout_ms <= 0:
            raise ValueError("AsyncDataStream: a retry strategy needs a timeout > 0 (it bounds the retries too)")
        descriptor = OperatorDescriptor(
            "async_wait",
            async_function,
            params={"timeout_ms": timeout_ms, "capacity": capacity, "ordered": ordered, "retry_strategy": strategy},
        )
        return DataStream(data_stream._env, data_stream._one_input("async wait operator", descriptor, output_type))
