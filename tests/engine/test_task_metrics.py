"""Task I/O metrics (Flink's names and semantics), user metrics and snapshots of a LocalJob."""

from __future__ import annotations

import math
import pickle
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from strom.common import WatermarkStrategy
from strom.common.time import MAX_WATERMARK
from strom.connectors.datagen import DataGeneratorSource
from strom.connectors.number_sequence import NumberSequenceReader, NumberSequenceSource
from strom.datastream import MapFunction, StreamExecutionEnvironment
from strom.datastream.functions import SinkFunction, SourceFunction
from strom.runtime.local_executor import LocalJob
from strom.runtime.metrics import (
    Distribution,
    Histogram,
    MetricGroup,
    MetricsSnapshot,
    RateView,
    SubtaskMetrics,
    merge_snapshots,
)
from strom.runtime.metrics.snapshots import collect_user_metrics
from strom.testing import punctuated_watermarks

SPAN = "2 s"  # short rate window so that tests see steady rates within seconds


def start_job(env: StreamExecutionEnvironment, name: str, *, span: str = SPAN) -> LocalJob:
    graph = env.get_stream_graph(name, clear_transformations=True)
    graph.config.set("metrics.meter.time-span", span)
    job = LocalJob(graph)
    job.start()
    return job


def stop(job: LocalJob) -> None:
    job.cancel()
    job._done.wait(10)


def wait_for(job: LocalJob, condition: Callable[[MetricsSnapshot], bool], timeout: float = 30.0) -> MetricsSnapshot:
    """The first snapshot meeting `condition`; fails with the last one seen after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        snap = job.metrics_snapshot()
        if condition(snap):
            return snap
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s; last snapshot: {snap}")
        time.sleep(0.05)


def time_sum(s: SubtaskMetrics) -> float:
    return s.task["busyTimeMsPerSecond"] + s.task["idleTimeMsPerSecond"] + s.task["backPressuredTimeMsPerSecond"]


def uptime_ms(snap: MetricsSnapshot) -> float:
    return snap.jobs[0].values["uptime"]


class SlowSink(SinkFunction):
    """Sleeps 10 ms every 100 records: about 1 s per 1024-record buffer, far slower than its input."""

    def __init__(self) -> None:
        self.n = 0

    def invoke(self, value: Any, context: Any) -> None:
        self.n += 1
        if self.n % 100 == 0:
            time.sleep(0.01)


class NullSink(SinkFunction):
    def invoke(self, value: Any, context: Any) -> None:
        pass


def env_p1() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


def test_slow_sink_back_pressures_upstream_and_is_busy_itself():
    env = env_p1()
    env.from_source(NumberSequenceSource(1, 10**9), WatermarkStrategy.no_watermarks(), "numbers").map(
        lambda v: v + 1
    ).rebalance().add_sink(SlowSink())
    job = start_job(env, "back pressure")
    try:
        snap = wait_for(
            job,
            lambda s: uptime_ms(s) > 3000
            and s.subtask("Source").task["backPressuredTimeMsPerSecond"] > 500
            and s.subtask("Sink").task["busyTimeMsPerSecond"] > 700,
        )
    finally:
        stop(job)
    upstream, sink = snap.subtask("Source").task, snap.subtask("Sink").task
    assert upstream["busyTimeMsPerSecond"] < 300
    assert sink["backPressuredTimeMsPerSecond"] == 0  # a sink has no output channel to block on
    for s in snap.subtasks:
        assert 800 <= time_sum(s) <= 1200, (s.task_name, s.task)


def test_task_waiting_for_a_slow_source_is_idle():
    env = env_p1()
    env.from_source(DataGeneratorSource(lambda i: i, None, rate_limit=20), WatermarkStrategy.no_watermarks(), "gen") \
        .rebalance().map(lambda v: v * 2).name("Doubler").add_sink(SlowSink())
    job = start_job(env, "idle")
    try:
        snap = wait_for(
            job, lambda s: uptime_ms(s) > 3000 and s.subtask("Doubler").task["idleTimeMsPerSecond"] > 800
        )
    finally:
        stop(job)
    doubler = snap.subtask("Doubler")
    assert doubler.task["busyTimeMsPerSecond"] < 200
    assert doubler.task["numRecordsIn"] > 0
    assert 800 <= time_sum(doubler) <= 1200, doubler.task


def test_record_counts_equal_the_reference_counts():
    """Numbers 1..10000 at parallelism 2: subtask i reads one half (NumberSequenceSource splits
    contiguously), a chained filter keeps the even ones, flat_map emits each twice downstream."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_source(NumberSequenceSource(1, 10_000), WatermarkStrategy.no_watermarks(), "numbers") \
        .filter(lambda v: v % 2 == 0).flat_map(lambda v: [v, v]).key_by(lambda v: v % 7) \
        .map(lambda v: v).name("Keyed").add_sink(NullSink())
    job = start_job(env, "counts")
    job.wait(60)
    snap = job.metrics_snapshot()
    halves = [range(1, 5001), range(5001, 10_001)]
    for i, half in enumerate(halves):
        source = snap.subtask("Source", i).task
        assert source["numRecordsIn"] == len(half)
        assert source["numRecordsOut"] == 2 * sum(1 for v in half if v % 2 == 0)
        assert source["pendingRecords"] == 0
    keyed_in = [snap.subtask("Keyed", i).task["numRecordsIn"] for i in range(2)]
    assert sum(keyed_in) == 2 * sum(1 for v in range(1, 10_001) if v % 2 == 0)
    # The sink is chained to the keyed map: nothing leaves that task.
    assert all(snap.subtask("Keyed", i).task["numRecordsOut"] == 0 for i in range(2))
    assert all(s.task["numBytesIn"] == 0 and s.task["numBytesOut"] == 0 for s in snap.subtasks)  # in-process


class TimestampedThenQuiet(SourceFunction):
    """Emits 0..999 with timestamp = value, then waits, silent, until cancelled."""

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def run(self, ctx: Any) -> None:
        for i in range(1000):
            ctx.collect_with_timestamp(i, i)
        self.stopped.wait()

    def cancel(self) -> None:
        self.stopped.set()


def test_watermark_gauges_equal_the_last_watermark():
    """Punctuated watermarks `max_ts - 0 - 1`: after record 999 the last watermark is 998."""
    env = env_p1()
    env.add_source(TimestampedThenQuiet()).assign_timestamps_and_watermarks(punctuated_watermarks(0)) \
        .rebalance().map(lambda v: v).name("Forward").add_sink(SlowSink())
    job = start_job(env, "watermarks")
    try:
        snap = wait_for(job, lambda s: s.subtask("Forward").task["currentOutputWatermark"] == 998)
    finally:
        stop(job)
    forward = snap.subtask("Forward").task
    assert forward["currentInputWatermark"] == 998
    assert snap.subtask("Source").task["currentOutputWatermark"] == 998


def test_end_of_bounded_input_shows_the_max_watermark():
    env = env_p1()
    env.from_source(NumberSequenceSource(1, 100), WatermarkStrategy.for_monotonous_timestamps()
                    .with_timestamp_assigner(lambda v, _: v), "numbers").rebalance().map(lambda v: v).name("M") \
        .add_sink(SlowSink())
    job = start_job(env, "max watermark")
    job.wait(60)
    m = job.metrics_snapshot().subtask("M").task
    assert m["currentInputWatermark"] == m["currentOutputWatermark"] == float(MAX_WATERMARK)


class Instrumented(MapFunction):
    def open(self, ctx: Any) -> None:
        g = ctx.get_metrics_group()
        self.seen = g.counter("seen")
        self.rate = g.add_group("io").meter("events", 2)
        self.sizes = g.add_group("kind", "number").distribution("value")
        self.last = 0
        g.gauge("last", lambda: self.last)

    def map(self, v: int) -> int:
        self.seen.inc()
        self.rate.mark_event()
        self.sizes.update(v)
        self.last = v
        return v


def test_user_counter_gauge_meter_and_distribution_appear_in_the_snapshot():
    env = env_p1()
    env.from_source(NumberSequenceSource(1, 500), WatermarkStrategy.no_watermarks(), "numbers") \
        .map(Instrumented()).name("Instrumented").add_sink(SlowSink())
    job = start_job(env, "user metrics")
    job.wait(60)
    metrics = {m.name: m for m in job.metrics_snapshot().subtask("Source").user}
    assert metrics["seen"].kind == "counter" and metrics["seen"].value == 500
    assert metrics["last"].kind == "gauge" and metrics["last"].value == 500
    assert metrics["io_events"].kind == "meter" and dict(metrics["io_events"].stats)["count"] == 500
    assert metrics["io_events"].value > 0
    dist = metrics["kind_value"]  # a key/value group's key stays in the name, its value is a label (Flink)
    assert dist.operator_name == "Instrumented" and dist.labels == (("kind", "number"),)
    stats = dict(dist.stats)
    assert dist.value == 500 and stats["sum"] == sum(range(1, 501))
    assert (stats["min"], stats["max"], stats["mean"]) == (1, 500, sum(range(1, 501)) / 500)


def test_snapshots_pickle_and_merge():
    env = env_p1()
    env.from_source(NumberSequenceSource(1, 100), WatermarkStrategy.no_watermarks(), "numbers") \
        .map(Instrumented()).add_sink(SlowSink())
    job = start_job(env, "pickle")
    job.wait(60)
    snap = job.metrics_snapshot()
    assert pickle.loads(pickle.dumps(snap)) == snap
    other = MetricsSnapshot(jobmanager={"numRegisteredTaskManagers": 2.0}, taskmanagers={"tm-1": {"x": 1.0}})
    merged = merge_snapshots([snap, other])
    assert merged.subtasks == snap.subtasks and merged.jobmanager == {"numRegisteredTaskManagers": 2.0}
    assert merged.taskmanagers == {"tm-1": {"x": 1.0}}


def test_readers_report_their_backlog():
    reader = NumberSequenceReader(1, 10)
    assert reader.pending_records() == 10
    reader.poll(3)
    assert reader.pending_records() == 7
    source = DataGeneratorSource(lambda i: i, 10)
    from strom.connectors.base import SourceReaderContext

    gen = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=2))
    assert gen.pending_records() == 5
    gen.poll(2)
    assert gen.pending_records() == 3
    unbounded = DataGeneratorSource(lambda i: i, None).create_reader(SourceReaderContext(0, 1))
    assert unbounded.pending_records() is None


def test_rate_view_is_a_sliding_window_over_the_span():
    """Span 60 s, samples every 5 s. 10 events/s for 60 s, then none. At t=90 the window starts
    at the newest sample at least 60 s old, t=30 (total 300): (600 - 300) / 60 = 5/s. At t=93 no
    new sample is due (< 5 s since t=90); the window is [30, 93]: 300 / 63."""
    view = RateView(60, start=0.0)
    for t in range(5, 61, 5):
        assert math.isclose(view.rate(float(t), 10.0 * t), 10.0)
    for t in range(65, 91, 5):
        rate = view.rate(float(t), 600.0)
    assert math.isclose(rate, 5.0)
    assert math.isclose(view.rate(93.0, 600.0), 300 / 63)
    assert view.rate(200.0, 600.0) == 0.0


def test_histogram_statistics_match_the_statistics_module():
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    h = Histogram(window_size=4)
    for v in values:
        h.update(v)
    s = h.get_statistics()
    window = values[-4:]
    assert (s.count, s.sum) == (6, sum(values))
    assert (s.min, s.max) == (min(window), max(window))
    assert math.isclose(s.mean, statistics.mean(window)) and math.isclose(s.stddev, statistics.stdev(window))
    assert math.isclose(s.get_quantile(0.5), statistics.median(window))
    d = Distribution(window_size=4)
    for v in values:
        d.update(v)
    assert (d.get_statistics().min, d.get_statistics().max) == (1.0, 9.0)  # over every value


def test_user_metric_names_follow_groups_and_key_value_group_values_become_labels():
    subtask = MetricGroup().add_group("task", "T").add_group("subtask", "0")
    op = subtask.add_group("operator", "my op")
    op.add_group("a").add_group("b").counter("c").inc(3)
    op.add_group("shard", "7").gauge("g", lambda: "not a number")  # non-numeric gauges are skipped
    op.add_group("shard", "7").gauge("h", lambda: True)
    got = {(m.name, m.labels): m.value for m in collect_user_metrics(subtask)}
    assert got == {("a_b_c", ()): 3.0, ("shard_h", (("shard", "7"),)): 1.0}
    ids = {m.identifier for m in collect_user_metrics(subtask)}
    assert ids == {"a.b.c", "shard.7.h"}  # Flink's REST ids keep the value in the scope
