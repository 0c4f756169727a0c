"""Reading CSV files into Rows: PyFlink's `CsvSchema`, `CsvSchemaBuilder` and `CsvReaderFormat`.

`CsvReaderFormat.for_schema(schema)` is a StreamFormat for `FileSource.for_record_stream_format`; its records
are `Row`s named by the schema's columns, of type `schema.get_type_info()` (Types.ROW_NAMED), as in PyFlink.
Column types are given as PyFlink gives them, with Table API DataTypes (`add_number_column('id',
DataTypes.INT())`); only their type root is read, so this module needs nothing of the Table API.

One record per line (a quoted field cannot span lines here); a line is split with Python's csv module
using the schema's separator, quote and escape characters. An empty field of a non-string column is
None, as is a field equal to the schema's null value; an empty array field is an empty list. A field
that does not parse as its column's type fails the job with one line naming the file, the line and the
column. `set_use_header()` skips the first line (with `set_strict_headers()` it must name the schema's
columns), `set_skip_first_data_row()` one more, `set_allow_comments()` lines starting with '#'.
"""

from __future__ import annotations

import csv
import decimal
from collections.abc import Callable
from typing import IO, Any

from strom.common.row import Row, make_row
from strom.common.typeinfo import RowTypeInfo, TypeInformation, Types
from strom.connectors.file_source import StreamFormat, TextFileReader

_BY_ROOT: dict[str, tuple[Callable[[], TypeInformation], Callable[[str], Any]]] = {
    "TINYINT": (Types.BYTE, int),
    "SMALLINT": (Types.SHORT, int),
    "INT": (Types.INT, int),
    "INTEGER": (Types.INT, int),
    "BIGINT": (Types.LONG, int),
    "FLOAT": (Types.FLOAT, float),
    "DOUBLE": (Types.DOUBLE, float),
    "DECIMAL": (Types.BIG_DEC, decimal.Decimal),
    "STRING": (Types.STRING, str),
    "VARCHAR": (Types.STRING, str),
    "CHAR": (Types.STRING, str),
}


def _parse_boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"{text!r} is not true or false")


def _root(data_type: Any) -> str:
    """The type root of a DataType (`DataTypes.INT()` -> 'INT'), read without importing the Table API."""
    root = getattr(data_type, "root", None) or str(data_type).split("(")[0]
    return str(root).upper().removesuffix(" NOT NULL")


class _Column:
    __slots__ = ("name", "type_info", "parse", "empty_is_null")

    def __init__(
        self, name: str, type_info: TypeInformation, parse: Callable[[str], Any], *, empty_is_null: bool
    ) -> None:
        self.name, self.type_info, self.parse, self.empty_is_null = name, type_info, parse, empty_is_null


def _typed_column(name: str, data_type: Any, what: str) -> _Column:
    root = _root(data_type)
    if root == "BOOLEAN":
        return _Column(name, Types.BOOLEAN(), _parse_boolean, empty_is_null=True)
    known = _BY_ROOT.get(root)
    if known is None:
        supported = ", ".join(sorted([*_BY_ROOT, "BOOLEAN"]))
        raise ValueError(f"CSV {what} {name!r} has type {root}, which Strom's CSV reader does not read: use one of "
                         f"{supported}")
    factory, parse = known
    return _Column(name, factory(), parse, empty_is_null=parse is not str)


class CsvSchema:
    """The columns of a CSV file and how it is written (PyFlink's CsvSchema)."""

    def __init__(self, columns: list[_Column], options: dict[str, Any]) -> None:
        self._columns = list(columns)
        self._options = dict(options)
        self._type_info = RowTypeInfo([c.type_info for c in columns], [c.name for c in columns])

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        return CsvSchemaBuilder()

    def get_type_info(self) -> RowTypeInfo:
        return self._type_info

    def size(self) -> int:
        return len(self._columns)

    def __len__(self) -> int:
        return self.size()

    def __repr__(self) -> str:
        return f"CsvSchema({', '.join(f'{c.name}: {c.type_info!r}' for c in self._columns)})"


class CsvSchemaBuilder:
    """Builds a CsvSchema column by column (PyFlink's CsvSchemaBuilder)."""

    def __init__(self) -> None:
        self._columns: list[_Column] = []
        self._options: dict[str, Any] = {
            "separator": ",", "quote": '"', "escape": None, "use_header": False, "strict_headers": False,
            "skip_first_data_row": False, "allow_comments": False, "null_value": None, "array_separator": ";",
        }

    def build(self) -> CsvSchema:
        return CsvSchema(self._columns, self._options)

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        self._columns.append(_Column(name, Types.STRING(), str, empty_is_null=False))
        return self

    def add_number_column(self, name: str, number_type: Any = None) -> CsvSchemaBuilder:
        """`number_type`: a DataType (DataTypes.INT(), ...); PyFlink's default is BIGINT."""
        self._columns.append(_typed_column(name, number_type if number_type is not None else "BIGINT", "column"))
        return self

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        self._columns.append(_Column(name, Types.BOOLEAN(), _parse_boolean, empty_is_null=True))
        return self

    def add_array_column(self, name: str, separator: str = ";", element_type: Any = None) -> CsvSchemaBuilder:
        element = _typed_column(name, element_type if element_type is not None else "STRING", "array column")

        def parse(text: str) -> list[Any]:
            return [element.parse(part) for part in text.split(separator)] if text else []

        self._columns.append(_Column(name, Types.LIST(element.type_info), parse, empty_is_null=False))
        return self

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        self._columns.extend(schema._columns)
        return self

    def clear_columns(self) -> CsvSchemaBuilder:
        self._columns.clear()
        return self

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        self._options["separator"] = _single_char(char, "Column separator")
        return self

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        self._options["quote"] = _single_char(char, "Quote char")
        return self

    def disable_quote_char(self) -> CsvSchemaBuilder:
        self._options["quote"] = None
        return self

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        self._options["escape"] = _single_char(char, "Escape char")
        return self

    def disable_escape_char(self) -> CsvSchemaBuilder:
        self._options["escape"] = None
        return self

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        self._options["use_header"] = use
        return self

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        self._options["strict_headers"] = strict
        return self

    def set_skip_first_data_row(self, skip: bool = True) -> CsvSchemaBuilder:
        self._options["skip_first_data_row"] = skip
        return self

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        self._options["allow_comments"] = allow
        return self

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        self._options["null_value"] = null_value
        return self

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        self._options["array_separator"] = separator
        return self

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        return self  # PyFlink: only for writing; reading recognizes \n, \r and \r\n

    def size(self) -> int:
        return len(self._columns)

    def __len__(self) -> int:
        return self.size()


def _single_char(char: str, what: str) -> str:
    if len(char) != 1:
        raise ValueError(f"{what} must be a single char, got {char!r}")
    return char


class CsvReaderFormat(StreamFormat):
    """A StreamFormat reading CSV lines into Rows of the schema's type (PyFlink's CsvReaderFormat)."""

    def __init__(self, schema: CsvSchema, charset: str = "UTF-8") -> None:
        super().__init__(charset)
        self.schema = schema
        self.produced_type = schema.get_type_info()  # FileSource.get_produced_type reads it

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        return CsvReaderFormat(schema)

    def open(self, path: str, raw: IO[bytes] | None = None) -> CsvFileReader:  # type: ignore[override]
        return CsvFileReader(TextFileReader(path, self.charset, raw), self.schema)


class CsvFileReader:
    """Rows of one CSV file; `lines_read` counts the file's lines (header and comments too), which is
    what a checkpoint keeps and `skip` resumes from."""

    def __init__(self, lines: TextFileReader, schema: CsvSchema) -> None:
        self._lines = lines
        self._columns = schema._columns
        self._names = [c.name for c in self._columns]
        opts = schema._options
        self._dialect: dict[str, Any] = {"delimiter": opts["separator"], "escapechar": opts["escape"],
                                         "doublequote": opts["escape"] is None}
        if opts["quote"] is None:
            self._dialect["quoting"] = csv.QUOTE_NONE
        else:
            self._dialect["quotechar"] = opts["quote"]
        self._opts = opts
        self._leading = int(bool(opts["use_header"])) + int(bool(opts["skip_first_data_row"]))
        self.path = lines.path

    @property
    def lines_read(self) -> int:
        return self._lines.lines_read

    def skip(self, lines: int) -> None:
        self._lines.skip(lines)

    # hot path: called per batch
    def read_batch(self, max_records: int) -> list[Row]:
        while True:
            start = self._lines.lines_read
            lines = self._lines.read_batch(max_records)
            if not lines:
                return []
            rows = self._rows(lines, start)
            if rows:
                return rows

    def _rows(self, lines: list[str], start: int) -> list[Row]:
        if start < self._leading:  # the header (and the skipped first data row) are the file's first lines
            head = self._leading - start
            if start == 0 and self._opts["use_header"] and self._opts["strict_headers"] and lines:
                self._check_header(lines[0])
            lines, start = lines[head:], start + head
        if self._opts["allow_comments"]:
            lines = [line for line in lines if not line.startswith("#")]
        rows = []
        for number, fields in enumerate(csv.reader((line for line in lines if line), **self._dialect), start + 1):
            rows.append(self._row(fields, number))
        return rows

    def _row(self, fields: list[str], number: int) -> Row:
        if len(fields) != len(self._columns):
            raise ValueError(f"{self.path}: line {number} has {len(fields)} fields, the CSV schema "
                             f"{len(self._columns)} ({', '.join(self._names)})")
        null = self._opts["null_value"]
        values = []
        for column, text in zip(self._columns, fields, strict=True):
            if (null is not None and text == null) or (text == "" and column.empty_is_null):
                values.append(None)
                continue
            try:
                values.append(column.parse(text))
            except (ValueError, decimal.InvalidOperation):
                raise ValueError(f"{self.path}: line {number}, column {column.name!r}: {text!r} is not a "
                                 f"{column.type_info!r}") from None
        return make_row(values, tuple(self._names))

    def _check_header(self, line: str) -> None:
        header = next(csv.reader([line], **self._dialect), [])
        if header != self._names:
            raise ValueError(f"{self.path}: the header {header} does not name the CSV schema's columns "
                             f"{self._names} (strict headers)")

    def close(self) -> None:
        self._lines.close()
