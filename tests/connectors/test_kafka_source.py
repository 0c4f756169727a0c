"""KafkaSource against a Kafka (the mock cluster fixture, or STROM_TEST_KAFKA_BOOTSTRAP).

References are plain Python: the records the test produced, per partition in offset order."""

from __future__ import annotations

import time

import pytest
from strom.common.serialization import SimpleStringSchema
from strom.connectors.base import Boundedness, SourceReaderContext
from strom.connectors.kafka.offsets import KafkaOffsetResetStrategy, KafkaOffsetsInitializer, KafkaTopicPartition
from strom.connectors.kafka.source import KafkaSource
from strom.connectors.kafka.splits import owner

from tests.connectors.kafka_testing import kafka_fixture, produce  # noqa: F401 - the `kafka` fixture
from tests.engine.connector_testing import wait_until

PARTITIONS = 3
PER_PARTITION = 40


@pytest.fixture(scope="module")
def topic(kafka):
    """A topic with PER_PARTITION records per partition, values 'p<partition>-<n>' with timestamps 1000 + n."""
    name = kafka.new_topic(PARTITIONS)
    records = [(p, None, f"p{p}-{n}".encode()) for n in range(PER_PARTITION) for p in range(PARTITIONS)]
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka.bootstrap, "log_level": 3})
    for p, _k, v in records:
        producer.produce(name, v, partition=p, timestamp=1000 + int(v.decode().split("-")[1]))
    assert producer.flush(30) == 0
    return name


def _all_values():
    return sorted(f"p{p}-{n}" for p in range(PARTITIONS) for n in range(PER_PARTITION))


def _builder(kafka, topic):
    return (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_topics(topic)
        .set_value_only_deserializer(SimpleStringSchema())
    )


def _drain(source, parallelism=1, restored=None, limit=None):
    """Every record the readers of `source` emit until they end (bounded), per subtask."""
    out = []
    for i in range(parallelism):
        reader = source.create_reader(SourceReaderContext(subtask_index=i, parallelism=parallelism))
        try:
            if restored is not None:
                reader.restore_splits(source.redistribute_splits(restored, i, parallelism))
            deadline = time.monotonic() + 30
            while (batch := reader.poll(50)) is not None:
                out += batch
                assert time.monotonic() < deadline, "a bounded reader did not end"
        finally:
            reader.close()
    return out


def test_bounded_earliest_reads_exactly_what_was_produced(kafka, topic):
    source = _builder(kafka, topic).set_bounded(KafkaOffsetsInitializer.latest()).build()
    assert source.get_boundedness() is Boundedness.BOUNDED
    assert sorted(_drain(source, parallelism=2)) == _all_values()
    # set_unbounded: the same records, the source stays unbounded (STREAMING)
    unbounded = _builder(kafka, topic).set_unbounded(KafkaOffsetsInitializer.latest()).build()
    assert unbounded.get_boundedness() is Boundedness.CONTINUOUS_UNBOUNDED
    assert sorted(_drain(unbounded, parallelism=2)) == _all_values()


def test_latest_start_reads_only_later_records(kafka):
    topic = kafka.new_topic(PARTITIONS)
    produce(kafka.bootstrap, topic, [(p, None, b"early") for p in range(PARTITIONS)])
    source = (
        _builder(kafka, topic)
        .set_starting_offsets(KafkaOffsetsInitializer.latest())
        .set_property("partition.discovery.interval.ms", "-1")
        .build()
    )
    reader = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    try:
        assert reader.poll(100) == []  # starts at the end
        extra_topic_records = [(1, None, b"late-1"), (2, None, b"late-2")]
        produce(kafka.bootstrap, topic, extra_topic_records)
        got: list[str] = []
        wait_until(lambda: got.extend(reader.poll(100) or []) or len(got) >= 2, timeout=20, what="the late records")
    finally:
        reader.close()
    assert sorted(got) == ["late-1", "late-2"]


def _timestamped_topic(kafka):
    name = kafka.new_topic(2)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka.bootstrap, "log_level": 3})
    for n in range(20):
        for p in range(2):
            producer.produce(name, f"{p}:{n}".encode(), partition=p, timestamp=5000 + n)
    assert producer.flush(30) == 0
    return name


def test_timestamp_start(kafka):
    if kafka.is_mock:
        pytest.skip(
            "librdkafka's mock cluster answers ListOffsets by timestamp with -1 (no such offset) for "
            "every timestamp; run with STROM_TEST_KAFKA_BOOTSTRAP against a real cluster"
        )
    name = _timestamped_topic(kafka)
    by_time = (
        _builder(kafka, name)
        .set_starting_offsets(KafkaOffsetsInitializer.timestamp(5012))
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    assert sorted(_drain(by_time)) == sorted(f"{p}:{n}" for p in range(2) for n in range(12, 20))


def test_specific_offsets(kafka):
    name = _timestamped_topic(kafka)
    specific = (
        _builder(kafka, name)
        .set_starting_offsets(KafkaOffsetsInitializer.offsets({KafkaTopicPartition(name, 0): 15}))
        .set_bounded(
            KafkaOffsetsInitializer.offsets({KafkaTopicPartition(name, 0): 18, KafkaTopicPartition(name, 1): 3})
        )
        .build()
    )
    # partition 1 has no starting offset: the reset strategy (EARLIEST by default)
    assert sorted(_drain(specific)) == sorted(["0:15", "0:16", "0:17", "1:0", "1:1", "1:2"])


def test_committed_offsets_with_reset_strategy_and_commit_on_checkpoint(kafka, topic):
    group = f"g-{time.monotonic_ns()}"
    bounded = KafkaOffsetsInitializer.latest()
    committed = _builder(kafka, topic).set_group_id(group).set_bounded(bounded)
    # no committed offset yet: NONE refuses, naming the partition; EARLIEST reads everything
    none = committed.set_starting_offsets(KafkaOffsetsInitializer.committed_offsets()).build()
    reader = none.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    with pytest.raises(ValueError, match="has no committed offset.*reset strategy is NONE"):
        reader.poll(10)
    reader.close()
    source = committed.set_starting_offsets(
        KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST)
    ).build()
    reader = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    first: list[str] = []
    while len(first) < 30:
        first += reader.poll(10) or []
    reader.prepare_snapshot(1)
    reader.notify_checkpoint_complete(1)  # commits the checkpoint's offsets to the group
    reader.close()
    # a fresh source of the same group starts at the committed offsets
    rest = _drain(source)
    assert sorted(first + rest) == _all_values()


def test_rescaling_two_to_three_from_snapshotted_splits(kafka, topic):
    """Savepoint semantics at the reader level: two readers stop midway, their splits are pooled and
    dealt to three by the ownership rule (what SourceOperator does on a restore at another parallelism)."""
    source = _builder(kafka, topic).set_bounded(KafkaOffsetsInitializer.latest()).build()
    emitted, pooled = [], []
    for i in range(2):
        reader = source.create_reader(SourceReaderContext(subtask_index=i, parallelism=2))
        got: list[str] = []
        while len(got) < 17:
            got += reader.poll(17 - len(got)) or []
        emitted += got
        pooled += reader.snapshot_splits()
        reader.close()
    assert sorted((t, p) for t, p, _n, _s in pooled) == [(topic, p) for p in range(PARTITIONS)]
    for j in range(3):  # every split goes to exactly one new subtask
        assert {(s[0], s[1]) for s in source.redistribute_splits(pooled, j, 3)} == {
            (topic, p) for p in range(PARTITIONS) if owner(topic, p, 3) == j
        }
    rest = _drain(source, parallelism=3, restored=pooled)
    assert sorted(emitted + rest) == _all_values()  # nothing lost, nothing twice


def test_topic_pattern_discovers_new_topics(kafka):
    prefix = f"disc{time.monotonic_ns()}"
    first = kafka.new_topic(1, prefix=prefix)
    produce(kafka.bootstrap, first, [(0, None, b"a")])
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_topic_pattern(f"{prefix}-.*")
        .set_value_only_deserializer(SimpleStringSchema())
        .set_property("partition.discovery.interval.ms", "100")
        .build()
    )
    reader = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    got: list[str] = []
    wait_until(lambda: got.extend(reader.poll(10) or []) or got == ["a"], timeout=20, what="the first topic")
    second = kafka.new_topic(2, prefix=prefix)
    produce(kafka.bootstrap, second, [(0, None, b"b"), (1, None, b"c")])
    wait_until(lambda: got.extend(reader.poll(10) or []) or len(got) >= 3, timeout=20, what="the discovered topic")
    assert sorted(got) == ["a", "b", "c"]
    assert {(t, p) for t, p, _n, _s in reader.snapshot_splits()} == {(first, 0), (second, 0), (second, 1)}
    reader.close()


def test_pending_records_is_the_lag(kafka, topic):
    source = _builder(kafka, topic).set_property("partition.discovery.interval.ms", "-1").build()
    reader = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    got: list[str] = []
    while len(got) < 10:
        got += reader.poll(10 - len(got)) or []
    wait_until(lambda: reader.pending_records() == PARTITIONS * PER_PARTITION - len(got), timeout=10, what="lag")
    reader.close()


def test_missing_topic_and_unreachable_brokers_are_one_line_errors(kafka):
    missing = _builder(kafka, "no-such-topic-xyz").build()
    reader = missing.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    with pytest.raises(RuntimeError, match="topic 'no-such-topic-xyz' does not exist at .*allow.auto.create.topics"):
        reader.poll(10)
    reader.close()
    dead = (
        KafkaSource.builder()
        .set_bootstrap_servers("127.0.0.1:1")
        .set_topics("t")
        .set_value_only_deserializer(SimpleStringSchema())
        .set_property("socket.connection.setup.timeout.ms", "1000")
        .build()
    )
    reader = dead.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    import strom.connectors.kafka.client as client

    client.METADATA_TIMEOUT_S, saved = 2.0, client.METADATA_TIMEOUT_S
    try:
        with pytest.raises(RuntimeError, match=r"Kafka brokers at 127\.0\.0\.1:1 did not answer.*bootstrap.servers"):
            reader.poll(10)
    finally:
        client.METADATA_TIMEOUT_S = saved
        reader.close()


def test_builder_refuses_incomplete_settings():
    with pytest.raises(ValueError, match="bootstrap servers are not set"):
        KafkaSource.builder().set_topics("t").set_value_only_deserializer(SimpleStringSchema()).build()
    with pytest.raises(ValueError, match="no topics"):
        KafkaSource.builder().set_bootstrap_servers("h:1").set_value_only_deserializer(SimpleStringSchema()).build()
    with pytest.raises(ValueError, match="is not a regular expression"):
        KafkaSource.builder().set_topic_pattern("(")
    with pytest.raises(ValueError, match="committed offsets need a group id"):
        (
            KafkaSource.builder()
            .set_bootstrap_servers("h:1")
            .set_topics("t")
            .set_value_only_deserializer(SimpleStringSchema())
            .set_starting_offsets(KafkaOffsetsInitializer.committed_offsets())
            .build()
        )


class KeyValue:
    """A KafkaRecordDeserializationSchema of its own: (key, value, partition) from the whole message."""

    def deserialize(self, message):
        return (message.key().decode(), message.value().decode(), message.partition())


def test_set_deserializer_sees_the_whole_record(kafka):
    name = kafka.new_topic(2)
    produce(kafka.bootstrap, name, [(n % 2, f"k{n}".encode(), f"v{n}".encode()) for n in range(6)])
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_topics(name)
        .set_deserializer(KeyValue())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    assert sorted(_drain(source)) == sorted((f"k{n}", f"v{n}", n % 2) for n in range(6))
    with pytest.raises(TypeError, match="KafkaRecordDeserializationSchema"):
        KafkaSource.builder().set_deserializer(object())


def test_set_partitions_reads_exactly_the_named_partitions(kafka, topic):
    chosen = {KafkaTopicPartition(topic, 0), KafkaTopicPartition(topic, 2)}
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_partitions(chosen)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    expected = sorted(f"p{p}-{n}" for p in (0, 2) for n in range(PER_PARTITION))
    assert sorted(_drain(source, parallelism=2)) == expected


def test_set_partitions_refuses_a_partition_that_does_not_exist(kafka, topic):
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_partitions({KafkaTopicPartition(topic, 1), KafkaTopicPartition(topic, 7)})
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    reader = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    try:
        with pytest.raises(RuntimeError, match=rf"partition {topic}-7 \(set_partitions\) does not exist .*0\.\.2"):
            reader.poll(10)
    finally:
        reader.close()


def test_set_partitions_refuses_what_is_not_a_topic_partition():
    with pytest.raises(TypeError, match=r"KafkaTopicPartition\(topic, partition\) items, got \('t', 0\)"):
        KafkaSource.builder().set_partitions({("t", 0)})
    with pytest.raises(ValueError, match="no partitions given"):
        KafkaSource.builder().set_partitions(set())
    with pytest.raises(ValueError, match="must be an int >= 0"):
        KafkaSource.builder().set_partitions({KafkaTopicPartition("t", -1)})
