"""Raw bytes through Kafka (Flink's `raw` format in the DataStream API): ByteArraySchema on both sides
passes message values through unchanged, including bytes that are not text; anything that is not
bytes is refused naming it. The reference is the list of values the test produced itself."""

from __future__ import annotations

import pytest
from strom.common import WatermarkStrategy
from strom.common.serialization import ByteArraySchema
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

from tests.connectors.kafka_testing import consume_all, kafka_fixture, produce  # noqa: F401 - the `kafka` fixture

# not UTF-8 (a lone 0xff, every byte value), an empty value, and text: all must arrive unchanged
VALUES = [b"\xff\x00\xfe", bytes(range(256)), b"", "plain text é".encode()] + [bytes([i]) * i for i in range(1, 40)]


def test_byte_array_schema_forwards_any_bytes_unchanged(kafka):
    source_topic, sink_topic = kafka.new_topic(1, "raw-in"), kafka.new_topic(1, "raw-out")
    produce(kafka.bootstrap, source_topic, [(0, None, v) for v in VALUES])
    source = (KafkaSource.builder().set_bootstrap_servers(kafka.bootstrap).set_topics(source_topic)
              .set_starting_offsets(KafkaOffsetsInitializer.earliest())
              .set_bounded(KafkaOffsetsInitializer.latest())
              .set_value_only_deserializer(ByteArraySchema()).build())
    sink = (KafkaSink.builder().set_bootstrap_servers(kafka.bootstrap)
            .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic(sink_topic)
                                   .set_value_serialization_schema(ByteArraySchema()).build()).build())
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_source(source, WatermarkStrategy.no_watermarks(), "raw").sink_to(sink)
    env.execute("raw bytes")
    got = [m.value() or b"" for m in consume_all(kafka.bootstrap, sink_topic, 1, expect=len(VALUES))]
    assert got == VALUES  # one partition in, one out, parallelism 1: the order is kept too


@pytest.mark.parametrize("record", ["text", 5, None])
def test_byte_array_schema_refuses_records_that_are_not_bytes(record):
    with pytest.raises(TypeError, match=f"ByteArraySchema.serialize expects bytes, got {type(record).__name__}"):
        ByteArraySchema().serialize(record)
