"""PyFlink's type info classes are what `Types.*` returns (issue 18): user code that checks
`isinstance(t, ListTypeInfo)` or reads `get_element_type()` works, and the SQL time factory gives the
same types as `Types.SQL_*`. Expected values are the arguments the test passes in."""

from __future__ import annotations

import pytest
from strom.common.typeinfo import (
    BasicArrayTypeInfo,
    DateTypeInfo,
    InstantTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    SqlTimeTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    Types,
)


@pytest.mark.parametrize(
    ("factory", "cls"),
    [(Types.LIST, ListTypeInfo), (Types.BASIC_ARRAY, BasicArrayTypeInfo),
     (Types.PRIMITIVE_ARRAY, PrimitiveArrayTypeInfo), (Types.OBJECT_ARRAY, ObjectArrayTypeInfo)],
)
def test_array_and_list_types_are_their_pyflink_classes_and_know_their_element(factory, cls):
    t = factory(Types.INT())
    assert isinstance(t, cls) and t.get_element_type() == Types.INT()
    assert t == cls(Types.INT()) and t != cls(Types.STRING())


def test_a_map_type_knows_its_key_and_value_types():
    t = Types.MAP(Types.STRING(), Types.LONG())
    assert isinstance(t, MapTypeInfo)
    assert (t.get_key_type(), t.get_value_type()) == (Types.STRING(), Types.LONG())


def test_time_types_are_their_pyflink_classes():
    assert isinstance(Types.SQL_DATE(), DateTypeInfo) and SqlTimeTypeInfo.DATE() == Types.SQL_DATE()
    assert isinstance(Types.SQL_TIME(), TimeTypeInfo) and SqlTimeTypeInfo.TIME() == Types.SQL_TIME()
    assert isinstance(Types.SQL_TIMESTAMP(), TimestampTypeInfo)
    assert SqlTimeTypeInfo.TIMESTAMP() == Types.SQL_TIMESTAMP() != Types.SQL_DATE()
    assert isinstance(Types.INSTANT(), InstantTypeInfo)
