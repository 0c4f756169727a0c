"""Exactly-once Kafka -> keyed state -> Kafka on a session cluster under kill -9 of a TaskManager.

The job reads numbers from a topic, counts them per key (keyed state) and writes `key count` lines
through an EXACTLY_ONCE KafkaSink, checkpointing every 300 ms. While it runs a TaskManager (and its
slot processes) is killed with SIGKILL and replaced; the job restores from its latest checkpoint.
Exactly-once output means: a read_committed consumer sees, for each key, the counts 1..n(key) each
exactly once (a replayed record would repeat a count, a lost one leave a gap) — the plain-Python
reference.

librdkafka's mock cluster does not filter aborted or open transactions for read_committed consumers
(measured: records of an aborted transaction are returned), so on the mock the test checks what the
mock can show: every expected line is there and nothing else (duplicates from the killed attempt's
uncommitted transactions are visible there). Against a real cluster (STROM_TEST_KAFKA_BOOTSTRAP) it
checks the exact multiset. STROM_KAFKA_CHAOS=1 runs a longer input with five kills of TaskManagers and
the JobManager (restarted on its ports; high availability on file storage), in a seeded random order.
"""

from __future__ import annotations

import os
import random
import textwrap
import time
from collections import Counter
from pathlib import Path

from tests.connectors.kafka_testing import consume_all, kafka_fixture, produce  # noqa: F401 - the `kafka` fixture
from tests.engine.chaos_testing import completed_since, running
from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

CHAOS = os.environ.get("STROM_KAFKA_CHAOS") == "1"
KEYS = 5
N = 30_000 if CHAOS else 4_000
KILLS = 5 if CHAOS else 1
PARTITIONS = 3


def job_file(tmp_path: Path, bootstrap: str, source_topic: str, out_topic: str, parallelism: int = 2) -> str:
    job = tmp_path / f"kafka_eos_job_p{parallelism}.py"
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Types, WatermarkStrategy
        from strom.common.serialization import SimpleStringSchema
        from strom.datastream import KeyedProcessFunction, StreamExecutionEnvironment
        from strom.datastream.connectors.kafka import (
            DeliveryGuarantee, KafkaOffsetsInitializer, KafkaRecordSerializationSchema, KafkaSink, KafkaSource)
        from strom.datastream.state import ValueStateDescriptor

        class CountPerKey(KeyedProcessFunction):
            def open(self, runtime_context):
                self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

            def process_element(self, value, ctx):
                n = (self.count.value() or 0) + 1
                self.count.update(n)
                yield f"{{ctx.get_current_key()}} {{n}}"

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism({parallelism})
        env.configure(Configuration({{
            "execution.checkpointing.interval": "300 ms",
            "state.checkpoints.dir": "file://{tmp_path / "chk"}",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "50",
            "restart-strategy.fixed-delay.delay": "200 ms",
        }}))
        source = (KafkaSource.builder().set_bootstrap_servers({bootstrap!r}).set_topics({source_topic!r})
                  .set_group_id("eos-test").set_starting_offsets(KafkaOffsetsInitializer.earliest())
                  .set_value_only_deserializer(SimpleStringSchema()).build())
        sink = (KafkaSink.builder().set_bootstrap_servers({bootstrap!r})
                .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic({out_topic!r})
                                       .set_value_serialization_schema(SimpleStringSchema()).build())
                .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .set_transactional_id_prefix({out_topic + "-tx"!r}).build())
        (env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
            .map(int, output_type=Types.LONG()).uid("parse")
            .key_by(lambda v: v % {KEYS}, key_type=Types.INT())
            .process(CountPerKey(), output_type=Types.STRING()).uid("count")
            .sink_to(sink).uid("sink"))
        env.execute("kafka exactly-once")
    """)
    )
    return str(job)


def reference() -> Counter[str]:
    per_key = Counter(i % KEYS for i in range(N))
    return Counter(f"{k} {n}" for k, total in per_key.items() for n in range(1, total + 1))


def test_kafka_to_keyed_state_to_kafka_exactly_once_under_kill_9(kafka, tmp_path):
    source_topic, out_topic = kafka.new_topic(PARTITIONS, "in"), kafka.new_topic(PARTITIONS, "out")
    expected = reference()
    batches = [list(range(N))[i :: KILLS + 1] for i in range(KILLS + 1)]
    produce(kafka.bootstrap, source_topic, [(v % PARTITIONS, None, str(v).encode()) for v in batches[0]])
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"kafka chaos seed {seed}")
    kinds = ["taskmanager"] * KILLS
    if CHAOS:
        kinds = ["taskmanager", "jobmanager"] + [rng.choice(["taskmanager", "jobmanager"]) for _ in range(KILLS - 2)]
        rng.shuffle(kinds)
    print(f"kills: {kinds}")
    ha = ("-D", "high-availability.type=file", "-D", f"high-availability.storageDir=file://{tmp_path / 'ha'}")
    cluster = SessionCluster(taskmanagers=2, slots=2, extra=ha if CHAOS else ())
    try:
        job_id = submit(cluster, job_file(tmp_path, kafka.bootstrap, source_topic, out_topic))
        killed_at_ms = -1
        for batch, kind in zip(batches[1:], kinds, strict=True):
            wait_until(
                lambda since=killed_at_ms: running(cluster, job_id) and completed_since(cluster, job_id, since),
                timeout=120,
                what="a checkpoint completed after the previous kill",
            )
            # the next input arrives and, at a random moment while it is processed, a TaskManager dies
            produce(kafka.bootstrap, source_topic, [(v % PARTITIONS, None, str(v).encode()) for v in batch])
            time.sleep(rng.uniform(0.0, 0.3))  # a random moment, not a wait for a condition
            killed_at_ms = int(time.time() * 1000)
            if kind == "taskmanager":
                cluster.kill_taskmanager(rng.choice([tm for tm in cluster.tms if tm.poll() is None]))
                cluster.add_taskmanager(2)
            else:
                cluster.kill_jobmanager()
                cluster.restart_jobmanager()

        def all_lines_visible() -> bool:
            lines = {m.value().decode() for m in consume_all(kafka.bootstrap, out_topic, PARTITIONS)}
            return lines >= set(expected)

        wait_until(all_lines_visible, timeout=180, what="every expected line committed")
        state = wait_until(lambda: running(cluster, job_id) and "RUNNING", timeout=60, what="the job running")
        assert state == "RUNNING", cluster.get(f"/jobs/{job_id}/exceptions")
        # the kills did fail the job over: it restored from checkpoints
        assert cluster.get(f"/jobs/{job_id}/checkpoints")["counts"]["restored"] >= 1
    finally:
        cluster.close()
    got = Counter(m.value().decode() for m in consume_all(kafka.bootstrap, out_topic, PARTITIONS))
    if kafka.is_mock:
        repeated = sum((got - expected).values())
        print(f"lines repeated on the mock (uncommitted transactions of killed attempts): {repeated}")
        assert set(got) == set(expected), f"seed {seed}"
    else:
        assert got == expected, f"seed {seed}: duplicated {got - expected}, lost {expected - got}"


def test_submission_refuses_a_transaction_timeout_shorter_than_the_checkpoint_interval(kafka, tmp_path):
    out_topic = kafka.new_topic(1, "out")
    job = tmp_path / "short_timeout.py"
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Types
        from strom.common.serialization import SimpleStringSchema
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors.kafka import DeliveryGuarantee, KafkaRecordSerializationSchema, KafkaSink

        env = StreamExecutionEnvironment.get_execution_environment()
        env.configure(Configuration({{"execution.checkpointing.interval": "10 s",
                                      "state.checkpoints.dir": "file://{tmp_path / "chk"}"}}))
        sink = (KafkaSink.builder().set_bootstrap_servers({kafka.bootstrap!r})
                .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic({out_topic!r})
                                       .set_value_serialization_schema(SimpleStringSchema()).build())
                .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE).set_transactional_id_prefix("short")
                .set_property("transaction.timeout.ms", "5000").build())
        env.from_collection(["a"], type_info=Types.STRING()).sink_to(sink)
        env.execute("short transaction timeout")
    """)
    )
    cluster = SessionCluster(taskmanagers=1, slots=1)
    try:
        proc = cluster.cli("submit", str(job))
    finally:
        cluster.close()
    assert proc.returncode != 0
    assert "transaction.timeout.ms (5000)" in proc.stderr and "execution.checkpointing.interval" in proc.stderr, (
        proc.stderr
    )
