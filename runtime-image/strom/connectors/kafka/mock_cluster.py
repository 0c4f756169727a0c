"""A local Kafka for experiments and tests: librdkafka's Kafka-protocol mock cluster in its own process.

    python -m strom.connectors.kafka.mock_cluster [--brokers 3] [--topic NAME:PARTITIONS ...]

prints the bootstrap address (one line) and serves until it is stopped (Ctrl-C, SIGTERM), or with
`--exit-on-eof` until its stdin closes (what the tests' fixture uses: the cluster dies with its owner).
Other processes reach the brokers over TCP on loopback; produce/fetch, consumer groups, committed
offsets, transactions and `isolation.level=read_committed` work across processes. Its limits:
everything is in memory, a partition keeps a bounded log (older segments are dropped: about 47,000
records of 100 bytes each), there is no replication, ListOffsets by timestamp answers -1, and
read_committed consumers are not shielded from aborted or open transactions (measured with librdkafka
2.16). The Admin API is not served (no CreateTopics, no CreatePartitions): topics are created by
this process, from `--topic` or from the stdin command `create NAME PARTITIONS` (answered with `ok`
or `error ...`), or automatically (4 partitions) when a producer asks for an unknown topic. The mock is
in the librdkafka that the confluent-kafka wheel
bundles, reached through ctypes; this module imports nothing of `strom`.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import sys
import threading

_RD_KAFKA_PRODUCER = 0


def _librdkafka() -> ctypes.CDLL:
    import confluent_kafka

    site = os.path.dirname(os.path.dirname(confluent_kafka.__file__))
    # the wheel bundles it under confluent_kafka.libs/ (auditwheel); a source build links the system's
    candidates = sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"))) or ["librdkafka.so.1"]
    lib = ctypes.CDLL(candidates[0])
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_err2str.restype = ctypes.c_char_p
    lib.rd_kafka_err2str.argtypes = [ctypes.c_int]
    return lib


class MockCluster:
    """A mock cluster of `brokers` brokers living as long as this object (and this process)."""

    def __init__(self, brokers: int = 3) -> None:
        self._lib = lib = _librdkafka()
        conf = lib.rd_kafka_conf_new()
        errstr = ctypes.create_string_buffer(512)
        # the handle only hosts the cluster; quiet, so that its log does not mix with our stdout
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
        self._rk = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not self._rk:
            raise RuntimeError(f"librdkafka could not create a client handle: {errstr.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            raise RuntimeError("librdkafka could not start a mock cluster")
        self.bootstrap_servers: str = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int) -> None:
        if partitions < 1:
            raise ValueError(f"topic {name!r}: partitions must be >= 1, got {partitions}")
        # replication factor 1: the mock keeps one copy per partition anyway
        err = self._lib.rd_kafka_mock_topic_create(self._mc, name.encode(), partitions, 1)
        if err:
            raise RuntimeError(f"topic {name!r}: {self._lib.rd_kafka_err2str(err).decode()}")


def _serve_commands(cluster: MockCluster) -> None:
    for line in sys.stdin:
        words = line.split()
        try:
            if len(words) == 3 and words[0] == "create":
                cluster.create_topic(words[1], int(words[2]))
                print("ok", flush=True)
            elif words:
                print(f"error unknown command {line.strip()!r}; use: create NAME PARTITIONS", flush=True)
        except (ValueError, RuntimeError) as exc:
            print(f"error {exc}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="librdkafka's Kafka mock cluster for local experiments")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS")
    parser.add_argument("--exit-on-eof", action="store_true", help="stop when stdin closes")
    args = parser.parse_args(argv)
    cluster = MockCluster(args.brokers)
    for spec in args.topic:
        name, _, partitions = spec.partition(":")
        cluster.create_topic(name, int(partitions or 1))
    print(cluster.bootstrap_servers, flush=True)
    try:
        _serve_commands(cluster)
        if not args.exit_on_eof:
            threading.Event().wait()  # stdin was /dev/null or closed: serve until stopped
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
