"""Kafka connector metrics under Flink's names, read from a real session cluster's REST API and its
TaskManager's Prometheus endpoint, compared with what a plain confluent-kafka client sees.

A job reads a two-partition topic (KafkaSource, group id, checkpoints every 300 ms, so offsets are
committed to the group) and writes every record to a second topic (KafkaSink, at-least-once). The
references: the records the test produced (counts, bytes, timestamps 60 s in the past), the group's
committed offsets and each partition's high watermark read by an independent consumer, and the
output topic's contents read back.
"""

from __future__ import annotations

import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families
from strom.connectors.kafka.metrics import INITIAL_OFFSET, KafkaSourceReaderMetrics, KafkaWriterMetrics
from strom.runtime.metrics import MetricGroup

from tests.connectors.kafka_testing import consume_all, kafka_fixture  # noqa: F401 - the `kafka` fixture
from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

PER_PARTITION = (37, 23)  # records in partitions 0 and 1
LAG_MS = 60_000  # records carry timestamps this far in the past
SOURCE = "Source: kafka-in"  # the source operator's name, as Flink names it ("Source: " + the given name)


def _produce(bootstrap: str, topic: str) -> tuple[list[bytes], int]:
    """The values produced (all partitions) and the timestamp (ms) they carry."""
    stamp = int(time.time() * 1000) - LAG_MS
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    values = []
    for p, n in enumerate(PER_PARTITION):
        for i in range(n):
            v = f"p{p}-record-{i:03d}".encode()
            values.append(v)
            producer.produce(topic, v, partition=p, timestamp=stamp)
    assert producer.flush(30) == 0
    return values, stamp


def _job(tmp_path: Path, bootstrap: str, source_topic: str, sink_topic: str, group: str) -> str:
    job = tmp_path / "kafka_metrics_job.py"
    job.write_text(textwrap.dedent(f"""
        from strom.common import Configuration, WatermarkStrategy
        from strom.common.serialization import SimpleStringSchema
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors.kafka import (
            DeliveryGuarantee, KafkaOffsetsInitializer, KafkaRecordSerializationSchema, KafkaSink, KafkaSource)

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.configure(Configuration({{"execution.checkpointing.interval": "300 ms",
                                      "state.checkpoints.dir": "file://{tmp_path / 'chk'}"}}))
        source = (KafkaSource.builder().set_bootstrap_servers({bootstrap!r}).set_topics({source_topic!r})
                  .set_group_id({group!r}).set_starting_offsets(KafkaOffsetsInitializer.earliest())
                  .set_value_only_deserializer(SimpleStringSchema()).build())
        sink = (KafkaSink.builder().set_bootstrap_servers({bootstrap!r})
                .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic({sink_topic!r})
                                       .set_value_serialization_schema(SimpleStringSchema()).build())
                .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE).build())
        env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka-in").sink_to(sink).name("kafka-out")
        env.execute("kafka metrics")
    """))
    return str(job)


def _independent_view(bootstrap: str, topic: str, group: str) -> tuple[dict[int, int], dict[int, int]]:
    """(committed offset, high watermark) per partition, as a plain consumer of the group sees them."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "log_level": 3})
    try:
        tps = [TopicPartition(topic, p) for p in range(len(PER_PARTITION))]
        committed = {tp.partition: tp.offset for tp in c.committed(tps, timeout=10)}
        highs = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(len(PER_PARTITION))}
        return committed, highs
    finally:
        c.close()


def _scrape(port: int) -> dict[str, list[Any]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {fam.name: fam.samples for fam in text_string_to_metric_families(text)}


def _prom_offsets(families: dict[str, list[Any]], topic: str) -> dict[int, tuple[float, float]]:
    """partition -> (currentOffset, committedOffset) of the source operator, from Prometheus samples."""
    prefix = "flink_taskmanager_job_task_operator_KafkaSourceReader_topic_partition_"
    found: dict[int, dict[str, float]] = {}
    for metric in ("currentOffset", "committedOffset"):
        for s in families.get(prefix + metric, []):
            if s.labels.get("topic") == topic and s.labels.get("operator_name") == SOURCE:
                found.setdefault(int(s.labels["partition"]), {})[metric] = s.value
    return {p: (v.get("currentOffset", -2), v.get("committedOffset", -2)) for p, v in found.items()}


def test_source_and_sink_metrics_in_rest_and_prometheus_match_an_independent_consumer(kafka, tmp_path):
    source_topic, sink_topic = kafka.new_topic(len(PER_PARTITION), "in"), kafka.new_topic(1, "out")
    group = f"metrics-{source_topic}"
    values, stamp = _produce(kafka.bootstrap, source_topic)
    started_ms = int(time.time() * 1000)
    cluster = SessionCluster(taskmanagers=1, slots=1)
    try:
        job_id = submit(cluster, _job(tmp_path, kafka.bootstrap, source_topic, sink_topic, group))
        cluster.wait_for_state(job_id, ("RUNNING",))
        (vertex,) = cluster.get(f"/jobs/{job_id}")["vertices"]  # source and sink chained: one task
        path = f"/jobs/{job_id}/vertices/{vertex['id']}/subtasks/metrics"
        offsets = [f"{SOURCE}.KafkaSourceReader.topic.{source_topic}.partition.{p}" for p in range(2)]
        wanted = {f"{o}.{m}" for o in offsets for m in ("currentOffset", "committedOffset")} | {
            f"{SOURCE}.numRecordsIn", f"{SOURCE}.numBytesIn", f"{SOURCE}.pendingRecords",
            f"{SOURCE}.currentFetchEventTimeLag", f"{SOURCE}.currentEmitEventTimeLag",
            "kafka-out.numRecordsSend", "kafka-out.numBytesSend", "kafka-out.numRecordsSendErrors",
        }

        def caught_up() -> dict[str, float] | None:
            got = {e["id"]: e["max"] for e in cluster.get(f"{path}?get={quote(','.join(sorted(wanted)))}&agg=max")}
            done = all(got.get(f"{offsets[p]}.committedOffset") == n for p, n in enumerate(PER_PARTITION))
            return got if done and got.get("kafka-out.numRecordsSend") == len(values) else None

        rest = wait_until(caught_up, timeout=90, what="committed offsets and sent records in the REST metrics")
        assert set(rest) == wanted
        committed, highs = _independent_view(kafka.bootstrap, source_topic, group)
        # slot workers report to their TaskManager periodically: wait for a scrape that has the final offsets
        def final_scrape() -> dict[str, list[Any]] | None:
            families = _scrape(cluster.tm_metrics_ports[0])
            final = {p: (highs[p] - 1, committed[p]) for p in range(2)}
            return families if _prom_offsets(families, source_topic) == final else None

        prom = wait_until(final_scrape, what="the final partition offsets on the TaskManager's Prometheus endpoint")
        cluster.cli("cancel", job_id)
    finally:
        cluster.close()
    finished_ms = int(time.time() * 1000)

    assert committed == highs == {p: n for p, n in enumerate(PER_PARTITION)}
    for p in range(2):
        assert rest[f"{offsets[p]}.committedOffset"] == committed[p]
        assert rest[f"{offsets[p]}.currentOffset"] == highs[p] - 1  # the last record read
    assert rest[f"{SOURCE}.numRecordsIn"] == len(values)
    assert rest[f"{SOURCE}.numBytesIn"] == sum(len(v) for v in values)
    assert rest[f"{SOURCE}.pendingRecords"] == 0
    for lag in ("currentFetchEventTimeLag", "currentEmitEventTimeLag"):
        assert started_ms - stamp <= rest[f"{SOURCE}.{lag}"] <= finished_ms - stamp
    out = [m.value() for m in consume_all(kafka.bootstrap, sink_topic, 1)]
    assert sorted(out) == sorted(values)
    assert rest["kafka-out.numBytesSend"] == sum(len(v) for v in out)
    assert rest["kafka-out.numRecordsSendErrors"] == 0

    assert _prom_offsets(prom, source_topic) == {p: (highs[p] - 1, committed[p]) for p in range(2)}


class _FakeTopicPartition:
    def __init__(self, topic: str, partition: int, offset: int, error: Any = None) -> None:
        self.topic, self.partition, self.offset, self.error = topic, partition, offset, error


def _values(group: MetricGroup) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(g: MetricGroup, prefix: str) -> None:
        for name, m in g.registered_metrics():
            out[prefix + name] = m.get_value() if hasattr(m, "get_value") else m.get_count()
        for child in g.child_groups():
            walk(child, prefix + child.name + "." + (child.value + "." if child.value is not None else ""))

    walk(group, "")
    return out


def test_a_refused_commit_counts_as_failed_and_keeps_the_last_acknowledged_offset():
    group = MetricGroup()
    metrics = KafkaSourceReaderMetrics(group, pending_records=lambda: None)
    metrics.register_partition("t", 0, lambda: INITIAL_OFFSET)
    assert _values(group)["KafkaSourceReader.topic.t.partition.0.committedOffset"] == INITIAL_OFFSET
    metrics.record_commit(None, [_FakeTopicPartition("t", 0, 5)])
    metrics.record_commit(None, [_FakeTopicPartition("t", 0, 9, error="REBALANCE_IN_PROGRESS")])
    metrics.record_commit("broker down", [_FakeTopicPartition("t", 0, 12)])
    got = _values(group)
    assert got["KafkaSourceReader.topic.t.partition.0.committedOffset"] == 5
    assert (got["KafkaSourceReader.commitsSucceeded"], got["KafkaSourceReader.commitsFailed"]) == (1, 2)
    assert got["pendingRecords"] == -1  # unknown backlog, as Flink's undefined gauges


def test_failed_deliveries_count_as_send_errors_not_as_sent_bytes():
    group = MetricGroup()
    metrics = KafkaWriterMetrics(group)
    metrics.record_sent(1, 10)
    metrics.record_sent(1, 7)
    metrics.record_error()
    got = _values(group)
    assert (got["numRecordsSend"], got["numBytesSend"], got["numRecordsSendErrors"]) == (2, 17, 1)
    assert (got["numRecordsOut"], got["numBytesOut"]) == (2, 17)
