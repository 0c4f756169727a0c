"""JDBC connector: PostgreSQL through psycopg (issue 21). See `sink` for the DataStream sink."""

from strom.connectors.jdbc.options import (
    JdbcConnectionOptions,
    JdbcExactlyOnceOptions,
    JdbcExecutionOptions,
)
from strom.connectors.jdbc.sink import JdbcSink

__all__ = ["JdbcConnectionOptions", "JdbcExactlyOnceOptions", "JdbcExecutionOptions", "JdbcSink"]
