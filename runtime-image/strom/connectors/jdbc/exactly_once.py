"""The exactly-once JDBC writer and committer: PostgreSQL's two-phase commit under Flink's protocol.

Between two checkpoint barriers a subtask writes its rows into one database transaction (begun with
psycopg's `tpc_begin(gid)`, batched like the at-least-once writer). Before the barrier the
transaction is prepared (`PREPARE TRANSACTION`: durable, invisible, survives the session) and its id
becomes the committable kept in the checkpoint; once the checkpoint completed, the committer runs
`COMMIT PREPARED`. A subtask restored from a checkpoint commits the ids the checkpoint holds (a
commit already done is skipped), then rolls back every other prepared transaction of its own
subtask slots under the sink's prefix: those were prepared after the restored checkpoint (their rows
are replayed) or by an attempt that died, and would otherwise hold their locks forever.

Transaction ids: `<prefix>:<sink>:<subtask>:<attempt token>:<n>` — the user's prefix, a hash of the
sink operator's uid, the subtask index, a random token per writer (ids never repeat across attempts)
and the count of transactions of this writer. The rows of a prepared transaction belong to one
subtask; old subtask j belongs to new subtask j % parallelism after rescaling, as the committables
do (`sink_writer`).
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from strom.connectors.jdbc.batching_writer import as_parameters
from strom.connectors.jdbc.connections import connect, first_line, is_connection_error, psycopg_module
from strom.connectors.jdbc.options import JdbcConnectionOptions
from strom.connectors.sink_base import Committer, PrecommittingSinkWriter, SinkInitContext, SinkWriterContext

log = logging.getLogger(__name__)

_UNDEFINED_OBJECT = "42704"  # COMMIT/ROLLBACK PREPARED of an id that does not exist (any more)


@dataclass(frozen=True, slots=True)
class TransactionIds:
    """Ids of one writer's transactions and the test which prepared ids belong to which subtask."""

    prefix: str
    sink: str
    subtask: int
    token: str

    @staticmethod
    def for_writer(prefix: str, operator_uid: str, subtask: int) -> TransactionIds:
        return TransactionIds(prefix, sink_hash(operator_uid), subtask, uuid.uuid4().hex[:12])

    def gid(self, n: int) -> str:
        return f"{self.prefix}:{self.sink}:{self.subtask}:{self.token}:{n}"

    def like_pattern(self) -> str:
        """The SQL LIKE pattern of every id of this sink (any subtask, any attempt)."""
        return f"{_like_escape(self.prefix)}:{_like_escape(self.sink)}:%"

    def is_leftover(self, gid: str, parallelism: int) -> bool:
        """A prepared transaction this subtask must roll back: of this sink, of a subtask slot that maps
        to this subtask, and not of this writer (the restored checkpoint's ones are committed before)."""
        parts = gid.split(":")
        if len(parts) != 5 or parts[0] != self.prefix or parts[1] != self.sink or not parts[2].isdigit():
            return False
        return int(parts[2]) % parallelism == self.subtask and parts[3] != self.token


def sink_hash(operator_uid: str) -> str:
    return hashlib.sha1(operator_uid.encode()).hexdigest()[:10]


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class PreparedTransactions:
    """COMMIT / ROLLBACK PREPARED and the list of prepared ids, on an autocommit connection (these
    statements cannot run inside a transaction block)."""

    def __init__(self, options: JdbcConnectionOptions, what: str) -> None:
        self._options = options
        self._what = what
        self._conn: Any = None

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self._options, autocommit=True, what=self._what)
        return self._conn

    def list(self, like: str) -> list[str]:
        rows = self._connection().execute(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE %s ORDER BY gid",
            (like,),
        ).fetchall()
        return [r[0] for r in rows]

    def finish(self, gid: str, *, commit: bool) -> bool:
        """COMMIT (or ROLLBACK) PREPARED gid; False when no such prepared transaction exists (done before)."""
        psycopg = psycopg_module()
        from psycopg import sql

        verb = "COMMIT PREPARED {}" if commit else "ROLLBACK PREPARED {}"
        try:
            self._connection().execute(sql.SQL(verb).format(sql.Literal(gid)))
            return True
        except psycopg.Error as e:
            if getattr(e, "sqlstate", None) == _UNDEFINED_OBJECT:
                return False
            raise

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
            self._conn = None


class JdbcExactlyOnceWriter(PrecommittingSinkWriter):
    def __init__(self, sink: Any, context: SinkInitContext) -> None:
        self._what = f"JdbcSink.exactly_once_sink (subtask {context.subtask_index + 1}/{context.parallelism})"
        if not context.checkpointing:
            raise ValueError(
                f"{self._what} commits with checkpoints, and this job takes none: set "
                "execution.checkpointing.interval (env.enable_checkpointing(ms)) or use JdbcSink.sink"
            )
        self._sink = sink
        self._sql = sink.statement
        self._size = sink.execution_options.batch_size
        self._interval = sink.execution_options.batch_interval_ms
        self._parallelism = context.parallelism
        self._ids = TransactionIds.for_writer(
            sink.exactly_once_options.transaction_id_prefix, context.operator_uid, context.subtask_index
        )
        self._count = 0
        self._in_transaction = False
        self._batch: list[tuple[Any, ...]] = []
        self._closed = False
        self._pts = context.processing_time_service
        self._conn: Any = connect(sink.connection_options, autocommit=False, what=self._what)
        # Flink's sink writer metric: rows written to the database (in the exactly-once sink: into its
        # open transaction)
        group = context.metric_group
        self._records_out = group.counter("numRecordsOut") if group is not None else None
        self._prepared = PreparedTransactions(sink.connection_options, self._what)
        self._check_prepared_transactions_enabled()
        # after the restore committed the checkpoint's transactions (restore_state runs before open)
        self._roll_back_leftovers()
        if self._interval > 0:
            self._pts.register_timer(self._pts.now() + self._interval, self._on_interval)

    def _check_prepared_transactions_enabled(self) -> None:
        value = self._conn.execute("SHOW max_prepared_transactions").fetchone()[0]
        self._conn.rollback()
        if int(value) <= 0:
            address = self._sink.connection_options.address().describe()
            raise ValueError(
                f"{self._what} needs PostgreSQL's two-phase commit, and the server at {address} has "
                "max_prepared_transactions = 0: set it above the sink's parallelism in postgresql.conf and "
                "restart the server"
            )

    def _roll_back_leftovers(self) -> None:
        leftovers = [g for g in self._prepared.list(self._ids.like_pattern())
                     if self._ids.is_leftover(g, self._parallelism)]
        for gid in leftovers:
            self._prepared.finish(gid, commit=False)
        if leftovers:
            log.info("%s rolled back %d prepared transaction(s) of earlier attempts", self._what, len(leftovers))

    # hot path: called per record
    def write(self, value: Any, context: SinkWriterContext) -> None:
        batch = self._batch
        batch.append(as_parameters(value))
        if len(batch) >= self._size:
            self._execute_batch()

    def _on_interval(self, now: int) -> None:
        if self._closed:
            return
        self._execute_batch()
        self._pts.register_timer(now + self._interval, self._on_interval)

    def _execute_batch(self) -> None:
        """Write the buffered rows into the open transaction (not visible before its commit). A failure
        fails the task: the transaction is lost with its connection, the restore replays its rows."""
        batch = self._batch
        if not batch:
            return
        try:
            if not self._in_transaction:
                self._count += 1
                self._conn.tpc_begin(self._ids.gid(self._count))
                self._in_transaction = True
            with self._conn.cursor() as cur:
                cur.executemany(self._sql, batch)
        except Exception as e:
            address = self._sink.connection_options.address().describe()
            hint = ("check that the database at " + address + " is reachable") if is_connection_error(e) else (
                "check the statement given to JdbcSink.exactly_once_sink and the rows' fields")
            raise RuntimeError(
                f"{self._what}: writing {len(batch)} rows with {self._sink.sql!r} failed ({first_line(e)}); {hint}"
            ) from e
        if self._records_out is not None:
            self._records_out.inc(len(batch))
        batch.clear()

    def flush(self, end_of_input: bool) -> None:
        self._execute_batch()

    def prepare_commit(self) -> list[str]:
        """Before the barrier: PREPARE TRANSACTION; its id is the committable of this checkpoint."""
        self._execute_batch()
        self._roll_back_leftovers()  # a zombie attempt may have prepared one since the last look
        if not self._in_transaction:
            return []
        gid = self._ids.gid(self._count)
        self._conn.tpc_prepare()  # the session is free for the next tpc_begin; the committer commits it
        self._in_transaction = False
        return [gid]

    def close(self) -> None:
        self._closed = True
        for closeable in (self._conn, self._prepared):
            try:
                if closeable is not None:
                    closeable.close()  # an open (unprepared) transaction is rolled back by the server
            except Exception:  # noqa: BLE001 - closing after a failure
                pass


class JdbcExactlyOnceCommitter(Committer):
    """COMMIT PREPARED of the ids a completed checkpoint holds; idempotent (a missing id was committed)."""

    def __init__(self, sink: Any) -> None:
        self._sink = sink

    def commit(self, committables: list[str]) -> None:
        if not committables:
            return
        attempts = self._sink.exactly_once_options.max_commit_attempts
        prepared = PreparedTransactions(self._sink.connection_options, "JdbcSink.exactly_once_sink committer")
        try:
            for gid in committables:
                for attempt in range(1, attempts + 1):
                    try:
                        prepared.finish(gid, commit=True)
                        break
                    except Exception as e:
                        prepared.close()
                        if attempt >= attempts or not is_connection_error(e):
                            address = self._sink.connection_options.address().describe()
                            raise RuntimeError(
                                f"JdbcSink.exactly_once_sink: COMMIT PREPARED {gid!r} at {address} failed after "
                                f"{attempt} attempt(s) ({first_line(e)}); the restored job commits it again; "
                                "check the database or raise JdbcExactlyOnceOptions.with_max_commit_attempts"
                            ) from e
                        time.sleep(0.2 * attempt)
        finally:
            prepared.close()
