"""JdbcSink.exactly_once_sink when the task dies between PREPARE TRANSACTION and COMMIT PREPARED.

The first commit of the job (a checkpoint completed, its transactions prepared) fails before it
reaches the database, so the prepared transactions stay in pg_prepared_xacts while the task fails.
The restarted job restores that checkpoint (or a later one) and must commit exactly those prepared
transactions: at the end the table equals the plain-Python reference rows (each once) and no
transaction of the sink's prefix is left prepared. The failure is injected, not timed: it always
lands in the window between prepare and commit.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from strom.common import Types, WatermarkStrategy
from strom.connectors.sink_base import Committer
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.connectors.jdbc import JdbcExactlyOnceOptions, JdbcExecutionOptions, JdbcSink

from tests.connectors.test_jdbc_sink import ROW, connection, create_table, prepared_of, table_rows
from tests.engine.failover_testing import run_with_restarts

COUNT = 3_000


class _CommitFailingOnce(Committer):
    """The sink's committer, except that the job's first commit records what it was asked to commit and
    what the server holds prepared, then fails before COMMIT PREPARED (once per job: a marker file)."""

    def __init__(self, inner: Committer, marker: str, dsn: str) -> None:
        self.inner, self.marker, self.dsn = inner, marker, dsn

    def commit(self, committables: list[Any]) -> None:
        if committables and not os.path.exists(self.marker):
            import psycopg

            with psycopg.connect(self.dsn) as c:
                prepared = [r[0] for r in c.execute("SELECT gid FROM pg_prepared_xacts")]
            try:
                with open(self.marker, "x") as f:
                    json.dump({"committables": committables, "prepared": prepared}, f)
            except FileExistsError:
                return self.inner.commit(committables)  # the other subtask failed first
            raise RuntimeError("injected failure between PREPARE TRANSACTION and COMMIT PREPARED")
        return self.inner.commit(committables)

    def close(self) -> None:
        self.inner.close()


class _SinkFailingAtFirstCommit(JdbcSink):
    def __init__(self, *args: Any, marker: str, dsn: str) -> None:
        super().__init__(*args)
        self.marker, self.dsn = marker, dsn

    def create_committer(self) -> Committer:
        return _CommitFailingOnce(super().create_committer(), self.marker, self.dsn)


def test_a_failure_between_prepare_and_commit_commits_the_restored_checkpoints_transactions(
    postgres, table_name, tmp_path: Path
):
    create_table(postgres, table_name)
    prefix = f"pc-{table_name}"
    marker = str(tmp_path / "failed-commit.json")
    sink = _SinkFailingAtFirstCommit(
        f"INSERT INTO {table_name} VALUES (?, ?, ?)", ROW, connection(postgres),
        JdbcExecutionOptions.builder().with_batch_size(100).with_max_retries(0).build(),
        JdbcExactlyOnceOptions.builder().with_transaction_id_prefix(prefix).build(),
        marker=marker, dsn=postgres.dsn,
    )
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    src = DataGeneratorSource(lambda i: i, COUNT, rate_limit=3_000.0, type_info=Types.LONG())
    (env.from_source(src, WatermarkStrategy.no_watermarks(), "gen")
        .map(lambda v: (v, f"n{v % 13}", v * 3), output_type=ROW)
        .add_sink(sink).uid("jdbc-sink"))
    job = run_with_restarts(env, "jdbc prepare-commit failure")

    assert job.restarts == 1 and job.restored_checkpoint_id is not None
    with open(marker) as f:
        at_failure = json.load(f)
    # the failure struck between prepare and commit: what the checkpoint held was prepared, not committed
    assert at_failure["committables"] and set(at_failure["committables"]) <= set(at_failure["prepared"])
    assert Counter(table_rows(postgres, table_name)) == Counter((i, f"n{i % 13}", i * 3) for i in range(COUNT))
    assert prepared_of(postgres, prefix) == []
