"""env.add_source with user SourceFunctions: order, timestamps, back pressure, failures, cancel."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from strom.connectors.source_function import SourceFunctionReader
from strom.datastream import ProcessFunction, SourceFunction, StreamExecutionEnvironment
from strom.runtime.local_executor import JobExecutionError
from strom.testing import collect

from .connector_testing import RecordedJob, wait_until


class Range(SourceFunction):
    def __init__(self, n: int) -> None:
        self.n = n

    def run(self, ctx: Any) -> None:
        for i in range(self.n):
            ctx.collect(i)


def test_records_arrive_in_the_order_run_collects_them():
    env = StreamExecutionEnvironment.get_execution_environment()
    assert collect(env.add_source(Range(5000))) == list(range(5000))


class Timestamped(SourceFunction):
    def run(self, ctx: Any) -> None:
        for i in range(300):
            if i % 3 == 0:
                ctx.collect(i)
            else:
                ctx.collect_with_timestamp(i, 1_000 + i)


class EmitTimestamp(ProcessFunction):
    def process_element(self, value: Any, ctx: Any):
        yield value, ctx.timestamp()


def test_timestamps_given_with_collect_with_timestamp_reach_downstream_operators():
    env = StreamExecutionEnvironment.get_execution_environment()
    got = collect(env.add_source(Timestamped()).process(EmitTimestamp()))
    assert got == [(i, None if i % 3 == 0 else 1_000 + i) for i in range(300)]


def test_a_fast_source_function_is_back_pressured_by_the_bounded_buffer():
    emitted = [0]

    class Fast(SourceFunction):
        def run(self, ctx: Any) -> None:
            for i in range(100):
                ctx.collect(i)
                emitted[0] += 1

    reader = SourceFunctionReader(Fast(), capacity=10)
    wait_until(lambda: emitted[0] == 10, what="the buffer to fill")
    reader._thread.join(0.2)  # would run to 100 within this time if nothing held it back
    assert emitted[0] == 10 and reader._thread.is_alive()
    got: list[int] = []
    while (batch := reader.poll(10)) is not None:
        got.extend(batch)
    assert got == list(range(100))
    reader.close()


class Exploding(SourceFunction):
    def run(self, ctx: Any) -> None:
        ctx.collect(1)
        raise_from_my_source()


def raise_from_my_source() -> None:
    raise ValueError("sensor offline")


def test_an_exception_in_run_fails_the_job_with_the_users_traceback():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.add_source(Exploding()).print()
    with pytest.raises(JobExecutionError) as info:
        env.execute("exploding")
    assert "raise_from_my_source" in str(info.value)
    assert "ValueError: sensor offline" in str(info.value)


CANCELLED = threading.Event()


class Endless(SourceFunction):
    def __init__(self) -> None:
        self.running = True

    def run(self, ctx: Any) -> None:
        i = 0
        while self.running:
            ctx.collect(i)
            i += 1

    def cancel(self) -> None:
        self.running = False
        CANCELLED.set()


def test_cancelling_the_job_calls_cancel_on_the_source_function():
    CANCELLED.clear()
    env = StreamExecutionEnvironment.get_execution_environment()
    job = RecordedJob(env.add_source(Endless()))
    job.wait_for(100)
    job.cancel()
    assert CANCELLED.wait(5)
    got = job.snapshot()
    assert got == list(range(len(got)))


def test_add_source_rejects_objects_without_run():
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(TypeError, match="SourceFunction"):
        env.add_source(object())
