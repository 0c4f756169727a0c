"""PyFlink's side of the comparison (runs in its own virtualenv with Java 17; imports no Strom engine code).

DataStream API with Python functions as UDFs (map/filter/key_by/window/reduce), parallelism 1, a bounded
NumberSequenceSource whose numbers a Python map turns into events (Nexmark: a Python flat_map turns chunk
numbers into 8192 events each, with Strom's numpy generator, as Strom's source does). The sink counts: a
Python flat_map counts what reaches it, emits nothing, and writes its count to a file when it closes (the
UDFs may run in a Python worker other than this process), followed by print() as the job's sink.
Records that cross a Java operator (key_by, windows) are declared with Flink types, as the PyFlink docs
advise, rather than pickled.

    ~/.cache/strom-compare/pyflink/bin/python benchmarks/compare/programs/pyflink_job.py --workload b --events 100000
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import harness
import workloads
from pyflink.common import Configuration, Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.functions import (
    AggregateFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    ProcessWindowFunction,
    RuntimeContext,
)
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

# PyFlink's Python state is cached in the worker; the default cache (1000 entries) is smaller than the
# keyed workloads' state (1000 keys per window), so every access would be a round trip to the JVM.
PYTHON_OPTIONS = {"python.state.cache-size": "100000"}
MICRO_EVENT = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()])


class CountRows(FlatMapFunction):
    """The counting sink: counts, emits nothing, appends its count to `path` on close."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.count = 0

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = 0

    def flat_map(self, value: Any) -> Iterable[Any]:
        self.count += 1
        return ()

    def close(self) -> None:
        with open(self.path, "a") as f:
            f.write(f"{self.count}\n")


class EventTime(TimestampAssigner):
    def __init__(self, field: int) -> None:
        self.field = field

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value[self.field]


class NexmarkChunks(FlatMapFunction):
    """Chunk number -> its Nexmark events (the generator is built once per worker, in open())."""

    def __init__(self, events: int, strom_dir: str) -> None:
        self.events, self.strom_dir = events, strom_dir
        self.source: Any = None

    def open(self, runtime_context: RuntimeContext) -> None:
        self.source = workloads.NexmarkEvents(self.events, self.strom_dir)

    def flat_map(self, chunk: int) -> Iterable[Any]:
        return self.source.chunk(chunk)


class IsBid:
    """A picklable predicate: is this event a Bid (compared by class name: the class is loaded in the worker)."""

    def __call__(self, e: Any) -> bool:
        return type(e).__name__ == "Bid"


class Count(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class WithWindowEnd(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[int]) -> Iterable[tuple[int, int, int]]:
        for count in elements:
            yield (key, count, context.window().end)


class HotItems(KeyedProcessFunction):
    """Per window end: the auctions with the highest count, emitted at the window's last millisecond."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.top = runtime_context.get_state(ValueStateDescriptor("top", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value: tuple[int, int, int], ctx: Any) -> None:
        auction, count, end = value
        top = self.top.value()
        if top is None:
            self.top.update((count, [auction]))
            ctx.timer_service().register_event_time_timer(end - 1)
        elif count > top[0]:
            self.top.update((count, [auction]))
        elif count == top[0]:
            top[1].append(auction)
            self.top.update(top)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[tuple[int, int]]:
        count, auctions = self.top.value()
        self.top.clear()
        for auction in auctions:
            yield (auction, count)


def numbers(env: StreamExecutionEnvironment, count: int) -> Any:
    return env.from_source(NumberSequenceSource(0, count - 1), WatermarkStrategy.no_watermarks(), "numbers")


def micro_a(env: StreamExecutionEnvironment, n: int) -> Any:
    return (numbers(env, n).map(workloads.make_event, output_type=MICRO_EVENT)
            .map(workloads.map_fn, output_type=MICRO_EVENT).filter(workloads.filter_fn))


def micro_b(env: StreamExecutionEnvironment, n: int) -> Any:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime(1))
    return (numbers(env, n).map(workloads.make_event, output_type=MICRO_EVENT)
            .assign_timestamps_and_watermarks(strategy)
            .key_by(workloads.key_fn, key_type=Types.LONG())
            .window(TumblingEventTimeWindows.of(Time.milliseconds(workloads.WINDOW_MS)))
            .reduce(workloads.sum_fn, output_type=MICRO_EVENT))


def nexmark_bids(env: StreamExecutionEnvironment, n: int) -> Any:
    chunks = (n + workloads.NEXMARK_CHUNK - 1) // workloads.NEXMARK_CHUNK
    generated = numbers(env, chunks).flat_map(NexmarkChunks(n, str(workloads.strom_package_dir())),
                                              output_type=Types.PICKLED_BYTE_ARRAY())
    return generated.filter(IsBid())


def q0(env: StreamExecutionEnvironment, n: int) -> Any:
    return nexmark_bids(env, n).map(workloads.q0_row)


def q2(env: StreamExecutionEnvironment, n: int) -> Any:
    return nexmark_bids(env, n).filter(workloads.q2_keep).map(workloads.q2_row)


def q5(env: StreamExecutionEnvironment, n: int) -> Any:
    delay = Duration.of_millis(workloads.NEXMARK_WATERMARK_DELAY_MS)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(delay).with_timestamp_assigner(EventTime(1))
    size, slide = Time.milliseconds(workloads.Q5_SIZE_MS), Time.milliseconds(workloads.Q5_SLIDE_MS)
    return (nexmark_bids(env, n).map(lambda b: (b.auction, b.date_time), output_type=Types.TUPLE([Types.LONG()] * 2))
            .assign_timestamps_and_watermarks(strategy)
            .key_by(lambda b: b[0], key_type=Types.LONG())
            .window(SlidingEventTimeWindows.of(size, slide))
            .aggregate(Count(), WithWindowEnd(), accumulator_type=Types.LONG(),
                       output_type=Types.TUPLE([Types.LONG()] * 3))
            .key_by(lambda c: c[2], key_type=Types.LONG())
            .process(HotItems(), output_type=Types.TUPLE([Types.LONG()] * 2)))


PIPELINES = {"a": micro_a, "b": micro_b, "q0": q0, "q2": q2, "q5": q5}


def run(workload: str, n: int) -> int:
    conf = Configuration()
    for key, value in PYTHON_OPTIONS.items():
        conf.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.set_python_executable(sys.executable)  # this virtualenv's python, not the first one on PATH
    env.add_python_file(workloads.__file__)
    with tempfile.TemporaryDirectory(prefix="pyflink-count-") as directory:
        counts = Path(directory) / "counts"
        PIPELINES[workload](env, n).flat_map(CountRows(str(counts))).print()
        env.execute(f"compare-{workload}")
        return sum(int(line) for line in counts.read_text().split()) if counts.exists() else 0


if __name__ == "__main__":
    os.environ.setdefault("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    harness.main("pyflink", run)
