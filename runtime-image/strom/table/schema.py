"""`Schema` (PyFlink's builder for declared columns) and `TableSchema` (a table's resolved columns, as
Table.get_schema() returns it)."""

from __future__ import annotations

from typing import Any

from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.types import DataType


class Schema:
    """`Schema.new_builder().column("user", DataTypes.STRING()).build()`: physical columns, computed
    columns (`column_by_expression`), the `rowtime` metadata column of a DataStream
    (`column_by_metadata`), and a watermark (`watermark(column, "ts - INTERVAL '5' SECOND")`, or
    `SOURCE_WATERMARK()` to keep the DataStream's own watermarks)."""

    def __init__(
        self,
        columns: list[tuple[str, DataType]],
        *,
        computed: list[tuple[str, Any]] | None = None,
        metadata: list[tuple[str, DataType]] | None = None,
        order: list[str] | None = None,
        watermark: tuple[str, Any] | None = None,
    ) -> None:
        self.columns = columns  # physical
        self.computed = computed or []  # (name, SQL text or Expression)
        self.metadata = metadata or []
        self.order = order or [n for n, _ in columns]
        self.watermark_spec = watermark

    @staticmethod
    def new_builder() -> Schema.Builder:
        return Schema.Builder()

    def __repr__(self) -> str:
        return "(\n" + ",\n".join(f"  `{n}` {t}" for n, t in self.columns) + "\n)"

    class Builder:
        def __init__(self) -> None:
            self._columns: list[tuple[str, DataType]] = []
            self._computed: list[tuple[str, Any]] = []
            self._metadata: list[tuple[str, DataType]] = []
            self._order: list[str] = []
            self._watermark: tuple[str, Any] | None = None

        def _declare(self, column_name: str) -> None:
            if column_name in self._order:
                raise ValidationException(f"Schema: column {column_name!r} is declared twice")
            self._order.append(column_name)

        def column(self, column_name: str, data_type: DataType | str) -> Schema.Builder:
            if not isinstance(data_type, DataType):
                raise NotSupportedYet(f"Schema column {column_name!r} with a type string; use DataTypes")
            self._declare(column_name)
            self._columns.append((column_name, data_type))
            return self

        def from_fields(self, field_names: list[str], field_data_types: list[DataType]) -> Schema.Builder:
            for n, t in zip(field_names, field_data_types, strict=True):
                self.column(n, t)
            return self

        def column_by_expression(self, column_name: str, expr: Any) -> Schema.Builder:
            """A computed column: SQL text ("CAST(ts AS TIMESTAMP_LTZ(3))") or an Expression."""
            self._declare(column_name)
            self._computed.append((column_name, expr))
            return self

        def column_by_metadata(self, column_name: str, data_type: DataType | str, metadata_key: str | None = None,
                               is_virtual: bool = False) -> Schema.Builder:
            """A DataStream's `rowtime` metadata: the record's timestamp as TIMESTAMP_LTZ(3)."""
            key = metadata_key or column_name
            if key != "rowtime":
                raise NotSupportedYet(f"metadata key {key!r} for column {column_name!r} (only 'rowtime')")
            if not isinstance(data_type, DataType) or data_type.root != "TIMESTAMP_LTZ" or data_type.precision != 3:
                raise ValidationException(f"metadata column {column_name!r}: 'rowtime' is TIMESTAMP_LTZ(3), got "
                                          f"{data_type}")
            self._declare(column_name)
            self._metadata.append((column_name, data_type))
            return self

        def watermark(self, column_name: str, watermark_expr: Any) -> Schema.Builder:
            if self._watermark is not None:
                raise ValidationException("Schema: one watermark per table")
            self._watermark = (column_name, watermark_expr)
            return self

        def primary_key(self, *column_names: str) -> Schema.Builder:
            raise NotSupportedYet("PRIMARY KEY")

        def build(self) -> Schema:
            return Schema(list(self._columns), computed=list(self._computed), metadata=list(self._metadata),
                          order=list(self._order), watermark=self._watermark)


class TableSchema:
    def __init__(self, field_names: list[str], data_types: list[DataType]) -> None:
        self._names = list(field_names)
        self._types = list(data_types)

    def get_field_names(self) -> list[str]:
        return list(self._names)

    def get_field_data_types(self) -> list[DataType]:
        return list(self._types)

    def get_field_data_type(self, field: int | str) -> DataType:
        return self._types[field if isinstance(field, int) else self._names.index(field)]

    def get_field_count(self) -> int:
        return len(self._names)

    def __str__(self) -> str:
        return "root\n" + "".join(f" |-- {n}: {t}\n" for n, t in zip(self._names, self._types, strict=True))
