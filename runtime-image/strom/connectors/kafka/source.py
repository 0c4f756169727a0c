"""`KafkaSource` (PyFlink's names): Kafka partitions read as splits of the source framework.

Each subtask owns the partitions `splits.owner` gives it; the first poll lists the topics (or the
topics matching the pattern, or the fixed partitions `set_partitions` named, each checked to exist)
and creates a split per owned partition at the offset the starting initializer resolves to (and,
bounded, the stopping offset). Every `partition.discovery.interval.ms`
(default 5 min for an unbounded source, off for a bounded one, as Flink) the reader lists again and
adds owned partitions it has no split for, reading them from the earliest offset (Flink's rule for
partitions discovered after the start). A checkpoint keeps the splits with their next offsets; a
restore at another parallelism pools and deals them by the same ownership rule (`redistribute_splits`).
Offsets of a completed checkpoint are committed to the group (when a group id is set and
`commit.offsets.on.checkpoint` is not false) for monitoring only: a restore reads the checkpoint's.

Records carry the Kafka record timestamp as their event timestamp. Watermarks are per partition, as
Flink's: the reader names each record's partition (`last_splits`) and the partitions it reads
(`current_splits`), the source operator runs one generator per partition and emits the minimum over
the partitions that are not idle (`WatermarkStrategy.with_idleness`), see split_watermarks.py.
Watermark alignment across sources (Flink's `with_watermark_alignment`) is not built.

Metrics under Flink's names (numRecordsIn, numBytesIn, pendingRecords, the event-time lags, and
KafkaSourceReader.topic.<t>.partition.<p>.currentOffset / committedOffset) go to the operator's
metric group, see metrics.py.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext
from strom.connectors.kafka import splits as sp
from strom.connectors.kafka.client import (
    ConsumerOffsets,
    client_config,
    existing_partitions,
    partitions_of,
    require_confluent_kafka,
    unreachable,
)
from strom.connectors.kafka.metrics import INITIAL_OFFSET, KafkaSourceReaderMetrics, operator_metric_group
from strom.connectors.kafka.offsets import KafkaOffsetsInitializer, KafkaTopicPartition

_MAX_POLL_WAIT_S = 0.05  # an empty fetch waits at most this long before poll() returns []
_DEFAULT_DISCOVERY_MS = 300_000


class KafkaRecordDeserializationSchema:
    """Turns a confluent-kafka Message into the record (Flink's KafkaRecordDeserializationSchema)."""

    def __init__(self, value_schema: Any) -> None:
        self.value_schema = value_schema

    @staticmethod
    def value_only(value_deserialization_schema: Any) -> KafkaRecordDeserializationSchema:
        return KafkaRecordDeserializationSchema(value_deserialization_schema)

    def deserialize(self, message: Any) -> Any:
        value = message.value()
        return None if value is None else self.value_schema.deserialize(value)

    def get_produced_type(self) -> Any:
        fn = getattr(self.value_schema, "get_produced_type", None)
        return fn() if callable(fn) else None


class KafkaSourceReader(SourceReader):
    def __init__(self, source: KafkaSource, context: SourceReaderContext) -> None:
        self._src = source
        self._subtask = context.subtask_index
        self._parallelism = context.parallelism
        self._consumer: Any = None
        self._splits: dict[tuple[str, int], sp.Split] = {}
        self._restored = False
        self._started = False
        self._next_discovery = 0.0
        self._pending_commits: dict[int, list[sp.Split]] = {}
        self._cancelled = threading.Event()
        self.last_timestamps: list[int] | None = None
        self.last_splits: list[tuple[str, int]] = []  # the partition of each record of the last batch
        self._last_read: dict[tuple[str, int], int] = {}  # offset of the last record read per partition
        self.metrics = KafkaSourceReaderMetrics(
            operator_metric_group(context.runtime_context), pending_records=self.pending_records
        )

    def _register_metrics(self, topic: str, partition: int) -> None:
        key = (topic, partition)
        self.metrics.register_partition(topic, partition, lambda: self._last_read.get(key, INITIAL_OFFSET))

    # -- splits ------------------------------------------------------------------------------------
    def snapshot_splits(self) -> list[sp.Split]:
        return sorted(self._splits.values())

    def restore_splits(self, splits: list[sp.Split]) -> None:
        self._splits = {(t, p): (t, p, int(n), s) for t, p, n, s in splits}
        for t, p in self._splits:
            self._register_metrics(t, p)
        self._restored = True

    def prepare_snapshot(self, checkpoint_id: int) -> None:
        self._pending_commits[checkpoint_id] = self.snapshot_splits()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commit the offsets of the completed checkpoint to the group (monitoring only, as Flink)."""
        due = [c for c in self._pending_commits if c <= checkpoint_id]
        if not due:
            return
        offsets = self._pending_commits[max(due)]
        for c in due:
            del self._pending_commits[c]
        if self._consumer is None or not self._src.commits_offsets():
            return
        kafka = require_confluent_kafka()
        tps = [kafka.TopicPartition(t, p, n) for t, p, n, _s in offsets]
        if tps:
            try:
                self._consumer.commit(offsets=tps, asynchronous=True)
            except kafka.KafkaException:
                pass  # a failed monitoring commit must not fail the job (Flink logs and goes on)

    # -- reading -----------------------------------------------------------------------------------
    def _start(self) -> None:
        kafka = require_confluent_kafka()
        conf = self._src.consumer_config(self._subtask)
        conf["on_commit"] = self.metrics.record_commit  # committedOffset: what Kafka acknowledged
        try:
            self._consumer = kafka.Consumer(conf)
        except kafka.KafkaException as exc:
            raise RuntimeError(f"Kafka source: invalid consumer properties ({exc}); check set_property") from None
        if not self._restored:
            self._add_partitions(self._discover(), self._src.starting_offsets)
        else:
            self._assign()
            self._add_partitions(self._discover(), KafkaOffsetsInitializer.earliest())
        self._next_discovery = time.monotonic() + self._src.discovery_interval_s()
        self._started = True

    def _discover(self) -> list[tuple[str, int]]:
        if self._src.partitions is not None:
            fixed = existing_partitions(self._consumer, self._src.bootstrap_servers, self._src.partitions)
            return [(t, p) for t, p in fixed if sp.owner(t, p, self._parallelism) == self._subtask]
        all_parts = partitions_of(
            self._consumer,
            self._src.bootstrap_servers,
            self._src.topics,
            self._src.topic_pattern,
            allow_missing=self._src.allows_auto_creation(),
        )
        return [(t, p) for t, p in all_parts if sp.owner(t, p, self._parallelism) == self._subtask]

    def _add_partitions(self, owned: list[tuple[str, int]], initializer: KafkaOffsetsInitializer) -> None:
        new = [tp for tp in owned if tp not in self._splits]
        if not new:
            return
        offsets = ConsumerOffsets(self._consumer, self._src.bootstrap_servers)
        stopping = self._src.stopping_offsets
        for t, p in new:
            start = initializer.resolve(offsets, t, p)
            stop = stopping.resolve(offsets, t, p) if stopping is not None else None
            self._splits[(t, p)] = (t, p, start, stop)
            self._register_metrics(t, p)
        self._assign()

    def _assign(self) -> None:
        kafka = require_confluent_kafka()
        live = [s for s in self._splits.values() if not sp.is_finished(s)]
        self._consumer.assign([kafka.TopicPartition(t, p, n) for t, p, n, _s in live])

    def poll(self, max_records: int) -> list[Any] | None:
        if not self._started:
            self._start()
        if self._src.discovery_interval_s() > 0 and time.monotonic() >= self._next_discovery:
            self._next_discovery = time.monotonic() + self._src.discovery_interval_s()
            self._add_partitions(self._discover(), KafkaOffsetsInitializer.earliest())
        if self._src.bounded and all(sp.is_finished(s) for s in self._splits.values()):
            return None
        kafka = require_confluent_kafka()
        try:
            messages = self._consumer.consume(num_messages=max_records, timeout=_MAX_POLL_WAIT_S)
        except kafka.KafkaException as exc:
            raise unreachable(self._src.bootstrap_servers, exc) from None
        fetch_ms = int(time.time() * 1000) if messages else 0
        nbytes = 0
        last_read = self._last_read
        out: list[Any] = []
        stamps: list[int] = []
        origins: list[tuple[str, int]] = []
        finished = False
        deserialize = self._src.deserializer.deserialize
        for m in messages:
            err = m.error()
            if err is not None:
                if err.code() == kafka.KafkaError._PARTITION_EOF:
                    continue
                if err.code() in (kafka.KafkaError.UNKNOWN_TOPIC_OR_PART, kafka.KafkaError._UNKNOWN_TOPIC):
                    raise RuntimeError(f"Kafka topic {m.topic()!r} does not exist at {self._src.bootstrap_servers}")
                if err.fatal() or err.code() in (kafka.KafkaError._ALL_BROKERS_DOWN, kafka.KafkaError._TRANSPORT):
                    raise unreachable(self._src.bootstrap_servers, kafka.KafkaException(err))
                continue  # transient: librdkafka retries
            key = (m.topic(), m.partition())
            split = self._splits.get(key)
            if split is None or sp.is_finished(split) or m.offset() < split[2]:
                continue  # a fetch of a partition just unassigned, or already seen
            stop = split[3]
            if stop is not None and m.offset() >= stop:
                self._splits[key] = (split[0], split[1], stop, stop)
                finished = True
                continue
            self._splits[key] = (split[0], split[1], m.offset() + 1, stop)
            last_read[key] = m.offset()
            if stop is not None and m.offset() + 1 >= stop:
                finished = True
            raw_key, raw_value = m.key(), m.value()
            nbytes += (len(raw_key) if raw_key else 0) + (len(raw_value) if raw_value else 0)
            value = deserialize(m)
            if value is None:
                continue  # Flink drops records its deserializer turns into null
            out.append(value)
            stamps.append(m.timestamp()[1])
            origins.append(key)
        if finished:
            self._assign()  # stop fetching partitions that reached their stopping offset
        self.last_timestamps = stamps
        self.last_splits = origins
        if messages:
            self.metrics.record_batch(
                records=len(out), nbytes=nbytes, last_timestamp_ms=stamps[-1] if stamps else None,
                fetch_ms=fetch_ms, emit_ms=int(time.time() * 1000),
            )
        if not out and self._src.bounded and all(sp.is_finished(s) for s in self._splits.values()):
            return None
        return out

    def current_splits(self) -> list[tuple[str, int]]:
        """The partitions this reader still reads (each has its own watermark generator)."""
        return [(t, p) for t, p, n, stop in list(self._splits.values()) if stop is None or n < stop]

    def pending_records(self) -> int | None:
        """Consumer lag: the high watermark librdkafka last fetched minus the next offset, summed."""
        consumer = self._consumer
        if consumer is None:
            return None
        kafka = require_confluent_kafka()
        total = 0
        for t, p, n, stop in list(self._splits.values()):
            if stop is not None:
                total += max(0, stop - n)
                continue
            try:
                _low, high = consumer.get_watermark_offsets(kafka.TopicPartition(t, p), cached=True)
            except kafka.KafkaException:
                return None
            if high is None or high < 0:
                return None
            total += max(0, high - n)
        return total

    def cancel(self) -> None:
        self._cancelled.set()

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()


class KafkaSource(Source):
    name = "KafkaSource"
    converts_types = False

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        topics: list[str] | None,
        topic_pattern: str | None,
        group_id: str | None,
        starting_offsets: KafkaOffsetsInitializer,
        stopping_offsets: KafkaOffsetsInitializer | None,
        deserializer: KafkaRecordDeserializationSchema,
        properties: dict[str, str],
        declared_unbounded: bool = False,
        partitions: list[tuple[str, int]] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topics = topics
        self.topic_pattern = topic_pattern
        self.partitions = partitions  # set_partitions: exactly these (topic, partition), never discovered
        self.group_id = group_id
        self.starting_offsets = starting_offsets
        self.stopping_offsets = stopping_offsets
        # bounded: the reader ends at the stopping offsets; set_unbounded stops there too but the source
        # stays CONTINUOUS_UNBOUNDED (STREAMING mode, as Flink's)
        self.bounded = stopping_offsets is not None
        self.declared_unbounded = declared_unbounded
        self.deserializer = deserializer
        self.properties = properties

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    def get_boundedness(self) -> Boundedness:
        if self.bounded and not self.declared_unbounded:
            return Boundedness.BOUNDED
        return Boundedness.CONTINUOUS_UNBOUNDED

    def get_produced_type(self) -> Any:
        return self.deserializer.get_produced_type()

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        return KafkaSourceReader(self, context)

    def redistribute_splits(self, splits: list[sp.Split], subtask_index: int, parallelism: int) -> list[sp.Split]:
        return sp.redistribute(splits, subtask_index, parallelism)

    # -- options -----------------------------------------------------------------------------------
    def discovery_interval_s(self) -> float:
        default = -1 if self.bounded else _DEFAULT_DISCOVERY_MS
        return int(self.properties.get("partition.discovery.interval.ms", default)) / 1000.0

    def commits_offsets(self) -> bool:
        return self.group_id is not None and str(self.properties.get("commit.offsets.on.checkpoint", "true")) != "false"

    def allows_auto_creation(self) -> bool:
        return str(self.properties.get("allow.auto.create.topics", "false")).lower() == "true"

    def consumer_config(self, subtask_index: int) -> dict[str, Any]:
        conf = client_config(self.properties, self.bootstrap_servers)
        # the group only receives monitoring commits: partitions are assigned by Strom, never by the group
        conf["group.id"] = self.group_id or f"strom-kafka-source-{uuid.uuid4().hex[:12]}"
        conf["enable.auto.commit"] = False
        conf.setdefault("isolation.level", "read_committed")
        prefix = self.properties.get("client.id.prefix")
        if prefix:
            conf["client.id"] = f"{prefix}-{subtask_index}"
        return conf


class KafkaSourceBuilder:
    def __init__(self) -> None:
        self._bootstrap: str | None = None
        self._topics: list[str] | None = None
        self._pattern: str | None = None
        self._partitions: list[tuple[str, int]] | None = None
        self._group_id: str | None = None
        self._starting = KafkaOffsetsInitializer.earliest()
        self._stopping: KafkaOffsetsInitializer | None = None
        self._deserializer: KafkaRecordDeserializationSchema | None = None
        self._properties: dict[str, str] = {}
        self._unbounded = False

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        self._bootstrap = bootstrap_servers
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        names = [t for arg in topics for t in ([arg] if isinstance(arg, str) else list(arg))]
        self._topics, self._pattern, self._partitions = names, None, None
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        import re

        try:
            re.compile(topic_pattern)
        except re.error as exc:
            raise ValueError(f"topic pattern {topic_pattern!r} is not a regular expression: {exc}") from None
        self._pattern, self._topics, self._partitions = topic_pattern, None, None
        return self

    def set_partitions(self, partitions: Any) -> KafkaSourceBuilder:
        """Read exactly these partitions (a set of KafkaTopicPartition), as Flink's setPartitions; each
        must exist when the source starts, and no other partition is discovered."""
        chosen = list(partitions)
        for tp in chosen:
            if not isinstance(tp, KafkaTopicPartition):
                raise TypeError(
                    f"KafkaSource.set_partitions expects KafkaTopicPartition(topic, partition) items, got {tp!r}"
                )
            if not isinstance(tp.partition, int) or tp.partition < 0:
                raise ValueError(f"KafkaSource.set_partitions: partition of {tp!r} must be an int >= 0")
        if not chosen:
            raise ValueError("KafkaSource.set_partitions: no partitions given; name at least one KafkaTopicPartition")
        self._partitions = sorted({(tp.topic, tp.partition) for tp in chosen})
        self._topics, self._pattern = None, None
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        self._group_id = group_id
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        return self.set_property("client.id.prefix", prefix)

    def set_starting_offsets(self, starting_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        self._starting = starting_offsets_initializer
        return self

    def set_bounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        self._stopping, self._unbounded = stopping_offsets_initializer, False
        return self

    def set_unbounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        """Stop at these offsets but stay an unbounded source (STREAMING), as Flink's setUnbounded."""
        self._stopping, self._unbounded = stopping_offsets_initializer, True
        return self

    def set_value_only_deserializer(self, deserialization_schema: Any) -> KafkaSourceBuilder:
        self._deserializer = KafkaRecordDeserializationSchema.value_only(deserialization_schema)
        return self

    def set_deserializer(self, deserializer: Any) -> KafkaSourceBuilder:
        if not callable(getattr(deserializer, "deserialize", None)):
            raise TypeError(
                f"KafkaSource.set_deserializer expects a KafkaRecordDeserializationSchema, got {deserializer!r}"
            )
        self._deserializer = deserializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        self._properties[key] = str(value)
        return self

    def set_properties(self, props: dict[str, str]) -> KafkaSourceBuilder:
        for k, v in props.items():
            self.set_property(k, v)
        return self

    def build(self) -> KafkaSource:
        bootstrap = self._bootstrap or self._properties.get("bootstrap.servers")
        if not bootstrap:
            raise ValueError("KafkaSource: bootstrap servers are not set; call set_bootstrap_servers('host:9092')")
        if not self._topics and self._pattern is None and self._partitions is None:
            raise ValueError(
                "KafkaSource: no topics; call set_topics(...), set_topic_pattern(...) or set_partitions(...)"
            )
        if self._deserializer is None:
            raise ValueError("KafkaSource: no deserializer; call set_value_only_deserializer(SimpleStringSchema())")
        if self._starting.kind == "committed" and not self._group_id and "group.id" not in self._properties:
            raise ValueError("KafkaSource: committed offsets need a group id; call set_group_id(...)")
        return KafkaSource(
            bootstrap_servers=bootstrap,
            topics=self._topics,
            topic_pattern=self._pattern,
            group_id=self._group_id or self._properties.get("group.id"),
            starting_offsets=self._starting,
            stopping_offsets=self._stopping,
            deserializer=self._deserializer,
            properties=dict(self._properties),
            declared_unbounded=self._unbounded,
            partitions=self._partitions,
        )
