"""`Schema` (PyFlink's builder for declared columns) and `TableSchema` (a table's resolved columns, as
Table.get_schema() returns it)."""

from __future__ import annotations

from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.types import DataType


class Schema:
    """`Schema.new_builder().column("user", DataTypes.STRING()).build()`; physical columns only so far."""

    def __init__(self, columns: list[tuple[str, DataType]]) -> None:
        self.columns = columns

    @staticmethod
    def new_builder() -> Schema.Builder:
        return Schema.Builder()

    def __repr__(self) -> str:
        return "(\n" + ",\n".join(f"  `{n}` {t}" for n, t in self.columns) + "\n)"

    class Builder:
        def __init__(self) -> None:
            self._columns: list[tuple[str, DataType]] = []

        def column(self, column_name: str, data_type: DataType | str) -> Schema.Builder:
            if not isinstance(data_type, DataType):
                raise NotSupportedYet(f"Schema column {column_name!r} with a type string; use DataTypes")
            if any(n == column_name for n, _ in self._columns):
                raise ValidationException(f"Schema: column {column_name!r} is declared twice")
            self._columns.append((column_name, data_type))
            return self

        def from_fields(self, field_names: list[str], field_data_types: list[DataType]) -> Schema.Builder:
            for n, t in zip(field_names, field_data_types, strict=True):
                self.column(n, t)
            return self

        def column_by_expression(self, column_name: str, expr: object) -> Schema.Builder:
            raise NotSupportedYet(f"computed column {column_name!r}")

        def column_by_metadata(self, column_name: str, *args: object, **kwargs: object) -> Schema.Builder:
            raise NotSupportedYet(f"metadata column {column_name!r}")

        def watermark(self, column_name: str, watermark_expr: object) -> Schema.Builder:
            raise NotSupportedYet(f"watermark on {column_name!r} (time attributes)")

        def primary_key(self, *column_names: str) -> Schema.Builder:
            raise NotSupportedYet("PRIMARY KEY")

        def build(self) -> Schema:
            return Schema(list(self._columns))


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
