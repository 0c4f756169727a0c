"""How PyFlink's `print()` writes a record: Java's `toString` of the value of the stream's declared type.

PyFlink prints through Flink's Java PrintSinkFunction. A stream with a declared type reaches it as
Java objects, so a `Types.TUPLE` record prints as a Flink Tuple (`(And,5)`), a `Types.ROW` record as
a Row with its kind (`+I[And, 5]`), booleans as `true`/`false`, None as `null`, doubles as Java
writes them (`1.0E7`); a stream without a type (pickled Python objects) is first mapped to
`str(value)`, so it prints as Python would. `java_formatter(type_info)` builds the function once per
print operator.
"""

from __future__ import annotations

import datetime
import decimal
import math
import struct
from collections.abc import Callable
from typing import Any

from strom.common.row import Row, RowKind
from strom.common.typeinfo import (
    BasicTypeInfo,
    ContainerTypeInfo,
    PickledBytesTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)

Formatter = Callable[[Any], str]

_ROW_KIND = {RowKind.INSERT: "+I", RowKind.UPDATE_BEFORE: "-U", RowKind.UPDATE_AFTER: "+U", RowKind.DELETE: "-D"}


def java_double(x: float) -> str:
    """Java's Double.toString: plain between 1e-3 and 1e7, else d.dddE±n (shortest round-trip digits)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(float(x))
    return _scientific(repr(float(x)))


def java_float(x: float) -> str:
    """Java's Float.toString: as java_double, with the shortest digits that round-trip through 32 bits."""
    if math.isnan(x) or math.isinf(x):
        return java_double(x)
    try:
        as32 = struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # beyond a 32-bit float's range: Java would hold Infinity
        return "Infinity" if x > 0 else "-Infinity"
    for digits in range(1, 10):
        text = f"{as32:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == as32:
            break
    value = float(text)
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        plain = format(decimal.Decimal(text), "f")
        return plain if "." in plain else plain + ".0"
    return _scientific(text)


def _scientific(text: str) -> str:
    sign, digits, exponent = decimal.Decimal(text).normalize().as_tuple()
    shown = "".join(map(str, digits))
    exp10 = len(shown) + int(exponent) - 1
    mantissa = shown[0] + "." + (shown[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{exp10}"


def java_string(value: Any) -> str:
    """Java's toString of a value without a declared type of its own (a field of a tuple or row)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, Row):
        return _row_string(value, [java_string] * len(value))
    if isinstance(value, tuple):
        return "(" + ",".join(java_string(v) for v in value) + ")"
    if isinstance(value, list | bytes | bytearray):
        return "[" + ", ".join(java_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_string(k)}={java_string(v)}" for k, v in value.items()) + "}"
    if isinstance(value, datetime.datetime):
        fraction = str(value.microsecond * 1000).rjust(9, "0").rstrip("0") or "0"
        return value.strftime("%Y-%m-%d %H:%M:%S") + "." + fraction
    return str(value)


def _row_string(row: Row, formatters: list[Formatter]) -> str:
    kind = _ROW_KIND.get(row.get_row_kind(), "+I")
    return kind + "[" + ", ".join(f(v) for f, v in zip(formatters, row, strict=False)) + "]"


def java_formatter(type_info: TypeInformation | None) -> Formatter:
    """The function that writes one record of a stream of `type_info` as PyFlink's print() does."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return str  # PyFlink maps untyped (pickled) records to str(value) before Java prints them
    if isinstance(type_info, TupleTypeInfo):
        fields = [java_formatter(t) for t in type_info.get_field_types()]

        def tuple_string(value: Any) -> str:  # hot path: called per record
            if not isinstance(value, tuple | list | Row):
                return java_string(value)
            return "(" + ",".join(_null_safe(f, v) for f, v in zip(fields, value, strict=False)) + ")"

        return tuple_string
    if isinstance(type_info, RowTypeInfo):
        row_fields = [_in_container(java_formatter(t)) for t in type_info.get_field_types()]

        def row_string(value: Any) -> str:  # hot path: called per record
            if isinstance(value, Row):
                return _row_string(value, row_fields)
            if isinstance(value, tuple | list):
                return "+I[" + ", ".join(f(v) for f, v in zip(row_fields, value, strict=False)) + "]"
            return java_string(value)

        return row_string
    if isinstance(type_info, BasicTypeInfo):
        if type_info.name == "FLOAT":
            return lambda v: java_float(v) if isinstance(v, float) else java_string(v)
        return java_string
    if isinstance(type_info, ContainerTypeInfo):
        return java_string
    return java_string


def _null_safe(formatter: Formatter, value: Any) -> str:
    return "null" if value is None else formatter(value)


def _in_container(formatter: Formatter) -> Formatter:
    """Fields of a row print null for None, as Java's deepToString does."""
    return lambda v: "null" if v is None else formatter(v)
