"""KafkaSink against a Kafka (the mock cluster fixture, or STROM_TEST_KAFKA_BOOTSTRAP): what the
brokers hold is compared with the plain-Python list of records the job was given."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from strom.common import Configuration, Types
from strom.common.serialization import SimpleStringSchema
from strom.connectors.kafka import sink as kafka_sink
from strom.connectors.sink_base import SinkInitContext
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.kafka import DeliveryGuarantee, KafkaRecordSerializationSchema, KafkaSink
from strom.datastream.formats.json import JsonRowSerializationSchema

from tests.connectors.kafka_testing import consume_all, kafka_fixture  # noqa: F401 - the `kafka` fixture

N = 2_000


def _sink(kafka, topic, guarantee, value_schema=None, **props):
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(value_schema or SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(guarantee)
    )
    if guarantee is DeliveryGuarantee.EXACTLY_ONCE:
        builder = builder.set_transactional_id_prefix(f"{topic}-tx")
    for k, v in props.items():
        builder = builder.set_property(k, v)
    return builder.build()


@pytest.mark.parametrize("guarantee", [DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.EXACTLY_ONCE])
def test_bounded_job_writes_every_record_once(kafka, guarantee):
    topic = kafka.new_topic(3)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    values = [f"v{i}" for i in range(N)]
    env.from_collection(values, type_info=Types.STRING()).sink_to(_sink(kafka, topic, guarantee))
    env.execute("kafka sink")
    got = [m.value().decode() for m in consume_all(kafka.bootstrap, topic, 3, expect=N)]
    assert Counter(got) == Counter(values)


def test_json_rows_with_a_topic_selector(kafka):
    even, odd = kafka.new_topic(1), kafka.new_topic(1)
    row = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    schema = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(lambda r: even if r[0] % 2 == 0 else odd)
        .set_value_serialization_schema(JsonRowSerializationSchema.builder().with_type_info(row).build())
        .build()
    )
    sink = KafkaSink.builder().set_bootstrap_servers(kafka.bootstrap).set_record_serializer(schema).build()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([(i, f"n{i}") for i in range(10)], type_info=row).sink_to(sink)
    env.execute("json rows")
    got_even = [json.loads(m.value()) for m in consume_all(kafka.bootstrap, even, 1, expect=5)]
    got_odd = [json.loads(m.value()) for m in consume_all(kafka.bootstrap, odd, 1, expect=5)]
    assert got_even == [{"id": i, "name": f"n{i}"} for i in range(0, 10, 2)]
    assert got_odd == [{"id": i, "name": f"n{i}"} for i in range(1, 10, 2)]


class _Clock:
    def now(self) -> int:
        return 0

    def register_timer(self, timestamp, callback) -> None:
        pass


class _Ctx:
    def timestamp(self):
        return None

    def current_watermark(self):
        return 0


def test_restored_committables_are_published_once(kafka):
    """The recovery path: a committable whose transaction committed is not published again by a
    restored job (its marker shows it), one whose commit never happened is published by the restore."""
    topic = kafka.new_topic(1)
    sink = _sink(kafka, topic, DeliveryGuarantee.EXACTLY_ONCE)
    writer = sink.create_writer(SinkInitContext(0, 1, 0, _Clock(), checkpointing=True))
    for i in range(5):
        writer.write(f"a{i}", _Ctx())
    first = writer.prepare_commit()
    committer = sink.create_committer()
    committer.commit(first)
    restored = sink.create_committer()
    restored.commit(first)  # a restored job commits its checkpoint's committables again
    # a transaction pre-committed, never committed (the process died): the restore publishes its records
    for i in range(3):
        writer.write(f"b{i}", _Ctx())
    second = writer.prepare_commit()
    writer.close()  # the live producer is forgotten, as in a dead process
    restored.commit(second)
    restored.commit(second)
    got = [m.value().decode() for m in consume_all(kafka.bootstrap, topic, 1)]
    if kafka.is_mock:
        # the mock shows the never-committed transaction's records too (it does not filter them)
        got = [v for v in got if v.startswith("a")] + sorted(set(v for v in got if v.startswith("b")))
    assert Counter(got) == Counter([f"a{i}" for i in range(5)] + [f"b{i}" for i in range(3)])


def test_transaction_timeout_shorter_than_checkpoint_interval_is_refused(kafka):
    topic = kafka.new_topic(1)
    sink = _sink(kafka, topic, DeliveryGuarantee.EXACTLY_ONCE, **{"transaction.timeout.ms": "1000"})
    config = Configuration({"execution.checkpointing.interval": "5 s"})
    with pytest.raises(ValueError, match=r"transaction.timeout.ms \(1000\).*execution.checkpointing.interval"):
        sink.create_writer(SinkInitContext(0, 1, 0, _Clock(), config=config, checkpointing=True))


def test_missing_topic_fails_naming_it(kafka):
    sink = _sink(kafka, "no-such-topic-abc", DeliveryGuarantee.AT_LEAST_ONCE)
    if kafka.is_mock:
        pytest.skip("librdkafka's mock cluster creates a topic a producer writes to")
    writer = sink.create_writer(SinkInitContext(0, 1, 0, _Clock()))
    try:
        writer.write("x", _Ctx())
        with pytest.raises(RuntimeError, match="no-such-topic-abc"):
            writer.prepare_commit()
    finally:
        writer.close()


def test_builder_refuses_incomplete_settings():
    schema = KafkaRecordSerializationSchema.builder().set_topic("t").set_value_serialization_schema(
        SimpleStringSchema()
    )
    with pytest.raises(ValueError, match="bootstrap servers are not set"):
        KafkaSink.builder().set_record_serializer(schema.build()).build()
    with pytest.raises(ValueError, match="set_transactional_id_prefix"):
        (
            KafkaSink.builder()
            .set_bootstrap_servers("h:1")
            .set_record_serializer(schema.build())
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .build()
        )
    with pytest.raises(ValueError, match="set_topic"):
        KafkaRecordSerializationSchema.builder().set_value_serialization_schema(SimpleStringSchema()).build()
    with pytest.raises(TypeError, match="DeliveryGuarantee"):
        KafkaSink.builder().set_delivery_guarantee("exactly-once")


assert kafka_sink  # the module under test, for readers of this file


def test_unreachable_brokers_fail_the_writer_naming_the_address():
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers("127.0.0.1:1")
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic("t")
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )
    writer = sink.create_writer(SinkInitContext(0, 1, 0, _Clock()))
    deadline = time.monotonic() + 20
    try:
        with pytest.raises(RuntimeError, match=r"Kafka brokers at 127\.0\.0\.1:1 did not answer.*bootstrap.servers"):
            while time.monotonic() < deadline:  # librdkafka reports all brokers down once its connection is refused
                writer.write("x", _Ctx())  # serves the producer's callbacks
    finally:
        writer.close()
