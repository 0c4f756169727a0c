"""The confluent-kafka (librdkafka) calls the connector needs, with Strom's one-line errors.

confluent-kafka is imported here and in the reader/writer only when a task runs, so that building a
job (and `import strom`) never needs it; it is the `kafka` extra.
"""

from __future__ import annotations

import re
from typing import Any

METADATA_TIMEOUT_S = 10.0


def require_confluent_kafka() -> Any:
    try:
        import confluent_kafka
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise RuntimeError("the Kafka connector needs confluent-kafka: pip install 'strom[kafka]'") from exc
    return confluent_kafka


def client_config(properties: dict[str, str], bootstrap_servers: str) -> dict[str, Any]:
    """librdkafka's configuration from the user's properties (Java client names mostly match)."""
    conf: dict[str, Any] = {k: v for k, v in properties.items() if not k.startswith(_STROM_ONLY)}
    conf["bootstrap.servers"] = bootstrap_servers
    conf.setdefault("log_level", 3)  # librdkafka's info lines on stderr are noise in a task's log
    return conf


# keys of Flink's Kafka connector that are not librdkafka properties
_STROM_ONLY = (
    "partition.discovery.interval.ms",
    "commit.offsets.on.checkpoint",
    "client.id.prefix",
    "register.consumer.metrics",
)


def unreachable(bootstrap_servers: str, exc: BaseException) -> RuntimeError:
    return RuntimeError(
        f"Kafka brokers at {bootstrap_servers} did not answer ({exc}); check bootstrap.servers "
        "(set_bootstrap_servers; a SQL table's 'properties.bootstrap.servers') and that the brokers are reachable "
        "from the TaskManager"
    )


def list_metadata(client: Any, bootstrap_servers: str, topic: str | None = None) -> Any:
    kafka = require_confluent_kafka()
    try:
        return client.list_topics(topic, timeout=METADATA_TIMEOUT_S)
    except kafka.KafkaException as exc:
        raise unreachable(bootstrap_servers, exc) from None


def partitions_of(
    client: Any, bootstrap_servers: str, topics: list[str] | None, pattern: str | None, *, allow_missing: bool
) -> list[tuple[str, int]]:
    """(topic, partition) of the named topics (a missing one is an error unless auto-creation is on)
    or of every topic matching `pattern`, sorted."""
    out: list[tuple[str, int]] = []
    if pattern is not None:
        regex = re.compile(pattern)
        md = list_metadata(client, bootstrap_servers)
        for name, tmd in md.topics.items():
            if regex.fullmatch(name) and tmd.error is None:
                out += [(name, p) for p in tmd.partitions]
        return sorted(out)
    for topic in topics or []:
        md = list_metadata(client, bootstrap_servers, topic)
        tmd = md.topics.get(topic)
        if tmd is None or tmd.error is not None or not tmd.partitions:
            if allow_missing:
                continue
            raise RuntimeError(
                f"Kafka topic {topic!r} does not exist at {bootstrap_servers}; create it, or set the property "
                "allow.auto.create.topics=true if the brokers create topics on first use"
            )
        out += [(topic, p) for p in tmd.partitions]
    return sorted(out)


def existing_partitions(
    client: Any, bootstrap_servers: str, wanted: list[tuple[str, int]]
) -> list[tuple[str, int]]:
    """The partitions `set_partitions` named, sorted, each checked to exist (Flink's partition-set
    subscriber fails on one that does not)."""
    known: dict[str, list[int]] = {}
    for topic in sorted({t for t, _p in wanted}):
        tmd = list_metadata(client, bootstrap_servers, topic).topics.get(topic)
        known[topic] = sorted(tmd.partitions) if tmd is not None and tmd.error is None else []
    for topic, partition in sorted(wanted):
        if partition not in known[topic]:
            has = f"partitions 0..{known[topic][-1]}" if known[topic] else "no such topic"
            raise RuntimeError(
                f"Kafka partition {topic}-{partition} (set_partitions) does not exist at {bootstrap_servers} "
                f"({has}); name existing partitions, or use set_topics to read every partition"
            )
    return sorted(wanted)


class ConsumerOffsets:
    """`offsets.OffsetClient` over a confluent-kafka Consumer."""

    def __init__(self, consumer: Any, bootstrap_servers: str) -> None:
        self._c = consumer
        self._bootstrap = bootstrap_servers
        self._kafka = require_confluent_kafka()

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        try:
            low, high = self._c.get_watermark_offsets(
                self._kafka.TopicPartition(topic, partition), timeout=METADATA_TIMEOUT_S
            )
        except self._kafka.KafkaException as exc:
            raise unreachable(self._bootstrap, exc) from None
        return int(low), int(high)

    def committed(self, topic: str, partition: int) -> int | None:
        try:
            (tp,) = self._c.committed([self._kafka.TopicPartition(topic, partition)], timeout=METADATA_TIMEOUT_S)
        except self._kafka.KafkaException as exc:
            raise unreachable(self._bootstrap, exc) from None
        return tp.offset if tp.offset >= 0 else None

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        try:
            (tp,) = self._c.offsets_for_times(
                [self._kafka.TopicPartition(topic, partition, timestamp_ms)], timeout=METADATA_TIMEOUT_S
            )
        except self._kafka.KafkaException as exc:
            raise unreachable(self._bootstrap, exc) from None
        return tp.offset if tp.offset >= 0 else None
