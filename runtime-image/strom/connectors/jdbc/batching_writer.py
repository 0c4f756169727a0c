"""The at-least-once JDBC writer: rows are buffered and written in batches, each batch one
transaction, retried on a new connection when the connection failed.

A batch is written when it holds `batch_size` rows, when `batch_interval_ms` passed since the last
write (a processing-time timer of the task), before every checkpoint barrier (so a completed
checkpoint never misses rows it counts as written) and at the end of the input. A failure of the
connection (server restart, network) is retried up to `max_retries` times with a growing pause on
a new connection; a failure of the statement or the data (a syntax error, a constraint) fails the
task at once, since repeating it cannot help. Rows written again after a restore are duplicates
unless the statement is an upsert (`INSERT ... ON CONFLICT (key) DO UPDATE ...`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from strom.common.row import Row
from strom.connectors.jdbc.connections import connect, first_line, is_connection_error
from strom.connectors.sink_base import PrecommittingSinkWriter, SinkInitContext, SinkWriterContext

log = logging.getLogger(__name__)

_MAX_BACKOFF_S = 5.0


def as_parameters(record: Any) -> tuple[Any, ...]:
    """A record -> the statement's parameters: a Row or tuple gives its fields, anything else is one."""
    # hot path: called per record
    if type(record) is tuple:
        return record
    if isinstance(record, tuple | list | Row):
        return tuple(record)
    return (record,)


class JdbcBatchingWriter(PrecommittingSinkWriter):
    def __init__(self, sink: Any, context: SinkInitContext) -> None:
        self._sink = sink
        self._sql = sink.statement
        self._size = sink.execution_options.batch_size
        self._interval = sink.execution_options.batch_interval_ms
        self._retries = sink.execution_options.max_retries
        self._what = f"JdbcSink (subtask {context.subtask_index + 1}/{context.parallelism})"
        self._batch: list[tuple[Any, ...]] = []
        self._closed = False
        self._pts = context.processing_time_service
        self._conn: Any = connect(sink.connection_options, autocommit=False, what=self._what)
        # Flink's sink writer metric: rows written to the database (in the exactly-once sink: into its
        # open transaction)
        group = context.metric_group
        self._records_out = group.counter("numRecordsOut") if group is not None else None
        if self._interval > 0:
            self._pts.register_timer(self._pts.now() + self._interval, self._on_interval)

    # hot path: called per record
    def write(self, value: Any, context: SinkWriterContext) -> None:
        batch = self._batch
        batch.append(as_parameters(value))
        if len(batch) >= self._size:
            self._write_batch()

    def _on_interval(self, now: int) -> None:
        if self._closed:
            return
        if self._batch:
            self._write_batch()
        self._pts.register_timer(now + self._interval, self._on_interval)

    def _write_batch(self) -> None:
        batch = self._batch
        if not batch:
            return
        for attempt in range(self._retries + 1):
            try:
                if self._conn is None:
                    self._conn = connect(self._sink.connection_options, autocommit=False, what=self._what)
                with self._conn.cursor() as cur:
                    cur.executemany(self._sql, batch)
                self._conn.commit()
                if self._records_out is not None:
                    self._records_out.inc(len(batch))
                batch.clear()
                return
            except Exception as e:
                self._discard_connection()
                if not is_connection_error(e):
                    raise RuntimeError(
                        f"{self._what}: the statement {self._sink.sql!r} failed on a batch of {len(batch)} rows "
                        f"({first_line(e)}); check the statement given to JdbcSink.sink and the rows' fields"
                    ) from e
                if attempt >= self._retries:
                    address = self._sink.connection_options.address().describe()
                    raise ConnectionError(
                        f"{self._what}: writing a batch to PostgreSQL at {address} failed after {self._retries} "
                        f"retries ({first_line(e)}); check that the database is reachable, or raise "
                        "JdbcExecutionOptions.with_max_retries"
                    ) from e
                pause = min(_MAX_BACKOFF_S, 0.2 * 2**attempt)
                log.warning("%s: writing a batch failed (%s); retry %d of %d in %.1f s", self._what,
                            first_line(e), attempt + 1, self._retries, pause)
                time.sleep(pause)

    def _discard_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()  # an uncommitted batch is rolled back by the server
            except Exception:  # noqa: BLE001 - the connection is broken anyway
                pass

    def flush(self, end_of_input: bool) -> None:
        self._write_batch()

    def prepare_commit(self) -> list[Any]:
        """Before a checkpoint barrier: the rows before it are written (committed) now; nothing is left
        for a committer."""
        self._write_batch()
        return []

    def close(self) -> None:
        self._closed = True
        self._discard_connection()
