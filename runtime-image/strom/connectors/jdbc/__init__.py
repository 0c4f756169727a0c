"""JDBC connector: PostgreSQL through psycopg (issue 21). `JdbcSink` is the DataStream sink.

    options.py          PyFlink's builders: connection, execution (batching, retries), exactly-once options
    urls.py             JDBC URLs and `?` statements in PostgreSQL's terms: pure translations, no I/O
    connections.py      opening psycopg connections (imported only when a task opens its sink), one-line errors
    batching_writer.py  at-least-once: rows written in batches, one transaction each, retried on a new connection
    exactly_once.py     exactly-once: PostgreSQL's two-phase commit (PREPARE TRANSACTION) under Flink's protocol
    sink.py             `JdbcSink.sink` / `JdbcSink.exactly_once_sink`: picks one of the two writers
SQL tables (`'connector' = 'jdbc'`, built by strom.table.connectors.jdbc):
    table_statements.py quoted SELECT/INSERT/UPSERT/DELETE statements and scan partitions: pure text
    table_sink.py       append or upsert-by-key sink of a changelog, a batch reduced per key
    scan.py             the bounded scan, optionally cut into scan.partition ranges
    lookup.py           rows by key for lookup joins (one connection per thread) and full scans for FULL caches
"""

from strom.connectors.jdbc.options import (
    JdbcConnectionOptions,
    JdbcExactlyOnceOptions,
    JdbcExecutionOptions,
)
from strom.connectors.jdbc.sink import JdbcSink

__all__ = ["JdbcConnectionOptions", "JdbcExactlyOnceOptions", "JdbcExecutionOptions", "JdbcSink"]
