"""The JDBC sink for PostgreSQL (`pyflink.datastream.connectors.jdbc`)."""

from strom.connectors.jdbc import JdbcConnectionOptions, JdbcExactlyOnceOptions, JdbcExecutionOptions, JdbcSink

__all__ = ["JdbcConnectionOptions", "JdbcExactlyOnceOptions", "JdbcExecutionOptions", "JdbcSink"]
