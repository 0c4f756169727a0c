"""SQL type names (`BIGINT`, `TIMESTAMP(3)`, ...) -> Strom's DataTypes."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.sql.sql_text import DIALECT
from strom.table.types import DataType, DataTypes

_TYPES = {
    exp.DataType.Type.TEXT: "STRING",
    exp.DataType.Type.VARCHAR: "STRING",
    exp.DataType.Type.INT: "INT",
    exp.DataType.Type.BIGINT: "BIGINT",
    exp.DataType.Type.SMALLINT: "SMALLINT",
    exp.DataType.Type.TINYINT: "TINYINT",
    exp.DataType.Type.DOUBLE: "DOUBLE",
    exp.DataType.Type.FLOAT: "FLOAT",
    exp.DataType.Type.BOOLEAN: "BOOLEAN",
    exp.DataType.Type.DATE: "DATE",
    exp.DataType.Type.TIMESTAMP: "TIMESTAMP",
    exp.DataType.Type.TIMESTAMPLTZ: "TIMESTAMP_LTZ",
}


def data_type(node: exp.DataType, where: str) -> DataType:
    if node.this == exp.DataType.Type.STRUCT:  # ROW<name TYPE, ..> (read as Hive's STRUCT<..>)
        return DataTypes.ROW([(f.name, data_type(f.args["kind"], f"{where}, field {f.name!r}"))
                              for f in node.expressions])
    if node.this == exp.DataType.Type.ARRAY and len(node.expressions) == 1:  # ARRAY<INT>
        return DataTypes.ARRAY(data_type(node.expressions[0], f"{where}, array element"))
    if node.this == exp.DataType.Type.MAP and len(node.expressions) == 2:  # MAP<STRING, INT>
        return DataTypes.MAP(data_type(node.expressions[0], f"{where}, map key"),
                             data_type(node.expressions[1], f"{where}, map value"))
    if node.this == exp.DataType.Type.DECIMAL:  # DECIMAL, DECIMAL(p), DECIMAL(p, s): Flink's default is (10, 0)
        params = [int(p.this.this) for p in node.expressions]
        return DataTypes.DECIMAL(*(params or [10]))
    root = _TYPES.get(node.this)
    if root is None:
        raise NotSupportedYet(f"type {node.sql(DIALECT)} ({where})")
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        params = node.expressions
        precision = int(params[0].this.this) if params else 6
        return DataTypes.TIMESTAMP(precision) if root == "TIMESTAMP" else DataTypes.TIMESTAMP_LTZ(precision)
    return DataType(root)


def parse_type(text: str, where: str) -> DataType:
    """A type written as SQL (`'BIGINT'`, `'TIMESTAMP(3)'`), as PyFlink accepts in udf(result_type=...)."""
    try:
        node = exp.DataType.build(text, dialect=DIALECT)
    except (sqlglot.errors.ParseError, ValueError):
        raise ValidationException(f"{where}: {text!r} is not a SQL type") from None
    return data_type(node, where)
