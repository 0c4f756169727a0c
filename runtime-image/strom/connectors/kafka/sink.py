"""`KafkaSink` (PyFlink's names) with `DeliveryGuarantee` NONE, AT_LEAST_ONCE and EXACTLY_ONCE.

NONE produces and never waits. AT_LEAST_ONCE flushes the producer before every checkpoint barrier
(and at the end of input), so every record before a completed checkpoint is acknowledged by the
brokers; a restore replays what came after, which may repeat records.

EXACTLY_ONCE writes through Kafka transactions as a two-phase commit (the sink-writer operator is
Flink's committer, `sink_base.TwoPhaseCommittingSink`): records go into a transaction of the
producer `<prefix>-<subtask>-<k>`; before a barrier the transaction is flushed (pre-commit) and
handed over as a committable; when the checkpoint completes it is committed, and the producer is
free for a later transaction. Between pre-commit and commit the next records go into another
producer of the pool (k grows only while more than one checkpoint awaits its commit).

Recovery, and what librdkafka allows: Flink resumes a pre-committed transaction after a restart
(it sets the producer id and epoch by reflection); librdkafka cannot. `init_transactions` with the
same transactional id fences the old producer and aborts its open transaction, so a restored job
cannot commit the broker-side transaction its checkpoint prepared. Instead the committable also
carries the transaction's records (serialized; a checkpoint's state grows by one checkpoint
interval of output), and every transaction commits, atomically with its records, an offset
`seq` for the group `<transactional id>` on partition 0 of its first topic (a marker,
`send_offsets_to_transaction`). A restored subtask fences the ids of its prefix (aborting lingering
transactions), reads the marker, and re-produces and commits a committable's records only when
the marker shows its transaction did not commit. Exactly-once thus holds for `read_committed`
consumers on a Kafka that keeps transactional offset commits (Apache Kafka does; librdkafka's mock
cluster neither stores them nor filters aborted records, so on the mock this path is not
exactly-once — the tests that prove it need a real cluster). Abandoned ids of subtasks removed by
a scale-down are fenced by the committer of the committables they left; an id that left none times
out after `transaction.timeout.ms` (Kafka's default 15 min; Flink's sink sets 1 h).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from strom.connectors.kafka.client import client_config, require_confluent_kafka, unreachable
from strom.connectors.kafka.metrics import KafkaWriterMetrics
from strom.connectors.sink_base import Committer, PrecommittingSinkWriter, SinkInitContext, TwoPhaseCommittingSink

_FENCE_IDS = 3  # producer ids per subtask fenced (lingering transactions aborted) when a writer starts
_TIMEOUT_S = 30.0


class DeliveryGuarantee(Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


class KafkaRecordSerializationSchema:
    """Turns a record into (topic, key, value, partition) (Flink's KafkaRecordSerializationSchema)."""

    def __init__(self, topic: str | None, topic_selector: Any, key_schema: Any, value_schema: Any) -> None:
        self.topic = topic
        self.topic_selector = topic_selector
        self.key_schema = key_schema
        self.value_schema = value_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def serialize(self, element: Any) -> tuple[str, bytes | None, bytes | None, int | None]:
        topic = self.topic if self.topic_selector is None else self.topic_selector(element)
        key = self.key_schema.serialize(element) if self.key_schema is not None else None
        value = self.value_schema.serialize(element) if element is not None else None
        return topic, key, value, None


class KafkaRecordSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._topic: str | None = None
        self._selector: Any = None
        self._key: Any = None
        self._value: Any = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        self._topic, self._selector = topic, None
        return self

    def set_topic_selector(self, topic_selector: Any) -> KafkaRecordSerializationSchemaBuilder:
        select = getattr(topic_selector, "apply", topic_selector)  # PyFlink's KafkaTopicSelector or a callable
        if not callable(select):
            raise TypeError(f"set_topic_selector expects a callable or KafkaTopicSelector, got {topic_selector!r}")
        self._selector, self._topic = select, None
        return self

    def set_key_serialization_schema(self, key_serialization_schema: Any) -> KafkaRecordSerializationSchemaBuilder:
        self._key = key_serialization_schema
        return self

    def set_value_serialization_schema(self, value_serialization_schema: Any) -> KafkaRecordSerializationSchemaBuilder:
        self._value = value_serialization_schema
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        if self._topic is None and self._selector is None:
            raise ValueError("KafkaRecordSerializationSchema: call set_topic(...) or set_topic_selector(...)")
        if self._value is None:
            raise ValueError("KafkaRecordSerializationSchema: call set_value_serialization_schema(...)")
        return KafkaRecordSerializationSchema(self._topic, self._selector, self._key, self._value)


Record = tuple[str, bytes | None, bytes | None, int | None, int | None]  # topic, key, value, partition, timestamp


@dataclass
class KafkaCommittable:
    """A pre-committed transaction: its producer's id, a sequence number (its marker) and its records."""

    transactional_id: str
    seq: int
    records: list[Record] = field(default_factory=list)


# transactional id -> the live producer whose pre-committed transaction it is, in this process
_LIVE: dict[str, tuple[Any, KafkaWriter]] = {}
_LIVE_LOCK = threading.Lock()


def _marker_tp(kafka: Any, records: list[Record], seq: int | None = None) -> Any:
    tp = kafka.TopicPartition(records[0][0], 0)
    if seq is not None:
        tp.offset = seq
    return tp


class KafkaWriter(PrecommittingSinkWriter):
    def __init__(self, sink: KafkaSink, context: SinkInitContext) -> None:
        self._kafka = kafka = require_confluent_kafka()
        self._sink = sink
        self._subtask = context.subtask_index
        self._exactly_once = sink.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE and context.checkpointing
        self._error: BaseException | None = None
        self.metrics = KafkaWriterMetrics(context.metric_group)
        if self._exactly_once:
            sink.check_transaction_timeout(context.config)
            self._free: list[tuple[str, Any]] = []  # (transactional id, producer) without a transaction
            self._next_k = 0
            for _ in range(_FENCE_IDS):  # fences older producers of these ids: their open transactions abort
                self._free.append(self._new_transactional_producer())
            self._producer: Any = None
            self._txn_id = ""
            self._records: list[Record] = []
            self._groups = GroupConsumers(sink)
        else:
            try:
                self._producer = kafka.Producer(self._config())
            except kafka.KafkaException as exc:
                raise RuntimeError(f"Kafka sink: invalid producer properties ({exc}); check set_property") from None

    def _config(self) -> dict[str, Any]:
        conf = client_config(self._sink.properties, self._sink.bootstrap_servers)
        conf["error_cb"] = self._on_error
        return conf

    def _on_error(self, err: Any) -> None:
        if err.fatal() or err.code() == self._kafka.KafkaError._ALL_BROKERS_DOWN:
            self._error = unreachable(self._sink.bootstrap_servers, self._kafka.KafkaException(err))

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.metrics.record_error()
        if err is not None and self._error is None:
            if err.code() in (self._kafka.KafkaError.UNKNOWN_TOPIC_OR_PART, self._kafka.KafkaError._UNKNOWN_TOPIC):
                self._error = RuntimeError(
                    f"Kafka topic {_msg.topic()!r} does not exist at {self._sink.bootstrap_servers}; create it "
                    "or let the brokers create topics (auto.create.topics.enable)"
                )
            else:
                self._error = RuntimeError(f"Kafka sink: a record was not delivered to {_msg.topic()!r}: {err.str()}")

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _new_transactional_producer(self) -> tuple[str, Any]:
        kafka = self._kafka
        conf = self._config()
        conf["transactional.id"] = f"{self._sink.transactional_id_prefix}-{self._subtask}-{self._next_k}"
        self._next_k += 1
        producer = kafka.Producer(conf)
        try:
            producer.init_transactions(_TIMEOUT_S)
        except kafka.KafkaException as exc:
            raise unreachable(self._sink.bootstrap_servers, exc) from None
        return conf["transactional.id"], producer

    # -- writing -----------------------------------------------------------------------------------
    def write(self, value: Any, context: Any) -> None:
        self._raise_error()
        topic, key, data, partition = self._sink.serializer.serialize(value)
        ts = context.timestamp()
        if self._exactly_once and self._producer is None:
            self._txn_id, self._producer = self._free.pop() if self._free else self._new_transactional_producer()
            self._producer.begin_transaction()
            self._records = []
        kwargs: dict[str, Any] = {"on_delivery": self._on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if ts is not None:
            kwargs["timestamp"] = ts
        while True:
            try:
                self._producer.produce(topic, data, key, **kwargs)
                break
            except BufferError:
                self._producer.poll(0.05)  # the local queue is full: wait for deliveries (back pressure)
        self.metrics.record_sent(1, (len(key) if key else 0) + (len(data) if data else 0))
        if self._exactly_once:
            self._records.append((topic, key, data, partition, ts))
        self._producer.poll(0)

    def _flush(self) -> None:
        producer = self._producer
        if producer is None:
            return
        deadline = time.monotonic() + _TIMEOUT_S
        while producer.flush(1.0) > 0:
            self._raise_error()
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"Kafka sink: unacknowledged after {_TIMEOUT_S:.0f} s by {self._sink.bootstrap_servers}; "
                    "check bootstrap.servers and the brokers"
                )
        self._raise_error()

    def flush(self, end_of_input: bool) -> None:
        if self._sink.delivery_guarantee is not DeliveryGuarantee.NONE or end_of_input:
            self._flush()

    def prepare_commit(self) -> list[Any]:
        if not self._exactly_once:
            if self._sink.delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE:
                self._flush()  # every record before the barrier is acknowledged
            return []
        producer = self._producer
        if producer is None:
            return []
        seq = time.time_ns() // 1000
        kafka = self._kafka
        try:
            producer.send_offsets_to_transaction(
                [_marker_tp(kafka, self._records, seq)], self._groups.metadata(self._txn_id), _TIMEOUT_S
            )
        except kafka.KafkaException as exc:
            raise unreachable(self._sink.bootstrap_servers, exc) from None
        self._flush()
        committable = KafkaCommittable(self._txn_id, seq, self._records)
        with _LIVE_LOCK:
            _LIVE[self._txn_id] = (producer, self)
        self._producer, self._records = None, []
        return [committable]

    def release(self, transactional_id: str, producer: Any) -> None:
        """A committed transaction's producer is free again."""
        self._free.append((transactional_id, producer))

    def close(self) -> None:
        # a failed task's open transaction is not aborted here: the restored subtask fences its id
        with _LIVE_LOCK:
            for tid in [t for t, (_p, w) in _LIVE.items() if w is self]:
                del _LIVE[tid]
        if not self._exactly_once and self._producer is not None:
            self._producer.flush(0 if self._error is not None else 5)
        if self._exactly_once:
            self._groups.close()
            self._free.clear()
        # A producer has no close(): librdkafka destroys it with its last reference. Its error_cb (a method of
        # this writer) makes a cycle with it, so it is dropped here rather than left to a garbage collection
        # that may never run: until then its threads keep (re)connecting to the brokers.
        self._producer = None


class GroupConsumers:
    """The consumers of the marker groups (one per transactional id, never subscribed) that one writer or
    committer uses, closed with it: a consumer left open keeps its librdkafka threads and connections alive
    for the rest of the process (a TaskManager's slot process, or the embedded executor's)."""

    def __init__(self, sink: KafkaSink) -> None:
        self._sink = sink
        self._by_group: dict[str, Any] = {}

    def get(self, group: str) -> Any:
        consumer = self._by_group.get(group)
        if consumer is None:
            kafka = require_confluent_kafka()
            conf = client_config(self._sink.properties, self._sink.bootstrap_servers)
            conf.update({"group.id": group, "enable.auto.commit": False})
            consumer = self._by_group[group] = kafka.Consumer(conf)
        return consumer

    def metadata(self, group: str) -> Any:
        """The consumer group metadata that send_offsets_to_transaction needs."""
        return self.get(group).consumer_group_metadata()

    def close(self) -> None:
        consumers, self._by_group = list(self._by_group.values()), {}
        for consumer in consumers:
            consumer.close()


class KafkaCommitter(Committer):
    def __init__(self, sink: KafkaSink) -> None:
        self._sink = sink
        self._groups = GroupConsumers(sink)

    def close(self) -> None:
        self._groups.close()

    def commit(self, committables: list[Any]) -> None:
        kafka = require_confluent_kafka()
        for c in committables:
            with _LIVE_LOCK:
                live = _LIVE.pop(c.transactional_id, None)
            if live is not None:
                producer, writer = live
                try:
                    producer.commit_transaction(_TIMEOUT_S)
                except kafka.KafkaException as exc:
                    raise unreachable(self._sink.bootstrap_servers, exc) from None
                self._store_marker(kafka, c)
                writer.release(c.transactional_id, producer)
            else:
                self._recover(kafka, c)

    def _recover(self, kafka: Any, c: KafkaCommittable) -> None:
        """A committable of a restored checkpoint: fence its id (its broker-side transaction aborts
        unless its commit was already under way), then publish its records unless the marker shows
        that the transaction committed."""
        if not c.records:
            return
        conf = client_config(self._sink.properties, self._sink.bootstrap_servers)
        conf["transactional.id"] = c.transactional_id
        producer = kafka.Producer(conf)
        try:
            producer.init_transactions(_TIMEOUT_S)
            consumer = self._groups.get(c.transactional_id)
            (marker,) = consumer.committed([_marker_tp(kafka, c.records)], timeout=_TIMEOUT_S)
            if marker.offset >= c.seq:
                return  # committed before the failure
            producer.begin_transaction()
            for topic, key, value, partition, ts in c.records:
                kwargs: dict[str, Any] = {}
                if partition is not None:
                    kwargs["partition"] = partition
                if ts is not None:
                    kwargs["timestamp"] = ts
                producer.produce(topic, value, key, **kwargs)
            producer.send_offsets_to_transaction(
                [_marker_tp(kafka, c.records, c.seq)], self._groups.metadata(c.transactional_id), _TIMEOUT_S
            )
            producer.commit_transaction(_TIMEOUT_S)
            self._store_marker(kafka, c)
        except kafka.KafkaException as exc:
            raise unreachable(self._sink.bootstrap_servers, exc) from None

    def _store_marker(self, kafka: Any, c: KafkaCommittable) -> None:
        """The marker again, outside the transaction: the value Kafka already committed with it (a
        no-op there); librdkafka's mock cluster keeps only such plain offset commits."""
        if not c.records:
            return
        consumer = self._groups.get(c.transactional_id)
        try:
            consumer.commit(offsets=[_marker_tp(kafka, c.records, c.seq)], asynchronous=False)
        except kafka.KafkaException as exc:
            raise unreachable(self._sink.bootstrap_servers, exc) from None


class KafkaSink(TwoPhaseCommittingSink):
    sink_name = "KafkaSink"

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        serializer: KafkaRecordSerializationSchema,
        delivery_guarantee: DeliveryGuarantee,
        transactional_id_prefix: str | None,
        properties: dict[str, str],
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.serializer = serializer
        self.delivery_guarantee = delivery_guarantee
        self.transactional_id_prefix = transactional_id_prefix or "kafka-sink"
        self.properties = properties

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    def create_writer(self, context: SinkInitContext) -> KafkaWriter:
        return KafkaWriter(self, context)

    def create_committer(self) -> KafkaCommitter:
        return KafkaCommitter(self)

    def check_job_configuration(self, config: Any) -> str | None:
        """Why the job cannot run with this sink (checked at submission and again by every writer)."""
        if config is None or self.delivery_guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
            return None
        from strom.common import config_options as opts

        interval = config.get(opts.CHECKPOINT_INTERVAL)
        timeout = int(self.properties.get("transaction.timeout.ms", 60_000))  # librdkafka's default
        if interval and timeout < interval:
            # the transaction of one interval would abort before its checkpoint could commit it
            return (
                f"KafkaSink: transaction.timeout.ms ({timeout}) is shorter than execution.checkpointing.interval "
                f"({interval} ms); raise transaction.timeout.ms (set_property) or checkpoint more often"
            )
        return None

    def check_transaction_timeout(self, config: Any) -> None:
        problem = self.check_job_configuration(config)
        if problem:
            raise ValueError(problem)


class KafkaSinkBuilder:
    def __init__(self) -> None:
        self._bootstrap: str | None = None
        self._serializer: KafkaRecordSerializationSchema | None = None
        self._guarantee = DeliveryGuarantee.NONE
        self._prefix: str | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        self._bootstrap = bootstrap_servers
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise TypeError(f"set_delivery_guarantee expects a DeliveryGuarantee, got {delivery_guarantee!r}")
        self._guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        self._prefix = transactional_id_prefix
        return self

    def set_record_serializer(self, record_serializer: KafkaRecordSerializationSchema) -> KafkaSinkBuilder:
        self._serializer = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        self._properties[key] = str(value)
        return self

    def build(self) -> KafkaSink:
        bootstrap = self._bootstrap or self._properties.get("bootstrap.servers")
        if not bootstrap:
            raise ValueError("KafkaSink: bootstrap servers are not set; call set_bootstrap_servers('host:9092')")
        if self._serializer is None:
            raise ValueError(
                "KafkaSink: call set_record_serializer(KafkaRecordSerializationSchema.builder()...build())"
            )
        if self._guarantee is DeliveryGuarantee.EXACTLY_ONCE and not self._prefix:
            raise ValueError("KafkaSink: EXACTLY_ONCE needs set_transactional_id_prefix(...), unique per job")
        return KafkaSink(
            bootstrap_servers=bootstrap,
            serializer=self._serializer,
            delivery_guarantee=self._guarantee,
            transactional_id_prefix=self._prefix,
            properties=dict(self._properties),
        )
