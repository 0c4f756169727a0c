"""JdbcSink.exactly_once_sink under kill -9 of the TaskManager on a session cluster of real processes.

A rate-limited generator writes rows through the two-phase-commit JDBC sink (checkpoints every
300 ms). The TaskManager running every task is killed with SIGKILL twice, each time after a
checkpoint completed since the previous kill, and replaced. At the end the table must hold exactly
the plain-Python reference rows (nothing lost, nothing twice), and no prepared transaction of the
sink may be left in `pg_prepared_xacts` (a leftover would hold its locks forever).
"""

from __future__ import annotations

import random
import textwrap
from collections import Counter
from pathlib import Path

from tests.engine.chaos_testing import kill_taskmanagers_until_finished
from tests.engine.cluster_testing import SessionCluster
from tests.engine.test_cluster import submit

COUNT = 8_000
RATE = 1_000.0  # rows/s: ~8 s of input, room for two kills and restores
KILLS = 2


def jdbc_job(tmp_path: Path, postgres, table: str, prefix: str) -> str:
    conf = {
        "execution.checkpointing.interval": "300 ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "20",
        "restart-strategy.fixed-delay.delay": "200 ms",
        "state.checkpoints.dir": f"file://{tmp_path / 'chk'}",
    }
    job = tmp_path / "jdbc_job.py"
    job.write_text(textwrap.dedent(f"""
        from strom.common import Configuration, Types, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.jdbc import (
            JdbcConnectionOptions, JdbcExactlyOnceOptions, JdbcExecutionOptions, JdbcSink)

        ROW = Types.ROW([Types.INT(), Types.STRING(), Types.LONG()])
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.configure(Configuration({conf!r}))
        src = env.from_source(DataGeneratorSource(lambda i: i, {COUNT}, {RATE!r}), WatermarkStrategy.no_watermarks(),
                              "numbers").uid("numbers")
        rows = src.map(lambda i: (i, "n%d" % (i % 13), i * 3), output_type=ROW).uid("rows")
        connection = (JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
                      .with_url({postgres.jdbc_url!r}).with_user_name({postgres.user!r})
                      .with_password({postgres.password!r}).build())
        rows.add_sink(JdbcSink.exactly_once_sink(
            "INSERT INTO {table} (id, name, amount) VALUES (?, ?, ?)", ROW, connection,
            JdbcExecutionOptions.builder().with_batch_size(100).with_batch_interval_ms(100).with_max_retries(0).build(),
            JdbcExactlyOnceOptions.builder().with_transaction_id_prefix({prefix!r}).build())).uid("jdbc-sink")
        env.execute("jdbc exactly-once")
    """))
    return str(job)


def test_exactly_once_rows_and_no_prepared_leftovers_under_kill_9(tmp_path, postgres, table_name):
    with postgres.connect() as c:
        c.execute(f"CREATE TABLE {table_name} (id INT, name TEXT, amount BIGINT)")
    prefix = f"chaos-{table_name}"
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        job_id = submit(cluster, jdbc_job(tmp_path, postgres, table_name, prefix))
        kill_taskmanagers_until_finished(cluster, job_id, kills=KILLS, rng=rng, slots=2)
    finally:
        cluster.close()
    with postgres.connect() as c:
        rows = Counter(c.execute(f"SELECT id, name, amount FROM {table_name}").fetchall())
        leftovers = c.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE %s", (prefix + ":%",)).fetchall()
    assert rows == Counter((i, f"n{i % 13}", i * 3) for i in range(COUNT)), f"seed {seed}"
    assert leftovers == []
