"""`Row`: PyFlink's record type, a tuple with optional field names."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any


class RowKind(Enum):
    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3


class Row(tuple[Any, ...]):  # Any: a row holds user values of any type
    """`Row(1, 'a')` or `Row(id=1, name='a')`; indexable like a tuple, fields by name."""

    _fields: tuple[str, ...] | None
    _row_kind: RowKind

    def __new__(cls, *args: Any, **kwargs: Any) -> Row:
        if args and kwargs:
            raise ValueError("Row takes positional values or keyword fields, not both")
        if kwargs:
            row = tuple.__new__(cls, kwargs.values())
            row._fields = tuple(kwargs)
        else:
            row = tuple.__new__(cls, args)
            row._fields = None
        row._row_kind = RowKind.INSERT
        return row

    def __call__(self, *values: Any) -> Row:
        """`Row('name', 'age')` makes a row class; calling it with values fills the fields."""
        if len(values) != len(self):
            raise ValueError(f"Row has {len(self)} fields, got {len(values)} values")
        return Row(**dict(zip(self, values, strict=True)))

    def __getattr__(self, name: str) -> Any:
        fields = tuple.__getattribute__(self, "_fields")
        if fields and name in fields:
            return self[fields.index(name)]
        raise AttributeError(name)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            if not self._fields or item not in self._fields:
                raise KeyError(item)
            return tuple.__getitem__(self, self._fields.index(item))
        return tuple.__getitem__(self, item)

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        if not self._fields:
            raise TypeError("cannot convert a Row without field names to a dict")
        return {
            k: (v.as_dict(True) if recursive and isinstance(v, Row) and v._fields else v)
            for k, v in zip(self._fields, self, strict=True)
        }

    def get_fields_by_names(self, names: list[str]) -> list[Any]:
        return [self[n] for n in names]

    def set_field_names(self, names: list[str]) -> None:
        self._fields = tuple(names)

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, kind: RowKind) -> None:
        self._row_kind = kind

    def __reduce__(self) -> tuple[Callable[..., Row], tuple[Any, ...]]:  # pickling keeps names and kind
        return (_make_row, (tuple(self), self._fields, self._row_kind))

    def __repr__(self) -> str:
        if self._fields:
            return "Row(" + ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self, strict=True)) + ")"
        return "<Row(" + ", ".join(repr(v) for v in self) + ")>"  # PyFlink's repr of a Row without names

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Row):
            return tuple(self) == tuple(other) and self._row_kind == other._row_kind
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


def _make_row(values: tuple[Any, ...], fields: tuple[str, ...] | None, kind: RowKind) -> Row:
    row = Row(*values) if not fields else Row(**dict(zip(fields, values, strict=True)))
    row._row_kind = kind
    return row
