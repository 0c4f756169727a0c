"""The sink of a SQL JDBC table: a changelog of Rows written to PostgreSQL in batches (Flink's
JdbcOutputFormat with its buffer-reduced executor).

Append (no primary key): every +I row is an INSERT. Upsert (PRIMARY KEY): rows are buffered by key,
the last change of a key wins within a batch (+I/+U -> INSERT .. ON CONFLICT DO UPDATE, -U/-D -> DELETE),
so a batch writes each key once, in one transaction. A batch is written at `sink.buffer-flush.max-rows`
rows, every `sink.buffer-flush.interval`, before every checkpoint barrier and at the end of the input
(at-least-once; upserts are idempotent, so a replay after a restore converges to the same table). A
broken connection is retried `sink.max-retries` times on a new one; a statement or data error fails at
once, naming the table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from strom.common.row import RowKind
from strom.connectors.jdbc.connections import connect, first_line, is_connection_error
from strom.connectors.jdbc.options import JdbcConnectionOptions
from strom.connectors.jdbc.table_statements import delete_statement, insert_statement, upsert_statement
from strom.connectors.sink_base import (
    Committer,
    PrecommittingSinkWriter,
    SinkInitContext,
    SinkWriterContext,
    TwoPhaseCommittingSink,
)

log = logging.getLogger(__name__)

_MAX_BACKOFF_S = 5.0
_DELETES = (RowKind.UPDATE_BEFORE, RowKind.DELETE)


class _NothingToCommit(Committer):
    def commit(self, committables: list[Any]) -> None:
        """Batches are committed by the writer."""


class JdbcTableSink(TwoPhaseCommittingSink):
    sink_name = "JdbcTableSink"

    def __init__(self, connection: JdbcConnectionOptions, table_name: str, columns: Sequence[str],
                 keys: Sequence[str], *, max_rows: int = 100, interval_ms: int = 1000, max_retries: int = 3) -> None:
        self.connection = connection
        self.table_name = table_name
        self.columns = list(columns)
        self.keys = list(keys)
        self.max_rows = max_rows
        self.interval_ms = interval_ms
        self.max_retries = max_retries
        self.key_indexes = [self.columns.index(k) for k in self.keys]
        self.insert_sql = (upsert_statement(table_name, self.columns, self.keys) if self.keys
                           else insert_statement(table_name, self.columns))
        self.delete_sql = delete_statement(table_name, self.keys) if self.keys else None

    def create_writer(self, context: SinkInitContext) -> PrecommittingSinkWriter:
        return JdbcTableWriter(self, context)

    def create_committer(self) -> Committer:
        return _NothingToCommit()


class JdbcTableWriter(PrecommittingSinkWriter):
    def __init__(self, sink: JdbcTableSink, context: SinkInitContext) -> None:
        self._sink = sink
        self._what = f"JDBC table {sink.table_name!r} sink (subtask {context.subtask_index + 1}/{context.parallelism})"
        self._upsert = bool(sink.keys)
        self._appends: list[tuple[Any, ...]] = []
        self._by_key: dict[tuple[Any, ...], tuple[bool, tuple[Any, ...]]] = {}  # key -> (is delete, row)
        self._count = 0
        self._closed = False
        self._pts = context.processing_time_service
        self._conn: Any = None
        self._conn = self._connect()
        group = context.metric_group
        self._records_out = group.counter("numRecordsOut") if group is not None else None
        if sink.interval_ms > 0:
            self._pts.register_timer(self._pts.now() + sink.interval_ms, self._on_interval)

    def _connect(self) -> Any:
        return connect(self._sink.connection, autocommit=False, what=self._what,
                       advice=f"the table's 'url' option {self._sink.connection.url!r} (and 'username'/'password')")

    # hot path: called per record
    def write(self, value: Any, context: SinkWriterContext) -> None:
        row = tuple(value)
        if self._upsert:
            key = tuple(row[i] for i in self._sink.key_indexes)
            self._by_key[key] = (value.get_row_kind() in _DELETES, row)
        else:
            self._appends.append(row)
        self._count += 1
        if self._count >= self._sink.max_rows:
            self._write_batch()

    def _on_interval(self, now: int) -> None:
        if self._closed:
            return
        self._write_batch()
        self._pts.register_timer(now + self._sink.interval_ms, self._on_interval)

    def _write_batch(self) -> None:
        if not self._count:
            return
        sink = self._sink
        upserts = self._appends if not self._upsert else [r for d, r in self._by_key.values() if not d]
        deletes = [tuple(r[i] for i in sink.key_indexes) for d, r in self._by_key.values() if d]
        for attempt in range(sink.max_retries + 1):
            try:
                if self._conn is None:
                    self._conn = self._connect()
                with self._conn.cursor() as cur:
                    if deletes:
                        cur.executemany(sink.delete_sql, deletes)
                    if upserts:
                        cur.executemany(sink.insert_sql, upserts)
                self._conn.commit()
                if self._records_out is not None:
                    self._records_out.inc(len(upserts) + len(deletes))
                self._appends.clear()
                self._by_key.clear()
                self._count = 0
                return
            except Exception as e:
                self._discard_connection()
                if not is_connection_error(e):
                    raise RuntimeError(f"{self._what}: writing {len(upserts) + len(deletes)} rows failed "
                                       f"({first_line(e)}); check that the table's columns and primary key match "
                                       "the PostgreSQL table") from e
                if attempt >= sink.max_retries:
                    raise ConnectionError(
                        f"{self._what}: writing to PostgreSQL at {sink.connection.address().describe()} failed after "
                        f"{sink.max_retries} retries ({first_line(e)}); check the table's 'url' option or raise "
                        "'sink.max-retries'") from e
                pause = min(_MAX_BACKOFF_S, 0.2 * 2**attempt)
                log.warning("%s: a batch failed (%s); retry %d of %d in %.1f s", self._what, first_line(e),
                            attempt + 1, sink.max_retries, pause)
                time.sleep(pause)

    def _discard_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - broken anyway
                pass

    def flush(self, end_of_input: bool) -> None:
        self._write_batch()

    def prepare_commit(self) -> list[Any]:
        self._write_batch()
        return []

    def close(self) -> None:
        self._closed = True
        self._discard_connection()
