"""`JdbcSink`: PyFlink's JDBC sink for PostgreSQL, at-least-once (`sink`) or exactly-once
(`exactly_once_sink`, two-phase commit).

`JdbcSink.sink(sql, type_info, connection_options, execution_options)` is used as in PyFlink, with
`ds.add_sink(...)` (or `ds.sink_to(...)`). The statement uses JDBC's `?` placeholders, one per field
of the record (a Row or tuple; any other record is the single parameter). An upsert is the user's
statement, as in PyFlink: `INSERT ... ON CONFLICT (id) DO UPDATE SET ...`.
"""

from __future__ import annotations

from typing import Any

from strom.connectors.jdbc.batching_writer import JdbcBatchingWriter
from strom.connectors.jdbc.exactly_once import JdbcExactlyOnceCommitter, JdbcExactlyOnceWriter
from strom.connectors.jdbc.options import JdbcConnectionOptions, JdbcExactlyOnceOptions, JdbcExecutionOptions
from strom.connectors.jdbc.urls import count_placeholders, translate_placeholders
from strom.connectors.sink_base import Committer, PrecommittingSinkWriter, SinkInitContext, TwoPhaseCommittingSink


class _NothingToCommit(Committer):
    def commit(self, committables: list[Any]) -> None:
        """The at-least-once writer commits its batches itself."""


class JdbcSink(TwoPhaseCommittingSink):
    sink_name = "JdbcSink"

    def __init__(
        self,
        sql: str,
        type_info: Any,
        connection_options: JdbcConnectionOptions,
        execution_options: JdbcExecutionOptions,
        exactly_once_options: JdbcExactlyOnceOptions | None = None,
    ) -> None:
        if not isinstance(sql, str) or not sql.strip():
            raise ValueError("JdbcSink: the statement is empty; pass e.g. 'INSERT INTO t (a, b) VALUES (?, ?)'")
        if not isinstance(connection_options, JdbcConnectionOptions):
            raise TypeError(
                "JdbcSink: jdbc_connection_options must be built with "
                f"JdbcConnectionOptions.JdbcConnectionOptionsBuilder(), got {type(connection_options).__name__}"
            )
        self.sql = sql
        self.statement = translate_placeholders(sql)
        fields = getattr(type_info, "get_field_types", None)
        if fields is not None and len(fields()) != count_placeholders(sql):
            raise ValueError(
                f"JdbcSink: the statement {sql!r} has {count_placeholders(sql)} '?' parameter(s) and type_info "
                f"{len(fields())} field(s); they must match"
            )
        self.type_info = type_info
        self.connection_options = connection_options
        self.execution_options = execution_options
        self.exactly_once_options = exactly_once_options
        if exactly_once_options is not None and execution_options.max_retries != 0:
            raise ValueError(
                "JdbcSink.exactly_once_sink: JdbcExecutionOptions max_retries must be 0 (a retried write inside a "
                "transaction could write rows twice; the job's restart replays them instead): "
                "use JdbcExecutionOptions.builder().with_max_retries(0)"
            )

    @staticmethod
    def sink(
        sql: str,
        type_info: Any,
        jdbc_connection_options: JdbcConnectionOptions,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
    ) -> JdbcSink:
        """At-least-once: batches are committed as they are written (and before each checkpoint)."""
        return JdbcSink(sql, type_info, jdbc_connection_options, jdbc_execution_options or JdbcExecutionOptions())

    @staticmethod
    def exactly_once_sink(
        sql: str,
        type_info: Any,
        jdbc_connection_options: JdbcConnectionOptions,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
        jdbc_exactly_once_options: JdbcExactlyOnceOptions | None = None,
    ) -> JdbcSink:
        """Exactly-once through PostgreSQL's two-phase commit (Flink's JdbcSink.exactlyOnceSink); needs
        checkpointing and max_prepared_transactions > 0 on the server. Execution options default to
        Flink's with no retries."""
        options = jdbc_execution_options or JdbcExecutionOptions(max_retries=0)
        return JdbcSink(
            sql, type_info, jdbc_connection_options, options, jdbc_exactly_once_options or JdbcExactlyOnceOptions()
        )

    @property
    def exactly_once(self) -> bool:
        return self.exactly_once_options is not None

    def create_writer(self, context: SinkInitContext) -> PrecommittingSinkWriter:
        if self.exactly_once:
            return JdbcExactlyOnceWriter(self, context)
        return JdbcBatchingWriter(self, context)

    def create_committer(self) -> Committer:
        return JdbcExactlyOnceCommitter(self) if self.exactly_once else _NothingToCommit()
