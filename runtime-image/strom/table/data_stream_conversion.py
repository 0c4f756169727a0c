"""from_data_stream: a DataStream as a table, as PyFlink derives it.

Physical columns come from the stream's type (Types.ROW_NAMED names and types; a tuple's fields f0, f1,
...; an atomic type is f0), or from the Schema's declared columns when the type says nothing (pickled
records). The Schema then adds the `rowtime` metadata column (the record's timestamp), computed columns
and a watermark: an expression (a WatermarkAssigner, as in CREATE TABLE) or SOURCE_WATERMARK(), which
keeps the DataStream's own watermarks for the metadata rowtime column.
"""

from __future__ import annotations

from typing import Any

from strom.common.typeinfo import BasicTypeInfo, RowTypeInfo, TupleTypeInfo
from strom.table.errors import ValidationException
from strom.table.expressions import Expression, col
from strom.table.planner import builder, windowing
from strom.table.planner.plan import DataStreamScanNode, PlanNode
from strom.table.schema import Schema
from strom.table.sql.parser import parse_expression
from strom.table.types import DataType, DataTypes

_BASIC = {
    "STRING": DataTypes.STRING(),
    "CHAR": DataTypes.STRING(),
    "BOOLEAN": DataTypes.BOOLEAN(),
    "BYTE": DataTypes.TINYINT(),
    "SHORT": DataTypes.SMALLINT(),
    "INT": DataTypes.INT(),
    "LONG": DataTypes.BIGINT(),
    "BIG_INT": DataTypes.BIGINT(),
    "FLOAT": DataTypes.FLOAT(),
    "DOUBLE": DataTypes.DOUBLE(),
    "SQL_DATE": DataTypes.DATE(),
    "SQL_TIMESTAMP": DataTypes.TIMESTAMP(3),
    "INSTANT": DataTypes.TIMESTAMP_LTZ(3),
}


def _sql_type(type_info: Any, where: str) -> DataType:
    if isinstance(type_info, BasicTypeInfo) and type_info.name in _BASIC:
        return _BASIC[type_info.name]
    raise ValidationException(f"from_data_stream: no SQL type for {type_info!r} ({where}); declare the columns "
                              f"with Schema.new_builder().column(name, DataTypes...)")


def physical_columns(type_info: Any, schema: Schema | None) -> tuple[list[tuple[str, DataType]], list[str]]:
    """(columns, the record fields they read): from the Schema's declared columns, else the stream's type."""
    if schema is not None and schema.columns:
        declared = list(schema.columns)
        if isinstance(type_info, RowTypeInfo) and type_info.named:
            unknown = [n for n, _ in declared if n not in type_info.get_field_names()]
            if unknown:
                raise ValidationException(f"from_data_stream: column {unknown[0]!r} is not a field of the stream "
                                          f"(fields: {', '.join(type_info.get_field_names())})")
        return declared, [n for n, _ in declared]
    if isinstance(type_info, RowTypeInfo):
        names = type_info.get_field_names()
        types = [_sql_type(t, f"field {n!r}") for n, t in zip(names, type_info.get_field_types(), strict=True)]
        return list(zip(names, types, strict=True)), names
    if isinstance(type_info, TupleTypeInfo):
        types = type_info.get_field_types()
        names = [f"f{i}" for i in range(len(types))]
        return [(n, _sql_type(t, f"field {n!r}")) for n, t in zip(names, types, strict=True)], names
    if isinstance(type_info, BasicTypeInfo):
        return [("f0", _sql_type(type_info, "the record"))], ["f0"]
    raise ValidationException(f"from_data_stream: cannot derive columns from the stream's type {type_info!r}; "
                              f"pass output_type/type_info to the stream or declare the columns in a Schema")


def _expression(value: Any) -> Expression:
    return value if isinstance(value, Expression) else parse_expression(str(value))


def data_stream_node(stream: Any, schema: Schema | None, changelog: bool = False) -> PlanNode:
    columns, fields = physical_columns(stream.get_type(), schema)
    node_columns = list(columns)
    rowtime_indexes = []
    for name, t in schema.metadata if schema is not None else []:
        rowtime_indexes.append(len(node_columns))
        node_columns.append((name, t))
    node: PlanNode = DataStreamScanNode(node_columns, stream=stream, physical=fields,
                                        metadata_rowtime=rowtime_indexes, changelog=changelog)
    if schema is None:
        return node
    if schema.computed:
        computed = {n: _expression(e) for n, e in schema.computed}
        order = [n for n, _ in node_columns] + [n for n in schema.order if n in computed]
        node = builder.select(node, [computed[n].alias(n) if n in computed else col(n) for n in order])
    if schema.watermark_spec is not None:
        column, expr = schema.watermark_spec
        if isinstance(expr, str) and expr.strip().upper().replace(" ", "") == "SOURCE_WATERMARK()":
            node = _source_watermark(node, column, [n for n, _ in schema.metadata])
        else:
            node = windowing.watermark_assigner(node, column, _expression(expr), "from_data_stream")
    return node


def _source_watermark(node: PlanNode, column: str, metadata: list[str]) -> PlanNode:
    """The metadata rowtime column is the record timestamp already: mark it ROWTIME, keep the watermarks."""
    if column not in metadata:
        raise ValidationException(f"SOURCE_WATERMARK() on {column!r}: it needs the rowtime metadata column, "
                                  f"column_by_metadata({column!r}, DataTypes.TIMESTAMP_LTZ(3))")
    index = node.names().index(column)
    t = node.columns[index][1]
    node.columns[index] = (column, DataType(t.root, t.nullable, t.precision, time_attr="ROWTIME"))
    return node
