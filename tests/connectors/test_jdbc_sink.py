"""JdbcSink against a real PostgreSQL server: append and upsert jobs, batching by size and interval,
retries on a new connection, exactly-once through two-phase commit across a failure and restore,
and the one-line errors of an unreachable database or a bad statement. Table contents are
compared with plain-Python references."""

from __future__ import annotations

import socket
from collections import Counter

import pytest
from strom.common import Row, Types, WatermarkStrategy
from strom.connectors.sink_base import SinkInitContext
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExactlyOnceOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from strom.runtime.local_executor import JobExecutionError
from strom.runtime.metrics import MetricGroup
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

from tests.engine.failover_testing import FailOnceAt, run_with_restarts

ROW = Types.ROW([Types.INT(), Types.STRING(), Types.LONG()])


def connection(server, url: str | None = None) -> JdbcConnectionOptions:
    b = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(url or server.jdbc_url)
    b = b.with_driver_name("org.postgresql.Driver").with_user_name(server.user)
    return (b.with_password(server.password) if server.password else b).build()


def create_table(server, name: str, *, key: bool = False) -> None:
    with server.connect() as c:
        c.execute(f"CREATE TABLE {name} (id INT {'PRIMARY KEY' if key else ''}, name TEXT, amount BIGINT)")


def table_rows(server, name: str) -> list[tuple]:
    with server.connect() as c:
        return c.execute(f"SELECT id, name, amount FROM {name}").fetchall()


def prepared_of(server, prefix: str) -> list[str]:
    with server.connect() as c:
        return [r[0] for r in c.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE %s", (prefix + ":%",))]


def test_append_job_writes_every_row(postgres, table_name):
    create_table(postgres, table_name)
    rows = [Row(i, f"name-{i % 7}", i * 10) for i in range(2_000)]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    options = JdbcExecutionOptions.builder().with_batch_size(97).with_batch_interval_ms(200).with_max_retries(2)
    env.from_collection(rows, type_info=ROW).add_sink(
        JdbcSink.sink(f"INSERT INTO {table_name} (id, name, amount) VALUES (?, ?, ?)", ROW,
                      connection(postgres), options.build())
    )
    env.execute("jdbc append")
    assert Counter(table_rows(postgres, table_name)) == Counter(tuple(r) for r in rows)


def test_upsert_by_primary_key_keeps_the_last_value_of_each_key(postgres, table_name):
    create_table(postgres, table_name, key=True)
    events = [(i % 37, f"v{i}", i) for i in range(3_000)]
    reference: dict[int, tuple] = {}
    for k, name, amount in events:
        reference[k] = (k, name, amount)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    sql = (f"INSERT INTO {table_name} (id, name, amount) VALUES (?, ?, ?) "
           "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, amount = EXCLUDED.amount")
    (env.from_collection(events, type_info=Types.TUPLE([Types.INT(), Types.STRING(), Types.LONG()]))
        .key_by(lambda e: e[0])  # one subtask per key keeps each key's updates in order
        .sink_to(JdbcSink.sink(sql, ROW, connection(postgres),
                               JdbcExecutionOptions.builder().with_batch_size(50).build())))
    env.execute("jdbc upsert")
    assert sorted(table_rows(postgres, table_name)) == sorted(reference.values())


def writer_for(sink, clock: ManualClock, *, checkpointing: bool = False, uid: str = "sink", subtask: int = 0,
               parallelism: int = 1):
    pts = ProcessingTimeService(clock)
    ctx = SinkInitContext(subtask, parallelism, 0, pts, checkpointing=checkpointing, operator_uid=uid)
    return sink.create_writer(ctx), pts


def test_a_batch_is_written_at_its_size_or_after_its_interval(postgres, table_name):
    create_table(postgres, table_name)
    sink = JdbcSink.sink(f"INSERT INTO {table_name} VALUES (?, ?, ?)", ROW, connection(postgres),
                         JdbcExecutionOptions.builder().with_batch_size(3).with_batch_interval_ms(1_000).build())
    clock = ManualClock(0)
    writer, pts = writer_for(sink, clock)
    try:
        for i in range(4):
            writer.write((i, "x", i), None)
        assert len(table_rows(postgres, table_name)) == 3  # the size reached 3: one batch
        clock.advance(999)
        pts.run_due()
        assert len(table_rows(postgres, table_name)) == 3
        clock.advance(1)
        pts.run_due()  # the interval passed: the fourth row goes
        assert sorted(table_rows(postgres, table_name)) == [(i, "x", i) for i in range(4)]
    finally:
        writer.close()


def test_num_records_out_counts_the_rows_the_database_holds(postgres, table_name):
    """Flink's sink writer metric numRecordsOut, read from the writer's metric group, against the table."""
    create_table(postgres, table_name)
    sink = JdbcSink.sink(f"INSERT INTO {table_name} VALUES (?, ?, ?)", ROW, connection(postgres),
                         JdbcExecutionOptions.builder().with_batch_size(3).with_batch_interval_ms(0).build())
    group = MetricGroup()
    writer = sink.create_writer(SinkInitContext(0, 1, 0, ProcessingTimeService(ManualClock(0)), metric_group=group))
    try:
        records_out = dict(group.registered_metrics())["numRecordsOut"]
        for i in range(5):
            writer.write((i, "x", i), None)
        assert records_out.get_count() == len(table_rows(postgres, table_name)) == 3  # one batch; two buffered
        writer.flush(False)
        assert records_out.get_count() == len(table_rows(postgres, table_name)) == 5
    finally:
        writer.close()


def test_a_lost_connection_is_retried_on_a_new_one(postgres, table_name):
    create_table(postgres, table_name)
    sink = JdbcSink.sink(f"INSERT INTO {table_name} VALUES (?, ?, ?)", ROW, connection(postgres),
                         JdbcExecutionOptions.builder().with_batch_size(1000).with_max_retries(2).build())
    writer, _ = writer_for(sink, ManualClock(0))
    try:
        writer.write((1, "a", 1), None)
        with postgres.connect() as admin:  # the server ends the writer's session (as a restart would)
            pid = writer._conn.info.backend_pid
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        writer.flush(False)
        assert table_rows(postgres, table_name) == [(1, "a", 1)]
        assert writer._conn.info.backend_pid != pid
    finally:
        writer.close()


def test_a_bad_statement_fails_at_once_naming_it(postgres, table_name):
    create_table(postgres, table_name)
    sql = f"INSERT INTO {table_name} (id, nosuchcolumn) VALUES (?, ?)"
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([(1, 2)]).add_sink(
        JdbcSink.sink(sql, Types.ROW([Types.INT(), Types.INT()]), connection(postgres)))
    with pytest.raises(JobExecutionError) as info:
        env.execute("bad statement")
    lines = [ln for ln in str(info.value).splitlines() if "check the statement" in ln]
    assert lines and sql in lines[0] and "nosuchcolumn" in lines[0], str(info.value)


def test_an_unreachable_database_fails_the_task_naming_the_address_and_the_option(postgres):
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # nothing listens there once closed
    url = f"jdbc:postgresql://127.0.0.1:{port}/nowhere"
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([(1, "a", 1)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO t VALUES (?, ?, ?)", ROW, connection(postgres, url)))
    with pytest.raises(JobExecutionError) as info:
        env.execute("unreachable")
    lines = [ln for ln in str(info.value).splitlines() if f"127.0.0.1:{port}/nowhere" in ln]
    assert lines and "JdbcConnectionOptions.with_url" in lines[0], str(info.value)


COUNT = 6_000
FAIL_AT = 2_500


def test_exactly_once_sink_writes_each_row_once_across_a_failure_and_restore(postgres, table_name):
    create_table(postgres, table_name)
    prefix = f"eo-{table_name}"
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    src = DataGeneratorSource(lambda i: i, COUNT, rate_limit=4_000.0, type_info=Types.LONG())
    (env.from_source(src, WatermarkStrategy.no_watermarks(), "gen")
        .map(FailOnceAt(FAIL_AT), output_type=Types.LONG())
        .map(lambda v: (v, f"n{v % 13}", v * 3), output_type=ROW)
        .add_sink(JdbcSink.exactly_once_sink(
            f"INSERT INTO {table_name} VALUES (?, ?, ?)", ROW, connection(postgres),
            JdbcExecutionOptions.builder().with_batch_size(200).with_max_retries(0).build(),
            JdbcExactlyOnceOptions.builder().with_transaction_id_prefix(prefix).build()))
        .uid("jdbc-sink"))
    job = run_with_restarts(env, "exactly-once jdbc")
    assert job.restarts == 1 and job.restored_checkpoint_id is not None
    expected = Counter((i, f"n{i % 13}", i * 3) for i in range(COUNT))
    assert Counter(table_rows(postgres, table_name)) == expected
    assert prepared_of(postgres, prefix) == []


def test_a_restored_writer_rolls_back_its_leftovers_only(postgres, table_name):
    """A transaction prepared after the restored checkpoint (by a dead attempt) is rolled back by the
    subtask it maps to; another sink's and another subtask's stay."""
    create_table(postgres, table_name)
    prefix = f"lo-{table_name}"
    sink = JdbcSink.exactly_once_sink(
        f"INSERT INTO {table_name} VALUES (?, ?, ?)", ROW, connection(postgres),
        jdbc_exactly_once_options=JdbcExactlyOnceOptions.builder().with_transaction_id_prefix(prefix).build())
    dead, _ = writer_for(sink, ManualClock(0), checkpointing=True, subtask=1, parallelism=3)
    other, _ = writer_for(sink, ManualClock(0), checkpointing=True, subtask=2, parallelism=3)
    foreign, _ = writer_for(sink, ManualClock(0), checkpointing=True, subtask=1, parallelism=3, uid="other-sink")
    for w in (dead, other, foreign):
        w.write((1, "x", 1), None)
    committed = dead.prepare_commit()
    sink.create_committer().commit(committed)
    leftover = (dead.write((2, "y", 2), None), dead.prepare_commit())[1]
    kept = [*other.prepare_commit(), *foreign.prepare_commit()]
    for w in (dead, other, foreign):
        w.close()  # as a killed process: the prepared transactions stay on the server
    assert sorted(prepared_of(postgres, prefix)) == sorted([*leftover, *kept])
    # the restored subtask 1 of parallelism 2: slot 1 maps to it, slot 2 does not
    restored, _ = writer_for(sink, ManualClock(0), checkpointing=True, subtask=1, parallelism=2)
    restored.close()
    assert sorted(prepared_of(postgres, prefix)) == sorted(kept)
    assert table_rows(postgres, table_name) == [(1, "x", 1)]
    with postgres.connect() as c:  # tidy: the kept ones hold no locks past this test
        for gid in kept:
            c.execute(f"ROLLBACK PREPARED '{gid}'")
    committer = sink.create_committer()
    committer.commit(committed)  # committed before: a second commit is a no-op


def test_exactly_once_needs_checkpointing(postgres, table_name):
    create_table(postgres, table_name)
    sink = JdbcSink.exactly_once_sink(f"INSERT INTO {table_name} VALUES (?, ?, ?)", ROW, connection(postgres))
    with pytest.raises(ValueError, match="execution.checkpointing.interval"):
        writer_for(sink, ManualClock(0), checkpointing=False)
