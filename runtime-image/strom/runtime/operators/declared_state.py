"""Keyed state of a declared numeric type holds what PyFlink's state holds.

PyFlink writes keyed state through the coder of the descriptor's type, so `ValueStateDescriptor('s',
Types.FLOAT())` holds a 32-bit float and a SHORT state refuses an int out of its range (OverflowError),
exactly as an operator's declared output does (strom.common.declared_numbers). A state whose descriptor
declares such a type (or a tuple/row with such fields) is handed to the user's function wrapped here:
writes are shaped by `TypeInformation.convert`, everything else goes to the backend's state. States of
other types are returned as they are, so they pay nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strom.datastream.state import ListState, MapState, ValueState


def _converter(type_info: Any) -> Callable[[Any], Any] | None:
    if type_info is not None and getattr(type_info, "needs_conversion", False):
        convert: Callable[[Any], Any] = type_info.convert
        return convert
    return None


def _shape(convert: Callable[[Any], Any] | None, value: Any) -> Any:
    return value if convert is None or value is None else convert(value)


class _Delegating:
    __slots__ = ("_state",)

    def __init__(self, state: Any) -> None:
        self._state = state

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)

    def __iter__(self) -> Any:
        return iter(self._state)


class DeclaredValueState(_Delegating):
    __slots__ = ("_convert",)

    def __init__(self, state: Any, convert: Callable[[Any], Any]) -> None:
        super().__init__(state)
        self._convert = convert

    def update(self, value: Any) -> None:  # hot path: called per record
        self._state.update(None if value is None else self._convert(value))


class DeclaredListState(_Delegating):
    __slots__ = ("_convert",)

    def __init__(self, state: Any, convert: Callable[[Any], Any]) -> None:
        super().__init__(state)
        self._convert = convert

    def add(self, value: Any) -> None:  # hot path: called per record
        self._state.add(_shape(self._convert, value))

    def add_all(self, values: list[Any]) -> None:
        self._state.add_all([_shape(self._convert, v) for v in values])

    def update(self, values: list[Any]) -> None:
        self._state.update([_shape(self._convert, v) for v in values])


class DeclaredMapState(_Delegating):
    __slots__ = ("_key", "_value")

    def __init__(self, state: Any, key: Callable[[Any], Any] | None, value: Callable[[Any], Any] | None) -> None:
        super().__init__(state)
        self._key, self._value = key, value

    def put(self, key: Any, value: Any) -> None:  # hot path: called per record
        self._state.put(_shape(self._key, key), _shape(self._value, value))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self._state.put_all({_shape(self._key, k): _shape(self._value, v) for k, v in dict_value.items()})


# isinstance(state, ValueState) keeps working for what user functions receive
ValueState.register(DeclaredValueState)
ListState.register(DeclaredListState)
MapState.register(DeclaredMapState)


def with_declared_types(state: Any, descriptor: Any) -> Any:
    """`state` as the user's function should see it: wrapped when its descriptor declares a type whose
    values PyFlink's coders shape, else `state` itself."""
    kind = getattr(descriptor, "kind", None)
    convert = _converter(getattr(descriptor, "type_info", None))
    if kind == "value" and convert is not None:
        return DeclaredValueState(state, convert)
    if kind == "list" and convert is not None:
        return DeclaredListState(state, convert)
    if kind == "map":
        key = _converter(getattr(descriptor, "key_type_info", None))
        if key is not None or convert is not None:
            return DeclaredMapState(state, key, convert)
    return state
