"""A job's Kafka clients end with it: after a job with a KafkaSource or an exactly-once KafkaSink has
finished or been cancelled, no consumer it opened is still open in the process (the embedded executor
runs tasks in this process, as a slot process does on a TaskManager). An open consumer keeps its
librdkafka threads and connections (and reconnects to a cluster that is gone) until the process ends."""

from __future__ import annotations

from collections import Counter

from strom.common import Types, WatermarkStrategy
from strom.common.serialization import SimpleStringSchema
from strom.connectors.kafka.offsets import KafkaOffsetsInitializer
from strom.connectors.kafka.source import KafkaSource
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.kafka import DeliveryGuarantee, KafkaRecordSerializationSchema, KafkaSink

from tests.connectors.kafka_testing import (  # noqa: F401 - the `kafka` fixture
    consume_all,
    consumers,
    kafka_fixture,
    open_consumers,
    produce,
)
from tests.engine.connector_testing import RecordedJob

N = 300


def _source(kafka, topic, *, bounded: bool) -> KafkaSource:
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_topics(topic)
        .set_value_only_deserializer(SimpleStringSchema())
    )
    if bounded:
        builder = builder.set_bounded(KafkaOffsetsInitializer.latest())
    return builder.build()


def _new_open_consumers(before: list) -> list:
    return [c for c in open_consumers() if not any(c is b for b in before)]


def test_a_finished_job_leaves_no_source_consumer_open(kafka):
    topic = kafka.new_topic(2)
    produce(kafka.bootstrap, topic, [(i % 2, None, f"v{i}".encode()) for i in range(N)])
    before = open_consumers()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    stream = env.from_source(_source(kafka, topic, bounded=True), WatermarkStrategy.no_watermarks(), "kafka")
    with stream.execute_and_collect() as results:
        got = list(results)
    assert Counter(got) == Counter(f"v{i}" for i in range(N))
    assert _new_open_consumers(before) == []


def test_a_cancelled_job_leaves_no_source_consumer_open(kafka):
    topic = kafka.new_topic(2)
    produce(kafka.bootstrap, topic, [(i % 2, None, f"v{i}".encode()) for i in range(N)])
    before = open_consumers()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    job = RecordedJob(env.from_source(_source(kafka, topic, bounded=False), WatermarkStrategy.no_watermarks(), "k"))
    try:
        job.wait_for(N, timeout=30)  # both readers run: their consumers exist now (not probed: in use)
        assert len([c for c in consumers() if not any(c is b for b in before)]) == 2
    finally:
        job.cancel()
    assert _new_open_consumers(before) == []


def test_an_exactly_once_sink_closes_its_marker_group_consumers(kafka):
    """The transaction markers are committed through a consumer of the transactional id's group, in the
    writer (send_offsets_to_transaction) and the committer: both close them with the operator."""
    topic = kafka.new_topic(1)
    before = open_consumers()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka.bootstrap)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder().set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema()).build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(f"{topic}-tx")
        .build()
    )
    env.from_collection([f"v{i}" for i in range(N)], type_info=Types.STRING()).sink_to(sink)
    env.execute("exactly-once kafka sink")
    assert _new_open_consumers(before) == []
    got = [m.value().decode() for m in consume_all(kafka.bootstrap, topic, 1, expect=N)]
    assert Counter(got) == Counter(f"v{i}" for i in range(N))
