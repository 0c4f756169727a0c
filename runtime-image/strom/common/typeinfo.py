"""Type information: PyFlink's `Types.*`.

Strom ships Python objects between tasks with pickle, so type information does not
choose a serializer. It still matters for semantics a PyFlink user relies on: a
`Types.ROW`/`ROW_NAMED` output turns tuples into `Row`s, `get_execution_plan()`
and error messages name the types, and a declared numeric type holds its values as
PyFlink's coders hold them (see `declared_numbers`): an operator's declared output goes
through `convert` (PyFlink's Python coders: FLOAT rounds to 32 bits, an integer out of
BYTE/SHORT/INT/LONG range is an OverflowError), `from_collection`'s elements through
`convert_collection_element` (PyFlink converts them in Java: integers narrow, wrapping).
"""

from __future__ import annotations

from typing import Any

from strom.common.declared_numbers import INTEGER_BITS, check_integer, to_float32, wrap_integer
from strom.common.refused_names import refused_name
from strom.common.row import Row, RowKind, make_row


class TypeInformation:
    """Base of every type description."""

    name = "GenericType"

    def convert(self, value: Any) -> Any:
        """Shape a user value as PyFlink would hand it on from an operator declaring this type (identity
        for most types)."""
        return value

    def convert_collection_element(self, value: Any) -> Any:
        """Shape an element of `from_collection(..., type_info)` as PyFlink's Java side converts it."""
        return self.convert(value)

    @property
    def needs_conversion(self) -> bool:
        return False

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return id(type(self))


class BasicTypeInfo(TypeInformation):
    def __init__(self, name: str, py_type: type | tuple[type, ...]) -> None:
        self.name = name
        self.py_type = py_type
        self._bits = INTEGER_BITS.get(name)

    @property
    def needs_conversion(self) -> bool:
        return self._bits is not None or self.name == "FLOAT"

    def convert(self, value: Any) -> Any:
        return self._shape(value, wrap=False)

    def convert_collection_element(self, value: Any) -> Any:
        return self._shape(value, wrap=True)

    def _shape(self, value: Any, *, wrap: bool) -> Any:
        if self._bits is not None:
            if type(value) is not int:
                return value  # None, or a value of another type: not ours to judge here
            return wrap_integer(value, self._bits) if wrap else check_integer(value, self._bits, self.name)
        if self.name == "FLOAT" and isinstance(value, int | float) and not isinstance(value, bool):
            return to_float32(value)
        return value


class PickledBytesTypeInfo(TypeInformation):
    name = "PICKLED_BYTE_ARRAY"


class RowTypeInfo(TypeInformation):
    def __init__(self, field_types: list[TypeInformation], field_names: list[str] | None = None) -> None:
        self.field_types = list(field_types)
        self.field_names = list(field_names) if field_names else [f"f{i}" for i in range(len(field_types))]
        self.named = field_names is not None
        self.name = (
            "Row(" + ", ".join(f"{n}: {t!r}" for n, t in zip(self.field_names, self.field_types, strict=False)) + ")"
        )

    def get_field_names(self) -> list[str]:
        return list(self.field_names)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self.field_types)

    def get_field_index(self, name: str) -> int:
        return self.field_names.index(name)

    @property
    def needs_conversion(self) -> bool:
        return True

    def convert(self, value: Any) -> Any:
        """Rows carry the type's field names, `f0..fN` when the type names none (as PyFlink's row coder sets
        them); a named Row through an unnamed type keeps its own names. Fields hold their declared types."""
        return self._shape(value, wrap=False)

    def convert_collection_element(self, value: Any) -> Any:
        return self._shape(value, wrap=True)

    def _shape(self, value: Any, *, wrap: bool) -> Any:
        if isinstance(value, Row):
            fields = _fields_as_declared(value, self.field_types, wrap)
            if value._fields is None or (self.named and list(value._fields) != self.field_names):
                return _named_row(self.field_names, fields, value.get_row_kind())
            if fields is value:
                return value
            return _named_row(value._fields, fields, value.get_row_kind())
        if isinstance(value, tuple | list):
            return _named_row(self.field_names, _fields_as_declared(value, self.field_types, wrap), RowKind.INSERT)
        return value


class TupleTypeInfo(TypeInformation):
    def __init__(self, field_types: list[TypeInformation]) -> None:
        self.field_types = list(field_types)
        self.name = "Tuple(" + ", ".join(repr(t) for t in self.field_types) + ")"

    def get_field_types(self) -> list[TypeInformation]:
        return list(self.field_types)

    @property
    def needs_conversion(self) -> bool:
        return True

    def convert(self, value: Any) -> Any:
        return self._shape(value, wrap=False)

    def convert_collection_element(self, value: Any) -> Any:
        return self._shape(value, wrap=True)

    def _shape(self, value: Any, *, wrap: bool) -> Any:
        if isinstance(value, tuple | list | Row):
            shaped = _fields_as_declared(value, self.field_types, wrap)
            return shaped if type(shaped) is tuple else tuple(shaped)
        return value


def _named_row(names: Any, values: Any, kind: RowKind) -> Row:
    """A Row of `values` named `names`, as many fields as both have (Row(**dict(zip(names, values))))."""
    # hot path: called per record of a Types.ROW stream
    names = tuple(names)
    if len(names) != len(values):
        names, values = tuple(names[:len(values)]), list(values)[:len(names)]
    return make_row(values, names, kind)


def _fields_as_declared(values: Any, field_types: list[TypeInformation], wrap: bool) -> Any:
    """`values` with each field shaped by its declared type; `values` itself when no field changes."""
    out = None
    for i, (v, t) in enumerate(zip(values, field_types, strict=False)):
        if not t.needs_conversion:
            continue
        shaped = t.convert_collection_element(v) if wrap else t.convert(v)
        if shaped is not v:
            if out is None:
                out = list(values)
            out[i] = shaped
    return values if out is None else tuple(out)


class ContainerTypeInfo(TypeInformation):
    def __init__(self, name: str, *element_types: TypeInformation) -> None:
        self.element_types = element_types
        self.name = f"{name}<" + ", ".join(repr(t) for t in element_types) + ">"


# PyFlink's public type info classes, as `Types.*` returns them (isinstance checks in user code work).
class BasicArrayTypeInfo(ContainerTypeInfo):
    """An array of a basic type (`Types.BASIC_ARRAY`); a Python list."""

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__("BASIC_ARRAY", element_type)

    def get_element_type(self) -> TypeInformation:
        return self.element_types[0]


class PrimitiveArrayTypeInfo(ContainerTypeInfo):
    """An array of a primitive type (`Types.PRIMITIVE_ARRAY`); a Python list."""

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__("PRIMITIVE_ARRAY", element_type)

    def get_element_type(self) -> TypeInformation:
        return self.element_types[0]


class ObjectArrayTypeInfo(ContainerTypeInfo):
    """An array of any type (`Types.OBJECT_ARRAY`); a Python list."""

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__("OBJECT_ARRAY", element_type)

    def get_element_type(self) -> TypeInformation:
        return self.element_types[0]


class ListTypeInfo(ContainerTypeInfo):
    """A list (`Types.LIST`); a Python list."""

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__("LIST", element_type)

    def get_element_type(self) -> TypeInformation:
        return self.element_types[0]


class MapTypeInfo(ContainerTypeInfo):
    """A map (`Types.MAP`); a Python dict."""

    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        super().__init__("MAP", key_type_info, value_type_info)

    def get_key_type(self) -> TypeInformation:
        return self.element_types[0]

    def get_value_type(self) -> TypeInformation:
        return self.element_types[1]


class InstantTypeInfo(BasicTypeInfo):
    """`Types.INSTANT()`: a strom.common.Instant."""

    def __init__(self) -> None:
        super().__init__("INSTANT", object)


class DateTypeInfo(BasicTypeInfo):
    """`Types.SQL_DATE()`: a datetime.date."""

    def __init__(self) -> None:
        super().__init__("SQL_DATE", object)


class TimeTypeInfo(BasicTypeInfo):
    """`Types.SQL_TIME()`: a datetime.time."""

    def __init__(self) -> None:
        super().__init__("SQL_TIME", object)


class TimestampTypeInfo(BasicTypeInfo):
    """`Types.SQL_TIMESTAMP()`: a datetime.datetime."""

    def __init__(self) -> None:
        super().__init__("SQL_TIMESTAMP", object)


class SqlTimeTypeInfo:
    """PyFlink's factory of the SQL time types."""

    @staticmethod
    def DATE() -> DateTypeInfo:
        return DateTypeInfo()

    @staticmethod
    def TIME() -> TimeTypeInfo:
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP() -> TimestampTypeInfo:
        return TimestampTypeInfo()


class Types:
    """Factory of type descriptions with PyFlink's names."""

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo("STRING", str)

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo("BYTE", int)

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo("BOOLEAN", bool)

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo("SHORT", int)

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo("INT", int)

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo("LONG", int)

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo("FLOAT", float)

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo("DOUBLE", float)

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo("CHAR", str)

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo("BIG_INT", int)

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo("BIG_DEC", object)

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return DateTypeInfo()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return TimeTypeInfo()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return TimestampTypeInfo()

    @staticmethod
    def INSTANT() -> TypeInformation:
        return InstantTypeInfo()

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: list[TypeInformation]) -> RowTypeInfo:
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: list[str], field_types: list[TypeInformation]) -> RowTypeInfo:
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: list[TypeInformation]) -> TupleTypeInfo:
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def LIST(element_type: TypeInformation) -> TypeInformation:
        return ListTypeInfo(element_type)

    @staticmethod
    def MAP(key_type: TypeInformation, value_type: TypeInformation) -> TypeInformation:
        return MapTypeInfo(key_type, value_type)


ExternalTypeInfo = refused_name(
    "ExternalTypeInfo", "it bridges a Table API DataType into a DataStream in PyFlink's Java planner",
    "convert with StreamTableEnvironment.to_data_stream, whose records carry Types.ROW_NAMED",
)


def check_type_info(value: Any, *, argument: str) -> TypeInformation | None:
    if value is None or isinstance(value, TypeInformation):
        return value
    raise TypeError(f"invalid {argument} {value!r}: expected a Types.* type information or None")
