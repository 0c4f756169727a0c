"""A Kafka -> keyed state -> Kafka job stopped with a savepoint at parallelism 2 and restored at 3.

The source's splits (partitions with their offsets) are dealt to three subtasks by Flink's
ownership rule and the keyed counts continue: the output holds, for each key, the counts 1..n(key)
each exactly once over both runs (the plain-Python reference); nothing lost, nothing read twice.
Stop-with-savepoint commits the last transaction, so this holds on the mock cluster too.
"""

from __future__ import annotations

from collections import Counter

from tests.connectors.kafka_testing import consume_all, kafka_fixture, produce  # noqa: F401 - the `kafka` fixture
from tests.connectors.test_kafka_exactly_once import KEYS, job_file
from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

N = 3_000
PARTITIONS = 5


def reference(n: int) -> Counter[str]:
    per_key = Counter(i % KEYS for i in range(n))
    return Counter(f"{k} {c}" for k, total in per_key.items() for c in range(1, total + 1))


def test_rescale_two_to_three_from_a_savepoint(kafka, tmp_path):
    source_topic, out_topic = kafka.new_topic(PARTITIONS, "in"), kafka.new_topic(PARTITIONS, "out")

    def lines() -> Counter[str]:
        return Counter(m.value().decode() for m in consume_all(kafka.bootstrap, out_topic, PARTITIONS))

    half = N // 2
    produce(kafka.bootstrap, source_topic, [(v % PARTITIONS, None, str(v).encode()) for v in range(half)])
    cluster = SessionCluster(taskmanagers=2, slots=3)
    try:
        job_id = submit(cluster, job_file(tmp_path, kafka.bootstrap, source_topic, out_topic, parallelism=2))
        wait_until(lambda: sum(lines().values()) >= half, timeout=120, what="the first half written")
        proc = cluster.cli("stop", job_id, "--savepoint-path", str(tmp_path / "sp"))
        assert proc.returncode == 0, proc.stderr
        savepoint = proc.stdout.strip().splitlines()[-1].split()[-1]
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED")) == "FINISHED"
        produce(kafka.bootstrap, source_topic, [(v % PARTITIONS, None, str(v).encode()) for v in range(half, N)])
        path = job_file(tmp_path, kafka.bootstrap, source_topic, out_topic, parallelism=3)
        proc = cluster.cli("submit", path, "--from-savepoint", savepoint)
        assert proc.returncode == 0, proc.stderr
        restored = proc.stdout.strip().split()[-1]
        wait_until(lambda: sum(lines().values()) >= N, timeout=120, what="the second half written")
        vertices = cluster.get(f"/jobs/{restored}")["vertices"]
        assert {v["parallelism"] for v in vertices} == {3}
        assert cluster.job_state(restored) == "RUNNING", cluster.get(f"/jobs/{restored}/exceptions")
    finally:
        cluster.close()
    got = lines()
    assert got == reference(N), f"duplicated {got - reference(N)}, lost {reference(N) - got}"
