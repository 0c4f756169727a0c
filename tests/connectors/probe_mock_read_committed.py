"""Does librdkafka's mock cluster honour isolation.level=read_committed? Aborted records must be invisible to a
read_committed consumer. Run: `python -m tests.connectors.probe_mock_read_committed`. With librdkafka 2.16.0 they
are not (the aborted record is read under both isolation levels), which is why exactly-once Kafka output is checked
only against a real cluster (STROM_TEST_KAFKA_BOOTSTRAP, STROM_KAFKA_CHAOS=1); on the mock the tests check
completeness."""

from __future__ import annotations

import time

import confluent_kafka
from confluent_kafka import Consumer, Producer


def _transactions(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "probe", "log_level": 0})
    producer.init_transactions(10)
    for value, commit in ((b"aborted", False), (b"committed", True)):
        producer.begin_transaction()
        producer.produce("t", value)
        producer.flush()
        if commit:
            producer.commit_transaction(10)
        else:
            producer.abort_transaction(10)


def _read(bootstrap: str, isolation: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": isolation, "auto.offset.reset": "earliest",
                         "isolation.level": isolation, "log_level": 0})
    consumer.subscribe(["t"])
    got: list[bytes] = []
    deadline = time.time() + 20
    while time.time() < deadline and b"committed" not in got:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got.append(message.value())
    consumer.close()
    return got


def main() -> None:
    mock = Producer({"test.mock.num.brokers": 3, "log_level": 0})
    metadata = mock.list_topics(timeout=10)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values())
    _transactions(bootstrap)
    for isolation in ("read_committed", "read_uncommitted"):
        print(f"librdkafka {confluent_kafka.libversion()[0]} mock cluster, {isolation}: {_read(bootstrap, isolation)}")


if __name__ == "__main__":
    main()
