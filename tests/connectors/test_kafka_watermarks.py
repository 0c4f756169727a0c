"""Per-partition watermarks: the source's watermark is the minimum over its partitions that are not
idle (Flink's per-split watermark generation), checked against the timestamps the test wrote."""

from __future__ import annotations

import time

from strom.common import Duration, WatermarkStrategy
from strom.common.serialization import SimpleStringSchema
from strom.connectors.base import SourceReaderContext
from strom.connectors.kafka.offsets import KafkaOffsetsInitializer
from strom.connectors.kafka.source import KafkaSource
from strom.runtime.operators.split_watermarks import SplitWatermarkEmitter

from tests.connectors.kafka_testing import kafka_fixture  # noqa: F401 - the `kafka` fixture


class Clock:
    """A processing-time service whose timers fire when the test advances it."""

    def __init__(self) -> None:
        self.t = 0
        self.timers: list[tuple[int, object]] = []

    def now(self) -> int:
        return self.t

    def register_timer(self, timestamp, callback) -> None:
        self.timers.append((timestamp, callback))

    def advance(self, ms: int) -> None:
        self.t += ms
        due = [(ts, cb) for ts, cb in self.timers if ts <= self.t]
        self.timers = [(ts, cb) for ts, cb in self.timers if ts > self.t]
        for _ts, cb in due:
            cb(self.t)


class Output:
    def __init__(self) -> None:
        self.records: list = []
        self.watermarks: list[int] = []
        self.statuses: list[bool] = []

    def collect(self, values, timestamps) -> None:
        self.records += values

    def emit_watermark(self, ts: int) -> None:
        self.watermarks.append(ts)

    def emit_status(self, idle: bool) -> None:
        self.statuses.append(idle)


class FakeReader:
    def __init__(self, splits) -> None:
        self.splits = list(splits)
        self.last_splits: list = []

    def current_splits(self):
        return list(self.splits)


def _emitter(strategy, reader):
    clock, out = Clock(), Output()
    emitter = SplitWatermarkEmitter(strategy, out, clock, None, reader)
    emitter.start()
    return emitter, clock, out


def test_the_slowest_partition_holds_the_watermark_until_it_is_idle():
    reader = FakeReader(["a", "b"])
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(1000))
    emitter, clock, out = _emitter(strategy, reader)
    reader.last_splits = ["a", "a", "b"]
    emitter.emit_batch(["a1", "a2", "b1"], [100, 5000, 300])
    clock.advance(200)
    assert out.watermarks == [299]  # min over a (4999) and b (299)
    reader.last_splits = ["a"]
    emitter.emit_batch(["a3"], [6000])
    clock.advance(200)
    assert out.watermarks == [299]  # b still holds it back
    for _ in range(6):  # a keeps reading, b has nothing for more than the idleness timeout
        emitter.emit_batch(["a"], [6000])
        clock.advance(200)
    assert out.watermarks[-1] == 5999 and out.statuses == []
    reader.splits = ["a"]  # b ended (e.g. its stopping offset): it no longer counts either way
    for _ in range(6):
        clock.advance(200)
    assert out.statuses == [True]  # every split idle: the source is idle
    reader.last_splits = ["a"]
    emitter.emit_batch(["a"], [7000])
    clock.advance(200)
    assert out.statuses == [True, False] and out.watermarks[-1] == 6999


def test_a_split_without_records_holds_the_watermark_without_idleness():
    reader = FakeReader(["a", "b"])
    emitter, clock, out = _emitter(WatermarkStrategy.for_monotonous_timestamps(), reader)
    reader.last_splits = ["a"]
    emitter.emit_batch(["a"], [1000])
    for _ in range(20):
        clock.advance(200)
    assert out.watermarks == []  # b is known (assigned) and has no watermark yet


def test_kafka_partitions_each_have_a_watermark(kafka):
    topic = kafka.new_topic(2)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka.bootstrap, "log_level": 3})
    for n in range(10):
        producer.produce(topic, b"fast", partition=0, timestamp=10_000 + 1000 * n)
    producer.produce(topic, b"slow", partition=1, timestamp=2_000)
    assert producer.flush(30) == 0
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_topics(topic)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_property("partition.discovery.interval.ms", "-1")
        .build()
    )
    reader = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(1000))
    emitter, clock, out = _emitter(strategy, reader)
    deadline = time.monotonic() + 20
    while len(out.records) < 11 and time.monotonic() < deadline:
        emitter.emit_batch(reader.poll(100) or [], reader.last_timestamps)
    assert sorted(out.records) == ["fast"] * 10 + ["slow"]
    clock.advance(200)
    assert out.watermarks == [1999]  # the slow partition's, not the merged stream's 18999
    for _ in range(6):  # partition 1 stays silent past the idleness timeout; partition 0 goes on
        producer.produce(topic, b"fast", partition=0, timestamp=20_000)
        producer.flush(10)
        got = []
        while not got and time.monotonic() < deadline:
            got = reader.poll(100) or []
        emitter.emit_batch(got, reader.last_timestamps)
        clock.advance(200)
    assert out.watermarks[-1] == 19_999
    reader.close()
