"""Kafka source and sink (`pyflink.datastream.connectors.kafka`); needs the `kafka` extra at run time."""

from strom.connectors.kafka.offsets import KafkaOffsetResetStrategy, KafkaOffsetsInitializer, KafkaTopicPartition
from strom.connectors.kafka.sink import (
    DeliveryGuarantee,
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaSink,
    KafkaSinkBuilder,
)
from strom.connectors.kafka.source import KafkaRecordDeserializationSchema, KafkaSource, KafkaSourceBuilder

__all__ = [
    "DeliveryGuarantee",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecordDeserializationSchema",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
]
