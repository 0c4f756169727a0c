"""How SQL values print: Flink's CAST(... AS STRING) rules, used by CAST, the tableau printer and the
print connector (which prints Java's toString: `true`, `null`)."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

from strom.table.types import DataType


def java_double(v: float) -> str:
    """Java's Double.toString: 1.0, 0.001, 1.0E7, 1.5E-4, NaN, Infinity."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    if 1e-3 <= abs(v) < 1e7:
        s = repr(v)
        return s if ("." in s or "e" in s) else s + ".0"
    exponent = f"{v:.17e}".partition("e")[2]
    # shortest digits that round-trip, as repr gives them
    digits = repr(abs(v)).replace(".", "").split("e")[0].lstrip("0") or "0"
    digits = digits.rstrip("0") or "0"
    sign = "-" if v < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{int(exponent)}"


def sql_string(v: Any, data_type: DataType | None = None) -> str:
    """CAST(v AS STRING) as Flink renders it (booleans TRUE/FALSE, timestamps with their precision)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, decimal.Decimal):  # BigDecimal.toPlainString: 1.50, never 1.5E+1
        return format(v, "f")
    if isinstance(v, datetime.datetime):
        if data_type is not None and data_type.root == "TIMESTAMP_LTZ":  # an instant: shown in the session zone
            from strom.table.planner import session_zone

            v = session_zone.to_local(v)
        precision = 3 if data_type is None or data_type.precision is None else data_type.precision
        base = v.strftime("%Y-%m-%d %H:%M:%S")
        if precision == 0:
            return base
        return base + "." + f"{v.microsecond:06d}".ljust(precision, "0")[:precision]
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, dict) and data_type is not None and data_type.root == "MAP":  # Flink: {a=1, b=2}
        kt, vt = data_type.fields[0][1], data_type.fields[1][1]
        return "{" + ", ".join(("NULL" if k is None else sql_string(k, kt)) + "="
                               + ("NULL" if x is None else sql_string(x, vt)) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)) and data_type is not None and data_type.root == "ARRAY":  # Flink: [1, 2]
        element = data_type.fields[0][1]
        return "[" + ", ".join("NULL" if x is None else sql_string(x, element) for x in v) + "]"
    return str(v)


def java_string(v: Any, data_type: DataType | None = None) -> str:
    """A field as Flink's RowData toString prints it (the print connector): null, true, 1.0."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        return sql_string(v, data_type).replace(" ", "T")
    return sql_string(v, data_type)
