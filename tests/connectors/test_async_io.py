"""Async I/O (`AsyncDataStream`): ordered and unordered results against plain-Python references,
timeouts, capacity (the most requests in flight, measured), retry strategies, watermarks that never
overtake results, and requests in flight restored from a checkpoint."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest
from strom.common import Types, WatermarkStrategy
from strom.datastream import AsyncDataStream, AsyncFunction, ProcessFunction, StreamExecutionEnvironment
from strom.datastream.async_retry_strategies import AsyncRetryPredicates, AsyncRetryStrategies
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.graph.transformations import OperatorDescriptor
from strom.runtime.local_executor import JobExecutionError
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.async_queues import AsyncEntry, OrderedQueue, UnorderedQueue
from strom.runtime.operators.async_wait import AsyncWaitOperator
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.state.operator_snapshots import restore_operator, serialize_operator, snapshot_operator
from strom.runtime.tasks.processing_time import ProcessingTimeService


class Doubling(AsyncFunction):
    """value -> [2 * value], after a pause that differs per element (so completion order differs)."""

    async def async_invoke(self, value):
        await asyncio.sleep(0.03 if value % 5 == 0 else 0.0)
        return [value * 2]


def run(stream) -> list:
    with stream.execute_and_collect() as results:
        return list(results)


def numbers(env, n: int):
    return env.from_collection(list(range(n)), type_info=Types.LONG())


def test_ordered_wait_keeps_input_order():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    out = run(AsyncDataStream.ordered_wait(numbers(env, 500), Doubling(), 5_000, 50, Types.LONG()))
    assert out == [2 * v for v in range(500)]


def test_unordered_wait_gives_every_result_in_completion_order():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    out = run(AsyncDataStream.unordered_wait(numbers(env, 500), Doubling(), 5_000, 50, Types.LONG()))
    assert Counter(out) == Counter(2 * v for v in range(500))
    assert out != sorted(out)  # the slow multiples of 5 came after quicker elements behind them


class SlowOnMultiplesOfThree(AsyncFunction):
    async def async_invoke(self, value):
        if value % 3 == 0:
            await asyncio.sleep(30)
        return [("ok", value)]

    def timeout(self, value):
        return [("timeout", value)]


def test_timed_out_requests_give_the_timeout_handlers_results():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    out = run(AsyncDataStream.unordered_wait(numbers(env, 60), SlowOnMultiplesOfThree(), 300, 100))
    assert Counter(out) == Counter(("timeout" if v % 3 == 0 else "ok", v) for v in range(60))


class SlowWithDefaultTimeout(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(30 if value == 7 else 0)
        return [value]


def test_a_timeout_without_handler_fails_the_job_naming_the_element():
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = AsyncDataStream.ordered_wait(numbers(env, 10), SlowWithDefaultTimeout(), 200, 10)
    with pytest.raises(JobExecutionError) as info:
        run(stream)
    lines = [ln for ln in str(info.value).splitlines() if "the request for element 7 failed" in ln]
    assert lines and "TimeoutError" in lines[0], str(info.value)


_in_flight = {"now": 0, "max": 0}
_lock = threading.Lock()


class CountingInFlight(AsyncFunction):
    async def async_invoke(self, value):
        with _lock:
            _in_flight["now"] += 1
            _in_flight["max"] = max(_in_flight["max"], _in_flight["now"])
        await asyncio.sleep(0.002 * (value % 7))
        with _lock:
            _in_flight["now"] -= 1
        return [value]


@pytest.mark.parametrize("capacity", [1, 7])
def test_capacity_bounds_the_requests_in_flight(capacity):
    _in_flight.update(now=0, max=0)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    out = run(AsyncDataStream.unordered_wait(numbers(env, 300), CountingInFlight(), 10_000, capacity))
    assert sorted(out) == list(range(300))
    assert _in_flight["max"] == capacity  # never more; and the queue was used in full


_attempts: Counter = Counter()


class FailingTwice(AsyncFunction):
    """Raises on the first two attempts of each element, then answers; returns [] first for odd ones."""

    async def async_invoke(self, value):
        _attempts[value] += 1
        if _attempts[value] <= 2:
            raise ConnectionError(f"flaky service for {value}")
        if value % 2 and _attempts[value] == 3:
            return []
        return [value]


def test_fixed_delay_retries_on_exceptions_and_exponential_backoff_on_empty_results():
    _attempts.clear()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    on_error = AsyncRetryStrategies.FixedDelayRetryStrategyBuilder(3, 5).if_exception(
        AsyncRetryPredicates.HAS_EXCEPTION_PREDICATE).if_result(AsyncRetryPredicates.EMPTY_RESULT_PREDICATE).build()
    out = run(AsyncDataStream.ordered_wait_with_retry(numbers(env, 40), FailingTwice(), 10_000, on_error, 10))
    assert out == list(range(40))
    assert _attempts == Counter({v: 4 if v % 2 else 3 for v in range(40)})


def test_retries_run_out_and_fail_the_job():
    _attempts.clear()
    env = StreamExecutionEnvironment.get_execution_environment()
    once = AsyncRetryStrategies.ExponentialBackoffDelayRetryStrategyBuilder(1, 5, 50, 2.0).if_exception(
        lambda e: isinstance(e, ConnectionError)).build()
    with pytest.raises(JobExecutionError, match="flaky service for 0"):
        run(AsyncDataStream.unordered_wait_with_retry(numbers(env, 3), FailingTwice(), 10_000, once, 10))


def test_exponential_backoff_pauses_and_bad_arguments_are_refused():
    s = AsyncRetryStrategies.ExponentialBackoffDelayRetryStrategyBuilder(4, 10, 50, 2.0).build()
    assert [s.get_backoff_time_millis(n) for n in (1, 2, 3, 4)] == [10, 20, 40, 50]
    assert s.can_retry(4) and not s.can_retry(5)
    env = StreamExecutionEnvironment.get_execution_environment()

    class NotAsync(AsyncFunction):
        def async_invoke(self, value):  # type: ignore[override]
            return [value]

    with pytest.raises(TypeError, match="async def"):
        AsyncDataStream.unordered_wait(numbers(env, 1), NotAsync(), 100)
    with pytest.raises(ValueError, match="capacity"):
        AsyncDataStream.unordered_wait(numbers(env, 1), Doubling(), 100, 0)
    with pytest.raises(ValueError, match="timeout > 0"):
        AsyncDataStream.unordered_wait_with_retry(numbers(env, 1), Doubling(), 0, s)


class RandomPause(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep((value * 7919 % 13) / 100)  # 0-120 ms, varied
        return [value]


class LateCounter(ProcessFunction):
    """Emits 1 for an element at or behind the watermark it arrives after (late), else 0."""

    def process_element(self, value, ctx):
        yield 1 if ctx.timestamp() <= ctx.timer_service().current_watermark() else 0


def test_watermarks_never_overtake_results_in_unordered_mode():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.get_config().set_auto_watermark_interval(20)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v)
    src = env.from_source(DataGeneratorSource(lambda i: i, 600, rate_limit=1_000.0, type_info=Types.LONG()),
                          strategy, "numbers")
    out = run(AsyncDataStream.unordered_wait(src, RandomPause(), 10_000, 200, Types.LONG())
              .process(LateCounter(), Types.INT()))
    assert len(out) == 600 and sum(out) == 0


# -- the queues and the operator's checkpoint, driven directly --------------------------------------------


def entries(n: int) -> list[AsyncEntry]:
    return [AsyncEntry(i, i, None) for i in range(n)]


def emitted(items) -> list:
    return [("wm", x) if type(x) is int else x.seq for x in items]


def test_unordered_queue_reorders_between_watermarks_only():
    q, e = UnorderedQueue(), entries(5)
    q.add(e[0]), q.add(e[1])
    assert q.add_watermark(100)
    q.add(e[2]), q.add(e[3])
    assert q.add_watermark(200)
    q.add(e[4])
    assert emitted(q.complete(e[3])) == []  # behind watermark 100
    assert emitted(q.complete(e[1])) == [1]  # its segment is the first: out at once
    assert emitted(q.complete(e[4])) == []
    assert emitted(q.complete(e[0])) == [0, ("wm", 100), 3]
    assert emitted(q.complete(e[2])) == [2, ("wm", 200), 4]
    assert len(q) == 0 and not q.add_watermark(300)


def test_ordered_queue_emits_in_input_order_with_watermarks_in_place():
    q, e = OrderedQueue(), entries(3)
    q.add(e[0]), q.add(e[1])
    q.add_watermark(50)
    q.add(e[2])
    assert emitted(q.complete(e[2])) == [] and emitted(q.complete(e[1])) == []
    assert emitted(q.complete(e[0])) == [0, 1, ("wm", 50), 2]
    assert [x.seq for x in q.pending()] == []


class Capturing(Output):
    def __init__(self) -> None:
        self.values: list = []

    def collect(self, values, timestamps) -> None:
        self.values.extend(values)

    def emit_watermark(self, timestamp: int) -> None:
        pass


class Gated(AsyncFunction):
    """Answers only elements below the gate; the others wait (in flight) until the operator closes."""

    def __init__(self, gate: int) -> None:
        self.gate = gate

    async def async_invoke(self, value):
        if value >= self.gate:
            await asyncio.sleep(3600)
        return [("done", value)]


def operator(fn, out: Output, *, subtask: int = 0, parallelism: int = 1) -> AsyncWaitOperator:
    params = {"timeout_ms": 0, "capacity": 100, "ordered": False, "output_type": None,
              "retry_strategy": AsyncRetryStrategies.NO_RETRY_STRATEGY}
    op = AsyncWaitOperator(OperatorDescriptor("async_wait", fn, params))
    ctx = OperatorContext(task_name="t", operator_name="async", operator_uid="async", subtask_index=subtask,
                          parallelism=parallelism, max_parallelism=128, attempt=0, config=None,
                          processing_time_service=ProcessingTimeService(), metrics=MetricGroup())
    op.setup(ctx, out)
    return op


def test_requests_in_flight_are_in_the_snapshot_and_issued_again_after_a_restore():
    first_out = Capturing()
    op = operator(Gated(gate=6), first_out)
    op.open()
    op.process_batch(list(range(10)), None, None)
    while len(first_out.values) < 6:
        op._wait_for_completion()  # the answered ones leave; 6..9 stay in flight
    op.prepare_snapshot_pre_barrier(1)
    snapshot = serialize_operator(snapshot_operator(op, checkpoint_id=1))
    op.close()
    # restored at parallelism 2: old subtask 0's requests go to new subtask 0 only
    restored_out, other_out = Capturing(), Capturing()
    restored = operator(Gated(gate=100), restored_out, subtask=0, parallelism=2)
    other = operator(Gated(gate=100), other_out, subtask=1, parallelism=2)
    for o in (restored, other):
        restore_operator(o, [snapshot])
        o.open()
        o.finish()
        o.close()
    assert sorted(first_out.values) == [("done", v) for v in range(6)]
    assert sorted(restored_out.values) == [("done", v) for v in range(6, 10)] and other_out.values == []


_hanging_started = threading.Event()


class Hanging(AsyncFunction):
    async def async_invoke(self, value):
        _hanging_started.set()
        await asyncio.sleep(3600)
        return [value]


def test_a_cancelled_job_ends_while_its_full_queue_waits_for_a_request_that_never_ends():
    _hanging_started.clear()
    env = StreamExecutionEnvironment.get_execution_environment()
    AsyncDataStream.unordered_wait(numbers(env, 10), Hanging(), 0, 1).add_sink(lambda v: None)
    client = env.execute_async("hanging")
    assert _hanging_started.wait(30)
    client.cancel()
    with pytest.raises(JobExecutionError, match="cancelled"):
        client.wait(30)
