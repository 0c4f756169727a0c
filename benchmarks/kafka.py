"""Kafka source and sink throughput on librdkafka's mock cluster, next to bare confluent-kafka loops.

    python -m benchmarks.kafka [--records 200000] [--size 100] [--partitions 3]

In one run, against one mock cluster process (3 brokers, loopback): a bare Producer loop
(produce + flush), a bare Consumer loop (assign from offset 0, consume in batches of 1,000), then
Strom jobs at parallelism 1 in the embedded executor: a bounded KafkaSource into a discarding
sink, and a collection into a KafkaSink (AT_LEAST_ONCE; EXACTLY_ONCE with checkpoints every
second). A job's time includes its start (about a second, printed as the time of a 1-record job).
The mock keeps a bounded log per partition (about 47,000 records of 100 bytes here; older segments are
dropped), so the read figures count the records the topic still holds. Prints the figures (no assertions).
"""

from __future__ import annotations

import argparse
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from strom.common import Types, WatermarkStrategy
from strom.common.serialization import SimpleStringSchema
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

from tests.connectors.kafka_testing import start_cluster


def bare_produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    start = time.perf_counter()
    for i, v in enumerate(values):
        while True:
            try:
                producer.produce(topic, v, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(60)
    return time.perf_counter() - start


def available(bootstrap: str, topic: str, partitions: int) -> int:
    """Records the topic holds now (the mock cluster keeps a bounded log per partition)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "log_level": 3})
    marks = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(partitions)]
    consumer.close()
    return sum(high - low for low, high in marks)


def bare_consume(bootstrap: str, topic: str, count: int, partitions: int) -> float:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "log_level": 3, "auto.offset.reset": "earliest"}
    )
    start = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])  # -2: the beginning
    got = 0
    while got < count:
        got += sum(1 for m in consumer.consume(1000, 0.05) if m.error() is None)
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def strom_source(bootstrap: str, topic: str) -> float:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").add_sink(lambda v: None)
    start = time.perf_counter()
    env.execute("kafka source benchmark")
    return time.perf_counter() - start


def strom_sink(bootstrap: str, topic: str, values: list[str], guarantee: DeliveryGuarantee) -> float:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(guarantee)
        .set_property("linger.ms", "5")
    )
    if guarantee is DeliveryGuarantee.EXACTLY_ONCE:
        env.enable_checkpointing(1000)
        builder = builder.set_transactional_id_prefix(f"{topic}-bench")
    env.from_collection(values, type_info=Types.STRING()).sink_to(builder.build())
    start = time.perf_counter()
    env.execute("kafka sink benchmark")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args()
    n, parts = args.records, args.partitions
    values = [(f"{i:0{args.size}d}")[-args.size :] for i in range(n)]
    cluster = start_cluster()
    try:
        rows: list[tuple[str, float, int]] = []
        topic = cluster.new_topic(parts, "bench-in")
        rows.append(
            ("bare Producer loop", bare_produce(cluster.bootstrap, topic, [v.encode() for v in values], parts), n)
        )
        held = available(cluster.bootstrap, topic, parts)
        rows.append(("bare Consumer loop", bare_consume(cluster.bootstrap, topic, held, parts), held))
        tiny = cluster.new_topic(1, "bench-tiny")
        bare_produce(cluster.bootstrap, tiny, [b"x"], 1)
        rows.append(("KafkaSource job, 1 record (start cost)", strom_source(cluster.bootstrap, tiny), 1))
        rows.append(("KafkaSource job (bounded, p=1)", strom_source(cluster.bootstrap, topic), held))
        rows.append(("bare Consumer loop, again", bare_consume(cluster.bootstrap, topic, held, parts), held))
        for guarantee in (DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.EXACTLY_ONCE):
            out = cluster.new_topic(parts, "bench-out")
            rows.append(
                (f"KafkaSink job {guarantee.name} (p=1)", strom_sink(cluster.bootstrap, out, values, guarantee), n)
            )
        print(f"{n} records of {args.size} bytes, {parts} partitions, librdkafka mock cluster (3 brokers)")
        for name, secs, count in rows:
            print(f"  {name:44s} {secs:7.2f} s  {count / secs:12,.0f} records/s")
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
