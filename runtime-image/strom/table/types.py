"""`DataTypes`: Flink's SQL types (the common ones), named and printed as Flink prints them.

A DataType knows its SQL name, nullability and how to check/convert a Python value; the planner
uses these to derive result types and the tableau printer to size columns as Flink does.
"""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass, field, replace
from typing import Any

from strom.table.errors import ValidationException


@dataclass(frozen=True)
class DataType:
    """A SQL type. `root` is Flink's type root name (INTEGER is printed INT, as Flink does)."""

    root: str
    nullable: bool = True
    precision: int | None = None
    fields: tuple[tuple[str, DataType], ...] = field(default=())
    # "ROWTIME" or "PROCTIME" on a time attribute column (Flink prints `TIMESTAMP(3) *ROWTIME*`); any
    # expression over the column yields a plain TIMESTAMP, as in Flink
    time_attr: str | None = None
    scale: int | None = None  # DECIMAL(precision, scale)

    def not_null(self) -> DataType:
        return replace(self, nullable=False)

    def nullable_(self) -> DataType:
        return replace(self, nullable=True)

    def plain(self) -> DataType:
        """The type without its time-attribute mark."""
        return replace(self, time_attr=None) if self.time_attr else self

    def base(self) -> str:
        if self.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return f"{self.root}({3 if self.precision is None else self.precision})"
        if self.root == "DECIMAL":
            return f"DECIMAL({10 if self.precision is None else self.precision}, {self.scale or 0})"
        if self.root == "INTERVAL":
            return "INTERVAL SECOND(3)"
        if self.root == "ROW":
            return "ROW<" + ", ".join(f"`{n}` {t}" for n, t in self.fields) + ">"
        if self.root == "ARRAY":
            return f"ARRAY<{self.fields[0][1]}>"
        if self.root == "MAP":
            return f"MAP<{self.fields[0][1]}, {self.fields[1][1]}>"
        return self.root

    def __str__(self) -> str:
        mark = f" *{self.time_attr}*" if self.time_attr else ""
        return self.base() + ("" if self.nullable else " NOT NULL") + mark

    @property
    def is_timestamp(self) -> bool:
        return self.root in ("TIMESTAMP", "TIMESTAMP_LTZ")

    @property
    def is_numeric(self) -> bool:
        return self.root in _NUMERIC_RANK

    @property
    def is_integral(self) -> bool:
        return self.root in ("TINYINT", "SMALLINT", "INT", "BIGINT")

    def field_names(self) -> list[str]:
        return [n for n, _ in self.fields]

    def field_types(self) -> list[DataType]:
        return [t for _, t in self.fields]


_NUMERIC_RANK = {"TINYINT": 0, "SMALLINT": 1, "INT": 2, "BIGINT": 3, "DECIMAL": 4, "FLOAT": 5, "DOUBLE": 6}


_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


def wrap_integer(v: int, root: str) -> int:
    """Java's two's-complement overflow for Flink's integer types (INT_MAX + 1 is INT_MIN)."""
    bits = _BITS[root]
    half = 1 << (bits - 1)
    return ((v + half) % (1 << bits)) - half


def wider_numeric(a: DataType, b: DataType) -> DataType:
    """Flink's implicit widening between two numeric types (the common type of CASE, COALESCE, UNION; the
    type of integer arithmetic). DECIMAL with an integer or DECIMAL is the DECIMAL holding both."""
    root = a.root if _NUMERIC_RANK[a.root] >= _NUMERIC_RANK[b.root] else b.root
    if root == "DECIMAL":
        from strom.table.decimals import common_type

        return common_type(a, b)
    return DataType(root, a.nullable or b.nullable)


class DataTypes:
    """PyFlink's `DataTypes` factory (the types this slice executes)."""

    @staticmethod
    def TINYINT(nullable: bool = True) -> DataType:
        return DataType("TINYINT", nullable)

    @staticmethod
    def SMALLINT(nullable: bool = True) -> DataType:
        return DataType("SMALLINT", nullable)

    @staticmethod
    def INT(nullable: bool = True) -> DataType:
        return DataType("INT", nullable)

    @staticmethod
    def BIGINT(nullable: bool = True) -> DataType:
        return DataType("BIGINT", nullable)

    @staticmethod
    def FLOAT(nullable: bool = True) -> DataType:
        return DataType("FLOAT", nullable)

    @staticmethod
    def DOUBLE(nullable: bool = True) -> DataType:
        return DataType("DOUBLE", nullable)

    @staticmethod
    def STRING(nullable: bool = True) -> DataType:
        return DataType("STRING", nullable)

    @staticmethod
    def VARCHAR(length: int = 2147483647, nullable: bool = True) -> DataType:
        # Flink prints VARCHAR(2147483647) as STRING; shorter lengths are not enforced in this slice
        return DataType("STRING", nullable)

    @staticmethod
    def BOOLEAN(nullable: bool = True) -> DataType:
        return DataType("BOOLEAN", nullable)

    @staticmethod
    def DATE(nullable: bool = True) -> DataType:
        return DataType("DATE", nullable)

    @staticmethod
    def TIMESTAMP(precision: int = 6, nullable: bool = True) -> DataType:
        return DataType("TIMESTAMP", nullable, precision)

    @staticmethod
    def TIMESTAMP_LTZ(precision: int = 6, nullable: bool = True) -> DataType:
        """TIMESTAMP WITH LOCAL TIME ZONE: an instant; values are naive datetimes in UTC (Strom's session
        time zone, `table.local-time-zone`, is UTC)."""
        return DataType("TIMESTAMP_LTZ", nullable, precision)

    @staticmethod
    def TIMESTAMP_WITH_LOCAL_TIME_ZONE(precision: int = 6, nullable: bool = True) -> DataType:
        return DataTypes.TIMESTAMP_LTZ(precision, nullable)

    @staticmethod
    def MAP(key_type: DataType, value_type: DataType, nullable: bool = True) -> DataType:
        """A map (a Python dict) from `key_type` to `value_type`; the two are the type's fields."""
        return DataType("MAP", nullable, None, (("key", key_type), ("value", value_type)))

    @staticmethod
    def DECIMAL(precision: int = 10, scale: int = 0, nullable: bool = True) -> DataType:
        """An exact number with `precision` digits, `scale` of them after the point (values: decimal.Decimal)."""
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise ValidationException(f"DECIMAL({precision}, {scale}): precision must be 1..38 and scale 0..precision")
        return DataType("DECIMAL", nullable, precision, scale=scale)

    @staticmethod
    def FIELD(name: str, data_type: DataType, description: str | None = None) -> tuple[str, DataType]:
        return (name, data_type)

    @staticmethod
    def ROW(row_fields: list[tuple[str, DataType]] | None = None, nullable: bool = True) -> DataType:
        return DataType("ROW", nullable, None, tuple(row_fields or ()))

    @staticmethod
    def ARRAY(element_type: DataType, nullable: bool = True) -> DataType:
        """An array (a Python list) of `element_type` values; the element is the type's one field."""
        return DataType("ARRAY", nullable, None, (("element", element_type),))


def _not_yet(name: str):
    def factory(*args: Any, **kwargs: Any) -> DataType:
        from strom.table.errors import NotSupportedYet

        raise NotSupportedYet(f"DataTypes.{name}")

    factory.__name__ = name
    return staticmethod(factory)


# PyFlink's other types: present, refused with a clear message until the runtime handles them
for _name in ("TIME", "BYTES", "BINARY", "VARBINARY", "CHAR", "MULTISET",
              "INTERVAL", "NULL", "RAW"):
    setattr(DataTypes, _name, _not_yet(_name))


def type_of_value(value: Any) -> DataType:
    """The type Flink infers for a Python value in from_elements."""
    if isinstance(value, bool):
        return DataTypes.BOOLEAN()
    if isinstance(value, int):
        return DataTypes.BIGINT()
    if isinstance(value, float):
        return DataTypes.DOUBLE()
    if isinstance(value, decimal.Decimal):  # PyFlink: DECIMAL(38, 18)
        return DataTypes.DECIMAL(38, 18)
    if isinstance(value, str):
        return DataTypes.STRING()
    if isinstance(value, datetime.datetime):
        return DataTypes.TIMESTAMP(3)
    if isinstance(value, datetime.date):
        return DataTypes.DATE()
    if isinstance(value, datetime.timedelta):
        return DataType("INTERVAL", False, 3)
    if isinstance(value, dict):
        key = next((k for k in value if k is not None), None)
        item = next((v for v in value.values() if v is not None), None)
        return DataTypes.MAP(type_of_value(key) if key is not None else DataTypes.STRING(),
                             type_of_value(item) if item is not None else DataTypes.STRING())
    if isinstance(value, list):
        first = next((v for v in value if v is not None), None)
        return DataTypes.ARRAY(type_of_value(first) if first is not None else DataTypes.STRING())
    raise ValidationException(f"cannot infer a SQL type for value {value!r}; pass a schema (DataTypes.ROW)")


def check_value(value: Any, data_type: DataType, column: str) -> Any:
    """Validate one field of from_elements against its declared type (PyFlink's verify_schema)."""
    if value is None:
        if not data_type.nullable:
            raise ValidationException(f"column {column!r} is {data_type} but got None")
        return None
    ok = {
        "BOOLEAN": lambda v: isinstance(v, bool),
        "TINYINT": _is_int,
        "SMALLINT": _is_int,
        "INT": _is_int,
        "BIGINT": _is_int,
        "FLOAT": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "DOUBLE": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "STRING": lambda v: isinstance(v, str),
        "TIMESTAMP": lambda v: isinstance(v, datetime.datetime),
        "TIMESTAMP_LTZ": lambda v: isinstance(v, datetime.datetime),
        "DATE": lambda v: isinstance(v, datetime.date),
    }.get(data_type.root)
    if data_type.root == "DECIMAL" and isinstance(value, (decimal.Decimal, int, float)) and not isinstance(value, bool):
        from strom.table.decimals import fitter

        fitted = fitter(data_type)(value)
        if fitted is None:
            raise ValidationException(f"column {column!r} is {data_type} but {value!r} has more digits before the "
                                      "point than it holds")
        return fitted
    if data_type.root == "MAP" and isinstance(value, dict):
        kt, vt = data_type.fields[0][1], data_type.fields[1][1]
        return {check_value(k, kt, f"{column} key"): check_value(v, vt, f"{column}[{k!r}]") for k, v in value.items()}
    if data_type.root == "ARRAY" and isinstance(value, (list, tuple)):
        return [check_value(v, data_type.fields[0][1], f"{column}[{i + 1}]") for i, v in enumerate(value)]
    if ok is None or not ok(value):
        raise ValidationException(f"column {column!r} is {data_type} but got {value!r} ({type(value).__name__})")
    return float(value) if data_type.root in ("FLOAT", "DOUBLE") else value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
