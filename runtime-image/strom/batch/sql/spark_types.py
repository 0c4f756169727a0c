"""Flink SQL types as Spark SQL types, for the columns a Spark DataFrame carries.

Both TIMESTAMP and TIMESTAMP_LTZ travel as Spark's TIMESTAMP_NTZ: Strom holds either as a naive datetime
read as UTC (strom.table.planner.event_time), and TIMESTAMP_NTZ hands naive datetimes to Python and back
unchanged, whatever the JVM's or the session's time zone. A type without a faithful Spark counterpart
(ROW, ARRAY, MAP, RAW, INTERVAL) raises `Unsupported`, and the plan falls back to the streaming runtime.
"""

from __future__ import annotations

from typing import Any

from strom.table.types import DataType


class Unsupported(Exception):  # noqa: N818 - a reason to fall back, not an error the user sees
    """The Spark translator cannot run this plan faithfully; the message says why (logged at INFO)."""


_SQL_NAMES = {
    "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INT", "BIGINT": "BIGINT", "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE", "STRING": "STRING", "VARCHAR": "STRING", "CHAR": "STRING", "BOOLEAN": "BOOLEAN",
    "DATE": "DATE", "TIMESTAMP": "TIMESTAMP_NTZ", "TIMESTAMP_LTZ": "TIMESTAMP_NTZ", "BYTES": "BINARY",
    "VARBINARY": "BINARY", "BINARY": "BINARY",
}


def sql_type(t: DataType) -> str:
    """The Spark SQL type name of `t` (for CAST(.. AS <name>) and DDL schemas)."""
    if t.root == "DECIMAL":
        return f"DECIMAL({10 if t.precision is None else t.precision}, {t.scale or 0})"
    name = _SQL_NAMES.get(t.root)
    if name is None:
        raise Unsupported(f"type {t.base()} has no Spark SQL counterpart here")
    return name


def spark_type(t: DataType) -> Any:
    """The pyspark.sql.types instance of `t`."""
    from pyspark.sql import types as st

    if t.root == "DECIMAL":
        return st.DecimalType(10 if t.precision is None else t.precision, t.scale or 0)
    simple = {
        "TINYINT": st.ByteType, "SMALLINT": st.ShortType, "INT": st.IntegerType, "BIGINT": st.LongType,
        "FLOAT": st.FloatType, "DOUBLE": st.DoubleType, "STRING": st.StringType, "VARCHAR": st.StringType,
        "CHAR": st.StringType, "BOOLEAN": st.BooleanType, "DATE": st.DateType, "TIMESTAMP": st.TimestampNTZType,
        "TIMESTAMP_LTZ": st.TimestampNTZType, "BYTES": st.BinaryType, "VARBINARY": st.BinaryType,
        "BINARY": st.BinaryType,
    }.get(t.root)
    if simple is None:
        raise Unsupported(f"type {t.base()} has no Spark SQL counterpart here")
    return simple()


def struct_type(types: list[DataType]) -> Any:
    """A StructType of positional columns c0, c1, .. (names never clash, whatever the plan calls them)."""
    from pyspark.sql import types as st

    return st.StructType([st.StructField(f"c{i}", spark_type(t), True) for i, t in enumerate(types)])
