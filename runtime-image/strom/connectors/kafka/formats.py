"""Row (de)serialization schemas for message values: PyFlink's JSON and CSV row formats.

`JsonRowDeserializationSchema.builder().type_info(Types.ROW_NAMED([...], [...])).build()` turns a JSON
object into a `Row` of the named fields (missing fields are None; `fail_on_missing_field()` refuses
them, `ignore_parse_errors()` drops malformed messages); the serialization schemas write a Row (or a
tuple, or a dict) as a JSON object or a CSV line of the declared fields.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from strom.common.row import Row, make_row
from strom.common.typeinfo import RowTypeInfo


def _row_type(type_info: Any, what: str) -> RowTypeInfo:
    if not isinstance(type_info, RowTypeInfo):
        raise TypeError(f"{what} needs a row type (Types.ROW_NAMED(...)), got {type_info!r}")
    return type_info


def _fields(value: Any, names: list[str]) -> list[Any]:
    if isinstance(value, dict):
        return [value.get(n) for n in names]
    if isinstance(value, Row) and getattr(value, "_fields", None):
        d = value.as_dict()
        return [d.get(n) for n in names]
    return list(value)


class JsonRowDeserializationSchema:
    def __init__(self, type_info: RowTypeInfo, fail_on_missing_field: bool, ignore_parse_errors: bool) -> None:
        self.type_info = type_info
        self.fail_on_missing_field = fail_on_missing_field
        self.ignore_parse_errors = ignore_parse_errors

    @staticmethod
    def builder() -> JsonRowDeserializationSchemaBuilder:
        return JsonRowDeserializationSchemaBuilder()

    def get_produced_type(self) -> RowTypeInfo:
        return self.type_info

    def deserialize(self, data: bytes) -> Row | None:
        names = self.type_info.get_field_names()
        try:
            obj = json.loads(data)
            if not isinstance(obj, dict):
                raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
            if self.fail_on_missing_field:
                missing = [n for n in names if n not in obj]
                if missing:
                    raise ValueError(f"field {missing[0]!r} is missing")
        except ValueError as exc:
            if self.ignore_parse_errors:
                return None
            raise ValueError(f"JSON row: cannot read message {data[:80]!r}: {exc}") from None
        return make_row([obj.get(n) for n in names], tuple(names))


class JsonRowDeserializationSchemaBuilder:
    def __init__(self) -> None:
        self._type_info: RowTypeInfo | None = None
        self._fail = False
        self._ignore = False

    def type_info(self, type_info: Any) -> JsonRowDeserializationSchemaBuilder:
        self._type_info = _row_type(type_info, "JsonRowDeserializationSchema")
        return self

    def fail_on_missing_field(self) -> JsonRowDeserializationSchemaBuilder:
        self._fail = True
        return self

    def ignore_parse_errors(self) -> JsonRowDeserializationSchemaBuilder:
        self._ignore = True
        return self

    def build(self) -> JsonRowDeserializationSchema:
        if self._type_info is None:
            raise ValueError("JsonRowDeserializationSchema: call type_info(Types.ROW_NAMED(...)) first")
        return JsonRowDeserializationSchema(self._type_info, self._fail, self._ignore)


class JsonRowSerializationSchema:
    def __init__(self, type_info: RowTypeInfo) -> None:
        self.type_info = type_info

    @staticmethod
    def builder() -> JsonRowSerializationSchemaBuilder:
        return JsonRowSerializationSchemaBuilder()

    def serialize(self, value: Any) -> bytes:
        names = self.type_info.get_field_names()
        return json.dumps(dict(zip(names, _fields(value, names), strict=False)), separators=(",", ":")).encode()


class JsonRowSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._type_info: RowTypeInfo | None = None

    def with_type_info(self, type_info: Any) -> JsonRowSerializationSchemaBuilder:
        self._type_info = _row_type(type_info, "JsonRowSerializationSchema")
        return self

    def build(self) -> JsonRowSerializationSchema:
        if self._type_info is None:
            raise ValueError("JsonRowSerializationSchema: call with_type_info(Types.ROW_NAMED(...)) first")
        return JsonRowSerializationSchema(self._type_info)


class CsvRowSerializationSchema:
    def __init__(self, type_info: RowTypeInfo, delimiter: str = ",") -> None:
        self.type_info = type_info
        self.delimiter = delimiter

    class Builder:
        def __init__(self, type_info: Any) -> None:
            self._type_info = _row_type(type_info, "CsvRowSerializationSchema")
            self._delimiter = ","

        def set_field_delimiter(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._delimiter = c
            return self

        def build(self) -> CsvRowSerializationSchema:
            return CsvRowSerializationSchema(self._type_info, self._delimiter)

    def serialize(self, value: Any) -> bytes:
        buf = io.StringIO()
        csv.writer(buf, delimiter=self.delimiter, lineterminator="").writerow(
            _fields(value, self.type_info.get_field_names())
        )
        return buf.getvalue().encode()


class CsvRowDeserializationSchema:
    def __init__(self, type_info: RowTypeInfo, delimiter: str = ",") -> None:
        self.type_info = type_info
        self.delimiter = delimiter

    class Builder:
        def __init__(self, type_info: Any) -> None:
            self._type_info = _row_type(type_info, "CsvRowDeserializationSchema")
            self._delimiter = ","

        def set_field_delimiter(self, c: str) -> CsvRowDeserializationSchema.Builder:
            self._delimiter = c
            return self

        def build(self) -> CsvRowDeserializationSchema:
            return CsvRowDeserializationSchema(self._type_info, self._delimiter)

    def get_produced_type(self) -> RowTypeInfo:
        return self.type_info

    def deserialize(self, data: bytes) -> Row:
        (fields,) = list(csv.reader([data.decode()], delimiter=self.delimiter)) or [[]]
        names = self.type_info.get_field_names()
        if len(fields) != len(names):
            raise ValueError(f"CSV row: {len(fields)} fields in {data[:80]!r}, the row type has {len(names)}")
        types = self.type_info.field_types
        return make_row([_parse(f, t) for f, t in zip(fields, types, strict=True)], tuple(names))


def _parse(text: str, type_info: Any) -> Any:
    """A CSV field as its declared basic type (an empty field is null, as Flink's CSV format)."""
    if text == "":
        return None
    py_type = getattr(type_info, "py_type", None)
    if py_type is bool or getattr(type_info, "name", "") == "BOOLEAN":
        return text.strip().lower() == "true"
    if isinstance(py_type, tuple):
        py_type = py_type[0]
    if py_type in (int, float, str):
        try:
            return py_type(text)
        except ValueError:
            raise ValueError(f"CSV row: {text!r} is not a {type_info!r}") from None
    return text
