"""Kafka source and sink (`pyflink.datastream.connectors.kafka`); needs the `kafka` extra at run time."""

from abc import ABC, abstractmethod
from typing import Any

from strom.common.refused_names import refused_name
from strom.connectors.kafka.offsets import KafkaOffsetResetStrategy, KafkaOffsetsInitializer, KafkaTopicPartition
from strom.connectors.kafka.sink import (
    DeliveryGuarantee,
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaSink,
    KafkaSinkBuilder,
)
from strom.connectors.kafka.source import KafkaRecordDeserializationSchema, KafkaSource, KafkaSourceBuilder

FlinkKafkaConsumer = refused_name(
    "FlinkKafkaConsumer", "it is Flink's legacy SourceFunction consumer, removed in Flink 2", "use KafkaSource"
)
FlinkKafkaProducer = refused_name(
    "FlinkKafkaProducer", "it is Flink's legacy SinkFunction producer, removed in Flink 2", "use KafkaSink"
)
Semantic = refused_name(
    "Semantic", "it is FlinkKafkaProducer's guarantee, and Strom has no FlinkKafkaProducer",
    "give KafkaSink.builder().set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE) instead",
)


class KafkaTopicSelector(ABC):
    """Chooses the topic of a record (`KafkaRecordSerializationSchema.builder().set_topic_selector(...)`)."""

    @abstractmethod
    def apply(self, value: Any) -> str: ...


__all__ = [
    "DeliveryGuarantee",
    "FlinkKafkaConsumer",
    "FlinkKafkaProducer",
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
    "KafkaTopicSelector",
    "Semantic",
]
