"""Async I/O in BATCH mode (on Spark): the async function runs per partition with the same capacity and
timeout semantics as in STREAMING. The reference is plain Python: every element's result, or its
timeout() result when the request outlives the timeout; no subtask has more than `capacity` requests
in flight (each request reports how many were in flight when it started)."""

from __future__ import annotations

import asyncio
from collections import Counter

from strom.common import Types
from strom.datastream import AsyncDataStream, AsyncFunction, RuntimeExecutionMode, StreamExecutionEnvironment

N = 120
CAPACITY = 4
TIMEOUT_MS = 400
SLOW = 3  # elements v with v % 10 == SLOW take far longer than the timeout


class Lookup(AsyncFunction):
    """v -> (2v, requests in flight in this subtask when it started); slow ones time out -> (-v, 0)."""

    async def async_invoke(self, value):
        self.in_flight = getattr(self, "in_flight", 0) + 1
        seen = self.in_flight
        try:
            await asyncio.sleep(3.0 if value % 10 == SLOW else 0.005 * (value % 4))
            return [(2 * value, seen)]
        finally:
            self.in_flight -= 1

    def timeout(self, value):
        return [(-value, 0)]


def test_unordered_wait_in_batch_mode_keeps_capacity_and_timeouts_per_partition():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    numbers = env.from_collection(list(range(N)), type_info=Types.LONG())
    result_type = Types.TUPLE([Types.LONG(), Types.INT()])
    stream = AsyncDataStream.unordered_wait(numbers, Lookup(), TIMEOUT_MS, CAPACITY, result_type)
    with stream.execute_and_collect() as results:
        out = list(results)
    expected = Counter(-v if v % 10 == SLOW else 2 * v for v in range(N))
    assert Counter(r for r, _ in out) == expected
    peaks = [seen for _, seen in out]
    assert max(peaks) <= CAPACITY
    assert max(peaks) > 1  # requests did overlap: the capacity was used, not one request at a time
