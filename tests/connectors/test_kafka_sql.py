"""`'connector' = 'kafka'` and `'upsert-kafka'` in SQL on the librdkafka mock cluster (or the cluster of
STROM_TEST_KAFKA_BOOTSTRAP): kafka -> GROUP BY -> upsert-kafka read back both with a plain consumer (reduced
by key in Python) and as an upsert table (reduced changelog), each equal to DuckDB's answer; append kafka ->
kafka exactly-once read with read_committed; key/value formats json/csv/avro/raw; startup modes against the
offsets produced; and the errors of a missing topic, an unreachable broker and bad options."""

from __future__ import annotations

import json
import random
import socket
import threading
from collections import Counter
from typing import Any

import pytest
from strom.common.row import RowKind
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.errors import ValidationException

from tests.connectors.kafka_testing import consume_all, kafka_fixture, produce  # noqa: F401 - the `kafka` fixture
from tests.table.reference import duckdb_table, normalize, reduce_changelog


def table_env(parallelism: int = 2, **config: str) -> Any:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    for k, v in config.items():
        t_env.get_config().set(k, v)
    return t_env


def opts(**options: str) -> str:
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def kafka_options(kafka: Any, topic: str, **extra: str) -> dict[str, str]:
    return {"connector": "kafka", "topic": topic, "properties.bootstrap.servers": kafka.bootstrap, **extra}


def create(t_env: Any, head: str, options: dict[str, str]) -> None:
    """CREATE TABLE `head` WITH (options)."""
    t_env.execute_sql(f"CREATE TABLE {head} WITH ({opts(**options)})")


def _events(n: int, seed: int) -> list[tuple[int, str, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(25), rng.choice(["x", "y", "z"]), rng.randrange(1000)) for _ in range(n)]


def _produce_json(kafka: Any, topic: str, events: list[tuple[int, str, int]]) -> None:
    produce(kafka.bootstrap, topic, [(None, str(k).encode(), json.dumps({"k": k, "tag": t, "v": v}).encode())
                                     for k, t, v in events])


def test_kafka_group_by_into_upsert_kafka_equals_duckdb_read_both_ways(kafka):
    events = _events(2_000, seed=1)
    source, sink = kafka.new_topic(3, "events"), kafka.new_topic(2, "totals")
    _produce_json(kafka, source, events)
    t_env = table_env()
    bounded = {"format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}
    create(t_env, "events (k INT, tag STRING, v BIGINT)", kafka_options(kafka, source, **bounded))
    upsert = {"connector": "upsert-kafka", "topic": sink, "properties.bootstrap.servers": kafka.bootstrap,
              "key.format": "json", "value.format": "json"}
    create(t_env, "totals (k INT, n BIGINT, total BIGINT, top STRING, PRIMARY KEY (k) NOT ENFORCED)", upsert)
    t_env.execute_sql("INSERT INTO totals SELECT k, COUNT(*), SUM(v), MAX(tag) FROM events GROUP BY k").wait(120_000)
    expected = duckdb_table({"events": ([("k", "INT"), ("tag", "VARCHAR"), ("v", "BIGINT")], events)},
                            "SELECT k, COUNT(*), SUM(v), MAX(tag) FROM events GROUP BY k")
    # 1. a plain consumer: the last record of each key (a tombstone deletes it), keys are the JSON key rows
    last: dict[int, tuple | None] = {}
    for m in consume_all(kafka.bootstrap, sink, 2):
        key = json.loads(m.key())["k"]
        value = m.value()
        last[key] = None if value is None else tuple(json.loads(value)[c] for c in ("k", "n", "total", "top"))
    assert Counter(normalize(v) for v in last.values() if v is not None) == expected
    # 2. the topic as an upsert table: ChangelogNormalize's changelog reduces to the same table
    create(t_env, "totals_read (k INT, n BIGINT, total BIGINT, top STRING, PRIMARY KEY (k) NOT ENFORCED)",
           {**upsert, "scan.bounded.mode": "latest-offset"})
    with t_env.execute_sql("SELECT * FROM totals_read").collect() as it:
        changelog = list(it)
    assert reduce_changelog(changelog) == expected
    assert sum(1 for r in changelog if r.get_row_kind() is RowKind.INSERT) == len(expected)  # one +I per key


def test_upsert_kafka_source_normalizes_upserts_and_tombstones_into_a_changelog(kafka):
    """Worked by hand: k=1 a, k=1 a again (nothing), k=1 b (-U a +U b), k=2 c, tombstone 2 (-D c), tombstone 3
    (never seen: nothing)."""
    topic = kafka.new_topic(1, "upserts")
    records = [(b"1", b"1,a"), (b"1", b"1,a"), (b"1", b"1,b"), (b"2", b"2,c"), (b"2", None), (b"3", None)]
    produce(kafka.bootstrap, topic, [(0, k, v) for k, v in records])
    t_env = table_env(parallelism=1)
    create(t_env, "u (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)", {
        "connector": "upsert-kafka", "topic": topic, "properties.bootstrap.servers": kafka.bootstrap,
        "key.format": "csv", "value.format": "csv", "scan.bounded.mode": "latest-offset"})
    with t_env.execute_sql("SELECT id, name FROM u").collect() as it:
        rows = [(r.get_row_kind(), tuple(r)) for r in it]
    assert rows == [(RowKind.INSERT, (1, "a")), (RowKind.UPDATE_BEFORE, (1, "a")), (RowKind.UPDATE_AFTER, (1, "b")),
                    (RowKind.INSERT, (2, "c")), (RowKind.DELETE, (2, "c"))]


def test_append_kafka_to_kafka_exactly_once_is_read_once_with_read_committed(kafka, tmp_path):
    events = _events(1_500, seed=2)
    source, sink = kafka.new_topic(2, "in"), kafka.new_topic(2, "out")
    produce(kafka.bootstrap, source, [(None, None, f"{k},{t},{v}".encode()) for k, t, v in events])
    t_env = table_env(**{"execution.checkpointing.interval": "200 ms",
                         "state.checkpoints.dir": f"file://{tmp_path / 'chk'}"})
    create(t_env, "src (k INT, tag STRING, v BIGINT)", kafka_options(kafka, source, **{
        "format": "csv", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
    create(t_env, "dst (k INT, tag STRING, doubled BIGINT)", kafka_options(kafka, sink, **{
        "value.format": "json", "key.format": "raw", "key.fields": "tag", "value.fields-include": "ALL",
        "sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": f"sql-{sink}"}))
    t_env.execute_sql("INSERT INTO dst SELECT k, tag, v * 2 FROM src WHERE v >= 500").wait(120_000)
    out = consume_all(kafka.bootstrap, sink, 2, isolation="read_committed")
    got = Counter((m.key().decode(), *(json.loads(m.value())[c] for c in ("k", "doubled"))) for m in out)
    assert got == Counter((t, k, v * 2) for k, t, v in events if v >= 500)


@pytest.mark.parametrize(("key_format", "value_format"), [("avro", "avro"), ("json", "csv"), ("raw", "json")])
def test_rows_round_trip_through_key_and_value_formats(kafka, key_format, value_format):
    topic = kafka.new_topic(2, "fmt")
    rows = [(f"id-{i}", i, i * 0.5, i % 3 == 0) for i in range(200)] + [("id-none", None, None, None)]
    t_env = table_env()
    t_env.create_temporary_view("rows_v", t_env.from_elements(rows, ["id", "n", "x", "flag"]))
    layout = {"key.format": key_format, "key.fields": "id", "value.format": value_format,
              "value.fields-include": "EXCEPT_KEY" if value_format == "csv" else "ALL"}
    create(t_env, "t (id STRING, n INT, x DOUBLE, flag BOOLEAN)", kafka_options(kafka, topic, **{
        **layout, "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
    t_env.execute_sql("INSERT INTO t SELECT * FROM rows_v").wait(120_000)
    with t_env.execute_sql("SELECT * FROM t").collect() as it:
        assert Counter(tuple(r) for r in it) == Counter(rows)


def _read_lines(kafka: Any, t_env: Any, name: str, topic: str, **startup: str) -> Counter:
    create(t_env, f"{name} (line STRING)", kafka_options(kafka, topic, **{
        "format": "raw", "scan.bounded.mode": "latest-offset", **startup}))
    with t_env.execute_sql(f"SELECT line FROM {name}").collect() as it:
        return Counter(r[0] for r in it)


def test_startup_modes_start_where_flink_does(kafka):
    topic = kafka.new_topic(2, "modes")
    produce(kafka.bootstrap, topic, [(p, None, f"{p}-{i}".encode()) for i in range(10) for p in (0, 1)])
    t_env = table_env(parallelism=1)
    everything = Counter(f"{p}-{i}" for i in range(10) for p in (0, 1))
    assert _read_lines(kafka, t_env, "e", topic, **{"scan.startup.mode": "earliest-offset"}) == everything
    assert _read_lines(kafka, t_env, "l", topic, **{"scan.startup.mode": "latest-offset"}) == Counter()
    assert _read_lines(kafka, t_env, "so", topic, **{
        "scan.startup.mode": "specific-offsets",
        "scan.startup.specific-offsets": "partition:0,offset:8;partition:1,offset:12"}) == Counter(["0-8", "0-9"])


def test_group_offsets_start_after_what_the_group_committed(kafka):
    from confluent_kafka import Consumer, TopicPartition

    topic = kafka.new_topic(1, "group")
    produce(kafka.bootstrap, topic, [(0, None, f"r{i}".encode()) for i in range(6)])
    group = f"g-{topic}"
    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "log_level": 3})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    finally:
        c.close()
    t_env = table_env(parallelism=1)
    assert _read_lines(kafka, t_env, "g", topic, **{"scan.startup.mode": "group-offsets",
                                                     "properties.group.id": group}) == Counter(["r4", "r5"])


def test_timestamp_startup_mode_starts_at_the_first_record_at_or_after_it(kafka):
    if kafka.is_mock:
        pytest.skip("librdkafka's mock cluster answers ListOffsets by timestamp with -1 (no such offset) for every "
                    "timestamp; run with STROM_TEST_KAFKA_BOOTSTRAP against a real cluster")
    from confluent_kafka import Producer

    topic = kafka.new_topic(1, "ts")
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for n in range(10):
        producer.produce(topic, f"r{n}".encode(), partition=0, timestamp=5000 + n)
    assert producer.flush(30) == 0
    t_env = table_env(parallelism=1)
    assert _read_lines(kafka, t_env, "ts", topic, **{"scan.startup.mode": "timestamp",
                                                      "scan.startup.timestamp-millis": "5007"}) == \
        Counter(["r7", "r8", "r9"])


def test_a_missing_topic_is_an_error_naming_it(kafka):
    t_env = table_env(parallelism=1)
    create(t_env, "nothing (line STRING)", kafka_options(kafka, "no-such-topic-xyz", **{
        "format": "raw", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
    with pytest.raises(Exception, match="no-such-topic-xyz"):
        with t_env.execute_sql("SELECT * FROM nothing").collect() as it:
            list(it)


def test_an_unreachable_broker_is_an_error_naming_the_address_and_the_option():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t_env = table_env(parallelism=1)
    create(t_env, "far (line STRING)", {
        "connector": "kafka", "topic": "t", "properties.bootstrap.servers": f"127.0.0.1:{port}", "format": "raw",
        "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset",
        "properties.socket.timeout.ms": "2000", "properties.socket.connection.setup.timeout.ms": "2000"})
    with pytest.raises(Exception) as e:
        with t_env.execute_sql("SELECT * FROM far").collect() as it:
            list(it)
    assert f"127.0.0.1:{port}" in str(e.value) and "'properties.bootstrap.servers'" in str(e.value)


@pytest.mark.parametrize(("connector", "options", "message"), [
    ("upsert-kafka", {"key.format": "json", "value.format": "json"}, "PRIMARY KEY"),
    ("kafka", {"format": "json", "scan.startup.mode": "newest"}, "'scan.startup.mode' must be one of"),
    ("kafka", {"format": "json", "scan.startup.mode": "timestamp"}, "'scan.startup.timestamp-millis'"),
    ("kafka", {"format": "json", "sink.delivery-guarantee": "exactly-once"}, "'sink.transactional-id-prefix'"),
    ("kafka", {"format": "json", "key.fields": "id"}, "'key.fields' needs 'key.format'"),
    ("kafka", {"format": "xml"}, "unknown format 'xml'"),
    ("kafka", {}, "'format' or 'value.format'"),
    ("kafka", {"format": "json", "scan.startup.mode": "specific-offsets",
               "scan.startup.specific-offsets": "p0:o1"}, "'scan.startup.specific-offsets'"),
])
def test_bad_kafka_options_are_refused_at_create_table(connector, options, message):
    t_env = table_env(parallelism=1)
    with pytest.raises(ValidationException, match="table 'bad'") as e:
        create(t_env, "bad (id INT, name STRING)", {
            "connector": connector, "topic": "t", "properties.bootstrap.servers": "localhost:9092", **options})
    assert message in str(e.value)


def test_an_idle_partition_does_not_hold_back_windows_with_scan_watermark_idle_timeout(kafka):
    """Rows only in partition 0 of 2 (one source subtask each): the empty subtask goes idle after the timeout, so
    the watermark of the other (12 s) closes the windows [0, 5) and [5, 10) while the job still runs."""
    topic = kafka.new_topic(2, "idle")
    produce(kafka.bootstrap, topic, [(0, None, json.dumps({"k": 1, "ts": f"2024-01-01 00:00:{s:02d}.000"}).encode())
                                     for s in range(13)])
    t_env = table_env(parallelism=2)
    create(t_env, "ev (k INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)", kafka_options(kafka, topic, **{
        "format": "json", "scan.startup.mode": "earliest-offset", "scan.watermark.idle-timeout": "300 ms"}))
    result = t_env.execute_sql("SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), "
                               "INTERVAL '5' SECOND)) GROUP BY window_start, window_end")
    rows: list[tuple] = []
    it = result.collect()
    reader = threading.Thread(target=lambda: rows.extend(tuple(next(it)) for _ in range(2)), daemon=True)
    reader.start()
    reader.join(60)
    it.close()  # cancels the unbounded job
    assert sorted((r[0].second, r[1]) for r in rows) == [(0, 5), (5, 5)]


def test_key_fields_prefix_keeps_key_and_value_columns_of_one_name_apart(kafka):
    """Flink's key.fields-prefix: the table's `k_id` is the key format's field `id`; the value has its own `id`."""
    topic = kafka.new_topic(1, "prefix")
    rows = [(f"key-{i}", i, i * 10) for i in range(20)]
    t_env = table_env(parallelism=1)
    t_env.create_temporary_view("rows_v", t_env.from_elements(rows, ["k_id", "id", "n"]))
    create(t_env, "t (k_id STRING, id INT, n INT)", kafka_options(kafka, topic, **{
        "key.format": "json", "key.fields": "k_id", "key.fields-prefix": "k_", "value.format": "json",
        "value.fields-include": "EXCEPT_KEY", "scan.startup.mode": "earliest-offset",
        "scan.bounded.mode": "latest-offset"}))
    t_env.execute_sql("INSERT INTO t SELECT * FROM rows_v").wait(120_000)
    messages = consume_all(kafka.bootstrap, topic, 1)
    assert sorted((m.key().decode(), m.value().decode()) for m in messages) == sorted(
        (json.dumps({"id": k}, separators=(",", ":")), json.dumps({"id": i, "n": n}, separators=(",", ":")))
        for k, i, n in rows)
    with t_env.execute_sql("SELECT * FROM t").collect() as it:
        assert Counter(tuple(r) for r in it) == Counter(rows)


def test_key_fields_prefix_needs_except_key():
    t_env = table_env(parallelism=1)
    with pytest.raises(ValidationException, match="'key.fields-prefix' needs 'value.fields-include' = 'EXCEPT_KEY'"):
        create(t_env, "bad (k_id STRING, n INT)", {
            "connector": "kafka", "topic": "t", "properties.bootstrap.servers": "localhost:9092",
            "key.format": "json", "key.fields": "k_id", "key.fields-prefix": "k_", "value.format": "json"})
