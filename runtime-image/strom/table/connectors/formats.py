"""The format registry: `'format' = name` (csv, json, raw; the Kafka connectors add avro) with Flink's
format options, which carry the format's name as prefix (`csv.field-delimiter`, `json.ignore-parse-errors`).

A FormatFactory turns one record's bytes into a Row of the table's physical columns (`decoder`) and a
Row into bytes (`encoder`). The decoder returns None for a record it skips (`*.ignore-parse-errors`); a
record it cannot read otherwise fails with one line naming the table, the format and the field.
Options reach the factory with the prefix removed (`field-delimiter`), as Flink's FactoryUtil hands
them over, so a connector with a key and a value format (`key.format`, `value.csv.*`) strips its own.
"""

from __future__ import annotations

import base64
import csv
import datetime
import decimal
import io
import json
from collections.abc import Callable
from typing import Any, ClassVar

from strom.common.row import Row, make_row
from strom.table import decimals
from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.planner.values import java_double
from strom.table.types import DataType

Decoder = Callable[[bytes], Row | None]
Encoder = Callable[[Row], bytes]
Columns = list[tuple[str, DataType]]


class FormatFactory:
    identifier: ClassVar[str] = ""
    #: option names without the prefix (Flink's: `field-delimiter`, not `csv.field-delimiter`)
    options: ClassVar[frozenset[str]] = frozenset()

    def prefixed_options(self, prefix: str = "") -> set[str]:
        return {f"{prefix}{self.identifier}.{o}" for o in self.options}

    def validate(self, table: str, columns: Columns, options: dict[str, str]) -> None:
        """Checks of the (prefix-free) options and the columns; raises ValidationException."""

    def decoder(self, table: str, columns: Columns, options: dict[str, str]) -> Decoder:
        raise NotSupportedYet(f"reading format {self.identifier!r} (table {table!r})")

    def encoder(self, table: str, columns: Columns, options: dict[str, str]) -> Encoder:
        raise NotSupportedYet(f"writing format {self.identifier!r} (table {table!r})")


_FORMATS: dict[str, FormatFactory] = {}


def register_format(factory: FormatFactory) -> FormatFactory:
    _FORMATS[factory.identifier] = factory
    return factory


def format_factory(table: str, name: str) -> FormatFactory:
    factory = _FORMATS.get(name)
    if factory is None:
        raise ValidationException(f"table {table!r}: unknown format {name!r}; available: {', '.join(sorted(_FORMATS))}")
    return factory


def format_options(options: dict[str, str], identifier: str, prefix: str = "") -> dict[str, str]:
    """The table's options of one format, prefix (`value.`) and format name removed."""
    head = f"{prefix}{identifier}."
    return {k[len(head):]: v for k, v in options.items() if k.startswith(head)}


def _bool(table: str, options: dict[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise ValidationException(f"table {table!r}: format option {key!r} must be 'true' or 'false', got {value!r}")
    return value.lower() == "true"


# -- values as text ----------------------------------------------------------------------------------
def parse_text(text: str, t: DataType) -> Any:
    """A SQL value from its text form (CSV fields, JSON strings holding temporal values)."""
    root = t.root
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return int(text.strip())
    if root in ("FLOAT", "DOUBLE"):
        return float(text.strip())
    if root == "DECIMAL":  # HALF_UP to the column's scale; NULL past its precision, as Flink's cast
        return decimals.fitter(t)(decimal.Decimal(text.strip()))
    if root == "BOOLEAN":
        low = text.strip().lower()
        if low not in ("true", "false"):
            raise ValueError(f"not a boolean: {text!r}")
        return low == "true"
    if root in ("STRING", "VARCHAR", "CHAR"):
        return text
    if root == "DATE":
        return datetime.date.fromisoformat(text.strip())
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return datetime.datetime.fromisoformat(text.strip().replace("T", " ").rstrip("Z"))
    if root in ("BYTES", "VARBINARY", "BINARY"):
        return base64.b64decode(text)
    raise NotSupportedYet(f"reading {t.base()} values from text")


def text_of(v: Any) -> str:
    """A SQL value as CSV/JSON text (SQL timestamp form `2026-11-26 10:00:00.123`, Java doubles)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, datetime.datetime):
        base = v.strftime("%Y-%m-%d %H:%M:%S")
        return base + (f".{v.microsecond // 1000:03d}" if v.microsecond else "")
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    if isinstance(v, decimal.Decimal):  # plain digits (write-bigdecimal-in-scientific-notation is false)
        return format(v, "f")
    return str(v)


# -- csv ---------------------------------------------------------------------------------------------
class CsvFormatFactory(FormatFactory):
    """RFC-4180 CSV as Flink's csv format: `field-delimiter` (default ','), `quote-character` ('"'),
    `disable-quote-character`, `allow-comments` (# lines skipped), `ignore-parse-errors` (bad rows
    skipped, bad fields null), `array-element-delimiter`, `escape-character`, `null-literal`."""

    identifier = "csv"
    options = frozenset({"field-delimiter", "disable-quote-character", "quote-character", "allow-comments",
                         "ignore-parse-errors", "array-element-delimiter", "escape-character", "null-literal",
                         "write-bigdecimal-in-scientific-notation"})

    def _dialect(self, table: str, options: dict[str, str]) -> dict[str, Any]:
        delimiter = options.get("field-delimiter", ",").encode().decode("unicode_escape")
        if len(delimiter) != 1:
            raise ValidationException(f"table {table!r}: 'csv.field-delimiter' must be one character, got "
                                      f"{options['field-delimiter']!r}")
        quote = options.get("quote-character", '"')
        if len(quote) != 1:
            raise ValidationException(f"table {table!r}: 'csv.quote-character' must be one character, got {quote!r}")
        no_quote = _bool(table, options, "disable-quote-character", False)
        escape = options.get("escape-character")
        return {"delimiter": delimiter, "quotechar": None if no_quote else quote,
                "quoting": csv.QUOTE_NONE if no_quote else csv.QUOTE_MINIMAL, "escapechar": escape,
                "lineterminator": "\n", "doublequote": escape is None}

    def validate(self, table: str, columns: Columns, options: dict[str, str]) -> None:
        self._dialect(table, options)
        for key in ("ignore-parse-errors", "allow-comments"):
            _bool(table, options, key, False)

    def decoder(self, table: str, columns: Columns, options: dict[str, str]) -> Decoder:
        dialect = self._dialect(table, options)
        ignore = _bool(table, options, "ignore-parse-errors", False)
        comments = _bool(table, options, "allow-comments", False)
        null_literal = options.get("null-literal")
        names = tuple(n for n, _ in columns)
        types = [t for _, t in columns]

        def decode(data: bytes) -> Row | None:
            text = data.decode("utf-8").rstrip("\r\n")
            if comments and text.startswith("#"):
                return None
            fields = next(csv.reader([text], **dialect), [])
            if len(fields) != len(types):
                if ignore:
                    return None
                raise ValidationException(f"table {table!r}: csv row has {len(fields)} fields, the table "
                                          f"{len(types)} columns: {text[:80]!r} (set 'csv.ignore-parse-errors')")
            values = []
            for f, t, n in zip(fields, types, names, strict=True):
                if f == null_literal or (f == "" and t.root not in ("STRING", "VARCHAR", "CHAR")):
                    values.append(None)
                    continue
                try:
                    values.append(parse_text(f, t))
                except (ValueError, decimal.InvalidOperation):
                    if not ignore:
                        raise ValidationException(f"table {table!r}: csv field {n!r} is not a {t.base()}: {f!r} "
                                                  "(set 'csv.ignore-parse-errors' to read it as null)") from None
                    values.append(None)
            return make_row(values, tuple(names))

        return decode

    def encoder(self, table: str, columns: Columns, options: dict[str, str]) -> Encoder:
        dialect = self._dialect(table, options)
        null_literal = options.get("null-literal", "")

        def encode(row: Row) -> bytes:
            out = io.StringIO()
            csv.writer(out, **dialect).writerow([null_literal if v is None else text_of(v) for v in row])
            return out.getvalue().rstrip("\n").encode("utf-8")

        return encode


# -- json --------------------------------------------------------------------------------------------
class JsonFormatFactory(FormatFactory):
    """One JSON object per record, as Flink's json format: `fail-on-missing-field` (default false: a
    missing field is null), `ignore-parse-errors`, `timestamp-format.standard` (SQL: `2026-11-26
    10:00:00`, ISO-8601: `2026-11-26T10:00:00`), `encode.ignore-null-fields`; nested ROW columns are
    JSON objects."""

    identifier = "json"
    options = frozenset({"fail-on-missing-field", "ignore-parse-errors", "timestamp-format.standard",
                         "map-null-key.mode", "map-null-key.literal", "encode.decimal-as-plain-number",
                         "encode.ignore-null-fields"})

    def validate(self, table: str, columns: Columns, options: dict[str, str]) -> None:
        fail = _bool(table, options, "fail-on-missing-field", False)
        ignore = _bool(table, options, "ignore-parse-errors", False)
        if fail and ignore:  # Flink refuses the combination too
            raise ValidationException(f"table {table!r}: fail-on-missing-field and ignore-parse-errors shouldn't "
                                      "both be true")
        standard = options.get("timestamp-format.standard", "SQL")
        if standard not in ("SQL", "ISO-8601"):
            raise ValidationException(f"table {table!r}: 'json.timestamp-format.standard' must be SQL or ISO-8601, "
                                      f"got {standard!r}")

    def decoder(self, table: str, columns: Columns, options: dict[str, str]) -> Decoder:
        fail = _bool(table, options, "fail-on-missing-field", False)
        ignore = _bool(table, options, "ignore-parse-errors", False)

        def value(v: Any, t: DataType, path: str) -> Any:
            if v is None:
                return None
            if t.root == "ROW":
                if not isinstance(v, dict):
                    raise ValueError(f"{path} is not a JSON object")
                return make_row([value(v.get(n), ft, f"{path}.{n}") for n, ft in t.fields],
                                tuple(n for n, _ in t.fields))
            if t.root == "MAP":  # a JSON object; keys are text, read as the key type
                if not isinstance(v, dict):
                    raise ValueError(f"{path} is not a JSON object")
                kt, vt = t.fields[0][1], t.fields[1][1]
                return {parse_text(k, kt): value(x, vt, f"{path}.{k}") for k, x in v.items()}
            if t.root == "ARRAY":
                if not isinstance(v, list):
                    raise ValueError(f"{path} is not a JSON array")
                return [value(x, t.fields[0][1], f"{path}[{i + 1}]") for i, x in enumerate(v)]
            if t.root in ("STRING", "VARCHAR", "CHAR"):
                return v if isinstance(v, str) else json.dumps(v, default=float)
            if t.root == "BOOLEAN" and isinstance(v, bool):
                return v
            if t.is_integral and isinstance(v, int) and not isinstance(v, bool):
                return v
            if t.root in ("FLOAT", "DOUBLE") and isinstance(v, (int, float, decimal.Decimal)) and not isinstance(
                    v, bool):
                return float(v)
            if isinstance(v, str):
                return parse_text(v, t)
            if t.root == "DECIMAL" and isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool):
                return decimals.fitter(t)(v)  # the number's exact digits (read as Decimal), at the column's scale
            raise ValueError(f"{path}: {v!r} is not a {t.base()}")

        def decode(data: bytes) -> Row | None:
            try:
                obj = json.loads(data, parse_float=decimal.Decimal)  # exact digits for DECIMAL columns
                if not isinstance(obj, dict):
                    raise ValueError("the record is not a JSON object")
                values = {}
                for n, t in columns:
                    if n not in obj and fail:
                        raise ValueError(f"field {n!r} is missing")
                    values[n] = value(obj.get(n), t, n)
                return make_row(list(values.values()), tuple(values))
            except (ValueError, decimal.InvalidOperation) as e:
                if ignore:
                    return None
                raise ValidationException(f"table {table!r}: failed to deserialize JSON {data[:80]!r}: {e} (set "
                                          "'json.ignore-parse-errors' to skip such records)") from None

        return decode

    def encoder(self, table: str, columns: Columns, options: dict[str, str]) -> Encoder:
        iso = options.get("timestamp-format.standard", "SQL") == "ISO-8601"
        skip_nulls = _bool(table, options, "encode.ignore-null-fields", False)

        def value(v: Any) -> Any:
            if isinstance(v, Row):
                names = getattr(v, "_fields", None) or [f"f{i}" for i in range(len(v))]
                return {n: value(x) for n, x in zip(names, v, strict=True)}
            if isinstance(v, datetime.datetime):
                text = text_of(v)
                return text.replace(" ", "T") if iso else text
            if isinstance(v, (datetime.date, bytes, bytearray)):
                return text_of(v)
            if isinstance(v, dict):  # MAP: a JSON object, keys as text
                return {text_of(k): value(x) for k, x in v.items()}
            if isinstance(v, list):
                return [value(x) for x in v]
            return v

        names = [n for n, _ in columns]

        def encode(row: Row) -> bytes:
            obj = {n: value(v) for n, v in zip(names, row, strict=True) if not (skip_nulls and v is None)}
            return _json_text(obj).encode("utf-8")

        return encode


def _json_text(v: Any) -> str:
    """Compact JSON where a DECIMAL is a number with its exact digits (json.dumps would need a float)."""
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _json_text(x) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_json_text(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


# -- raw ---------------------------------------------------------------------------------------------
class RawFormatFactory(FormatFactory):
    """The record as one value (Flink's raw format): a table of exactly one STRING or BYTES column;
    `raw.charset` (default UTF-8), `raw.endianness` (numbers only, refused here: strings and bytes)."""

    identifier = "raw"
    options = frozenset({"charset", "endianness"})

    def validate(self, table: str, columns: Columns, options: dict[str, str]) -> None:
        if len(columns) != 1:
            raise ValidationException(f"table {table!r}: the raw format supports a single physical column, the "
                                      f"table has {len(columns)} ({', '.join(n for n, _ in columns)})")
        root = columns[0][1].root
        if root not in ("STRING", "VARCHAR", "CHAR", "BYTES", "VARBINARY", "BINARY"):
            raise NotSupportedYet(f"raw format for a {columns[0][1].base()} column (table {table!r}); STRING or BYTES")

    def decoder(self, table: str, columns: Columns, options: dict[str, str]) -> Decoder:
        name, t = columns[0]
        charset = options.get("charset", "UTF-8")
        as_text = t.root in ("STRING", "VARCHAR", "CHAR")
        return lambda data: make_row([data.decode(charset) if as_text else bytes(data)], (name,))

    def encoder(self, table: str, columns: Columns, options: dict[str, str]) -> Encoder:
        charset = options.get("charset", "UTF-8")
        return lambda row: b"" if row[0] is None else (row[0].encode(charset) if isinstance(row[0], str)
                                                       else bytes(row[0]))


for _factory in (CsvFormatFactory(), JsonFormatFactory(), RawFormatFactory()):
    register_format(_factory)
