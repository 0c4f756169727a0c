"""A Kafka for the tests: librdkafka's mock cluster in its own process, or a real cluster.

With STROM_TEST_KAFKA_BOOTSTRAP=host:port every Kafka test runs against that cluster instead
(topics are created through the Admin API with unique names, so runs do not see each other).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REAL_BOOTSTRAP = os.environ.get("STROM_TEST_KAFKA_BOOTSTRAP")


class KafkaCluster:
    """What a test needs: the bootstrap address and topic creation."""

    def __init__(self, bootstrap: str, proc: subprocess.Popen[str] | None) -> None:
        self.bootstrap = bootstrap
        self._proc = proc
        self.is_mock = proc is not None

    def new_topic(self, partitions: int, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        if self._proc is not None:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(f"create {name} {partitions}\n")
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline().strip()
            assert answer == "ok", answer
        else:
            futures = AdminClient({"bootstrap.servers": self.bootstrap}).create_topics(
                [NewTopic(name, partitions, 1)], request_timeout=30
            )
            for f in futures.values():
                f.result(timeout=30)
        return name

    def close(self) -> None:
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()  # --exit-on-eof
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def consumers() -> list[Consumer]:
    """Every confluent-kafka Consumer object of this process, open or closed (nothing is called on them)."""
    gc.collect()  # an unreachable consumer is destroyed by its collection, not leaked
    return [obj for obj in gc.get_objects() if type(obj) is Consumer]


def producers() -> list[Producer]:
    """Every live confluent-kafka Producer of this process (a producer lives, and connects, until its last
    reference goes: it has no close())."""
    gc.collect()
    return [obj for obj in gc.get_objects() if type(obj) is Producer]


def _is_closed(consumer: Consumer) -> bool:
    """A closed consumer refuses calls with 'Consumer closed' at once. The probe runs in a thread of its
    own: a call on a consumer that another thread is polling may wait for it, and such a one is open."""
    answer: list[bool] = []

    def probe() -> None:
        try:
            consumer.assignment()
            answer.append(False)
        except RuntimeError:
            answer.append(True)

    thread = threading.Thread(target=probe, name="consumer-probe", daemon=True)
    thread.start()
    thread.join(5.0)
    return answer == [True]


def open_consumers() -> list[Consumer]:
    """Every confluent-kafka Consumer of this process that is not closed. An open one keeps its
    librdkafka threads reconnecting to its cluster (after a test, a mock cluster that is gone) until
    the process ends."""
    return [c for c in consumers() if not _is_closed(c)]


def start_cluster() -> KafkaCluster:
    if REAL_BOOTSTRAP:
        return KafkaCluster(REAL_BOOTSTRAP, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "strom.connectors.kafka.mock_cluster", "--exit-on-eof"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    bootstrap = proc.stdout.readline().strip()
    if not bootstrap:
        proc.kill()
        raise RuntimeError("the Kafka mock cluster did not start")
    return KafkaCluster(bootstrap, proc)


def produce(bootstrap: str, topic: str, records: list[tuple[int | None, bytes | None, bytes]], **conf: Any) -> None:
    """(partition, key, value) records, each acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3, **conf})
    for partition, key, value in records:
        kwargs = {} if partition is None else {"partition": partition}
        producer.produce(topic, value, key, **kwargs)
    assert producer.flush(30) == 0


def consume_all(
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    expect: int | None = None,
    timeout: float = 20.0,
    isolation: str = "read_committed",
) -> list[Any]:
    """Every record of `topic` from the beginning up to the end offsets at the time of the call (or
    until `expect` records arrived), as confluent-kafka Messages."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    try:
        tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        c.assign(tps)
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if expect is not None and len(out) >= expect:
                break
            if expect is None:
                # the position passes transaction markers too (the last offset may be a commit marker)
                positions = {tp.partition: tp.offset for tp in c.position(tps)}
                if all(ends[p] == 0 or positions[p] >= ends[p] for p in ends):
                    break
            out += [m for m in c.consume(500, 0.2) if m.error() is None]
        return out
    finally:
        c.close()  # an unclosed consumer keeps reconnecting to the cluster until the process ends


@pytest.fixture(scope="module", name="kafka")
def kafka_fixture() -> Iterator[KafkaCluster]:
    """A Kafka per test module (import this fixture into the module)."""
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.close()
