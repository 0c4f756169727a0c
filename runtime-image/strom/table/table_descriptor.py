"""`TableDescriptor` and `FormatDescriptor` (PyFlink's): a table declared in Python instead of CREATE
TABLE DDL, `TableDescriptor.for_connector('datagen').schema(schema).option('k', 'v').format('csv').build()`,
registered with `t_env.create_temporary_table(path, descriptor)` / `create_table`, read with `from_path`
and written with `Table.execute_insert(descriptor)`.

The descriptor becomes the same catalog table CREATE TABLE makes (columns, computed columns, watermark,
options), so it is validated by the same connector rules.
"""

from __future__ import annotations

from typing import Any

from strom.table.errors import ValidationException
from strom.table.expressions import Expression
from strom.table.schema import Schema
from strom.table.sql.catalog import CatalogTable
from strom.table.sql.translator import parse_expression


def _option_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class FormatDescriptor:
    """`FormatDescriptor.for_format('csv').option('field-delimiter', '|').build()`: the format's options,
    prefixed by the format's name when the table uses it ('csv.field-delimiter')."""

    def __init__(self, format: str, options: dict[str, str]) -> None:
        self._format = format
        self._options = options

    @staticmethod
    def for_format(format: str) -> FormatDescriptor.Builder:
        return FormatDescriptor.Builder(format)

    def get_format(self) -> str:
        return self._format

    def get_options(self) -> dict[str, str]:
        return dict(self._options)

    class Builder:
        def __init__(self, format: str) -> None:
            self._format = format
            self._options: dict[str, str] = {}

        def option(self, key: str, value: Any) -> FormatDescriptor.Builder:
            self._options[key] = _option_value(value)
            return self

        def build(self) -> FormatDescriptor:
            return FormatDescriptor(self._format, dict(self._options))


class TableDescriptor:
    def __init__(self, schema: Schema | None, options: dict[str, str], partition_keys: list[str],
                 comment: str | None) -> None:
        self._schema = schema
        self._options = options
        self._partition_keys = partition_keys
        self._comment = comment

    @staticmethod
    def for_connector(connector: str) -> TableDescriptor.Builder:
        return TableDescriptor.Builder(connector)

    def get_schema(self) -> Schema | None:
        return self._schema

    def get_options(self) -> dict[str, str]:
        return dict(self._options)

    def get_partition_keys(self) -> list[str]:
        return list(self._partition_keys)

    def get_comment(self) -> str | None:
        return self._comment

    def __str__(self) -> str:
        options = ",\n".join(f"  '{k}' = '{v}'" for k, v in self._options.items())
        return f"{self._schema!r}\nWITH (\n{options}\n)"

    class Builder:
        def __init__(self, connector: str) -> None:
            self._schema: Schema | None = None
            self._options: dict[str, str] = {"connector": connector}
            self._partition_keys: list[str] = []
            self._comment: str | None = None

        def schema(self, schema: Schema) -> TableDescriptor.Builder:
            self._schema = schema
            return self

        def option(self, key: str, value: Any) -> TableDescriptor.Builder:
            self._options[getattr(key, "key", key)] = _option_value(value)
            return self

        def format(self, format: str | FormatDescriptor, format_option: Any = None) -> TableDescriptor.Builder:
            """`format('csv')` sets 'format'; with a key option (`key.format` of upsert connectors) that key."""
            key = getattr(format_option, "key", format_option) or "format"
            if isinstance(format, FormatDescriptor):
                self._options[key] = format.get_format()
                prefix = key[: -len("format")] if key.endswith("format") else ""
                for k, v in format.get_options().items():
                    self._options[f"{prefix}{format.get_format()}.{k}"] = v
            else:
                self._options[key] = format
            return self

        def partitioned_by(self, *partition_keys: str) -> TableDescriptor.Builder:
            self._partition_keys = list(partition_keys)
            return self

        def comment(self, comment: str) -> TableDescriptor.Builder:
            self._comment = comment
            return self

        def build(self) -> TableDescriptor:
            return TableDescriptor(self._schema, dict(self._options), list(self._partition_keys), self._comment)


def _expression(value: Any, what: str) -> Expression:
    if isinstance(value, Expression):
        return value
    if isinstance(value, str):
        return parse_expression(value)
    raise ValidationException(f"{what}: expected SQL text or an Expression, got {type(value).__name__}")


def catalog_table(name: str, descriptor: TableDescriptor) -> CatalogTable:
    """The catalog table a descriptor declares (as CREATE TABLE would)."""
    schema = descriptor.get_schema()
    if schema is None:
        raise ValidationException(f"table {name!r}: the TableDescriptor needs a schema (.schema(Schema...)); "
                                  "Strom's connectors do not infer one")
    if schema.metadata:
        raise ValidationException(f"table {name!r}: metadata columns ({schema.metadata[0][0]!r}) belong to "
                                  "DataStream conversions, not to connector tables")
    computed = [(n, _expression(e, f"computed column {n!r}")) for n, e in schema.computed]
    watermark = None
    if schema.watermark_spec is not None:
        column, expr = schema.watermark_spec
        watermark = (column, _expression(expr, f"watermark for {column!r}"))
        if column not in schema.order:
            raise ValidationException(f"watermark for {column!r}: no such column in table {name!r} "
                                      f"(columns: {', '.join(schema.order)})")
    extra: dict[str, Any] = {}
    if descriptor.get_partition_keys():
        extra["partition_keys"] = tuple(descriptor.get_partition_keys())
    return CatalogTable(name, list(schema.columns), descriptor.get_options(), computed, list(schema.order),
                        watermark, **extra)
