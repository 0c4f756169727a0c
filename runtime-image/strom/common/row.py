"""`Row`: PyFlink's record type, a mutable sequence of values with optional field names and a RowKind.

As in PyFlink (`pyflink.common.types.Row`): `row[0] = v` and `row['name'] = v` assign, a named row's
fields read as attributes (`row.name`), a Row made of names is a "row class" (`Person = Row('name',
'age'); Person('a', 1)`), `in` searches the values, equality needs equal values and row kind (a Row
never equals a tuple), and the hash is the hash of the values' tuple. A row's names are a tuple,
`None` for a row without names. Keyword fields are sorted by name, as PyFlink
documents (`Row(name='Alice', age=11)` is `Row(age=11, name='Alice')`); rows the engine builds from declared
names keep the declared order (`make_row`). Strom keeps what its tuple-based Row had beyond PyFlink: a Row
without names equal to a named Row of the same values and kind (PyFlink needs equal names), ordering
comparisons, `get_fields_by_names`.

Rows are created per record: the class has `__slots__` and `make_row` builds one without the keyword
path (no dict per row).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import Any


class RowKind(Enum):
    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3


_INSERT = RowKind.INSERT


class RowFieldError(KeyError, ValueError):
    """A field name the row does not have. PyFlink raises ValueError for an unknown name of a named row
    and KeyError for a name on a row without names; this is both, with one message naming the field."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Row:
    """`Row(1, 'a')` or `Row(id=1, name='a')`; indexable and assignable by position or field name."""

    __slots__ = ("_values", "_fields", "_row_kind")

    _values: list[Any]  # Any: a row holds user values of any type
    _fields: tuple[str, ...] | None
    _row_kind: RowKind

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # hot path: called per record
        if kwargs:
            if args:
                raise ValueError("Row takes positional values or keyword fields, not both")
            # PyFlink: "Row can be used to create a row object by using named arguments, the fields will
            # be sorted by names" (Row(name='Alice', age=11) is Row(age=11, name='Alice'))
            names = sorted(kwargs)
            self._values = [kwargs[n] for n in names]
            self._fields = tuple(names)
        else:
            self._values = list(args)
            self._fields = None
        self._row_kind = _INSERT

    # -- PyFlink's API -------------------------------------------------------------------------------
    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The fields as a dict; `recursive` turns nested Rows (also in lists and dicts) into dicts too."""
        if self._fields is None:
            raise TypeError("cannot convert a Row without field names to a dict (it is a Row class or unnamed)")
        if recursive:
            return dict(zip(self._fields, map(_as_plain, self._values), strict=False))
        return dict(zip(self._fields, self._values, strict=False))

    def get_fields_by_names(self, names: list[str]) -> list[Any]:
        return [self[n] for n in names]

    def set_field_names(self, names: Iterable[str]) -> None:
        self._fields = tuple(names)

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, kind: RowKind) -> None:
        self._row_kind = kind

    def _is_retract_msg(self) -> bool:
        return self._row_kind is RowKind.UPDATE_BEFORE or self._row_kind is RowKind.DELETE

    def _is_accumulate_msg(self) -> bool:
        return self._row_kind is RowKind.INSERT or self._row_kind is RowKind.UPDATE_AFTER

    def __call__(self, *values: Any) -> Row:
        """`Person = Row('name', 'age')` is a row class: `Person('a', 1)` is `Row(name='a', age=1)`. As in
        PyFlink, fewer values than names are allowed, more are not; the new row has the class's kind."""
        if len(values) > len(self._values):
            raise ValueError(
                f"cannot create a Row of the fields {self!r}: expected at most {len(self._values)} values, "
                f"got {len(values)}"
            )
        return make_row(values, tuple(self._values), self._row_kind)

    # -- sequence protocol -----------------------------------------------------------------------------
    def _index(self, name: str) -> int:
        fields = self._fields
        if fields is None:
            raise RowFieldError(f"field {name!r}: this Row has no field names; index it by position")
        try:
            return fields.index(name)
        except ValueError:
            raise RowFieldError(f"field {name!r} is not in this Row's fields {list(fields)}") from None

    def __getitem__(self, item: Any) -> Any:
        # hot path: called per field access
        if type(item) is str:
            return self._values[self._index(item)]
        return self._values[item]  # an int or a slice (a slice of a Row is a list, as in PyFlink)

    def __setitem__(self, key: Any, value: Any) -> None:
        if type(key) is str:
            self._values[self._index(key)] = value
        else:
            self._values[key] = value

    def __getattr__(self, name: str) -> Any:
        # only reached when no slot or method has the name: a field of a named row
        if name.startswith("_"):
            raise AttributeError(name)
        fields = self._fields
        if fields is not None and name in fields:
            return self._values[fields.index(name)]
        raise AttributeError(f"Row has no field {name!r} (its fields: {list(fields) if fields else 'none'})")

    def __contains__(self, item: object) -> bool:
        return item in self._values  # the values, as PyFlink's Row searches them (not the names)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __reduce__(self) -> tuple[Callable[..., Row], tuple[Any, ...]]:  # pickling keeps names and kind
        return (_make_row, (tuple(self._values), self._fields, self._row_kind))

    def __repr__(self) -> str:
        if self._fields is not None:
            return "Row(" + ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self._values, strict=False)) + ")"
        return "<Row(" + ", ".join(map(repr, self._values)) + ")>"

    # -- equality, hash and order --------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row):
            return False
        if self._values != other._values or self._row_kind is not other._row_kind:
            return False
        # PyFlink also needs equal names; Strom compares names only when both rows have them, so a result row
        # (named by its type) equals a Row(...) of its values written without names, as it did before
        fields, others = self._fields, other._fields
        return fields is None or others is None or fields == others

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        # PyFlink's hash, for dicts and sets inside one process only: partitions and key groups of Row keys
        # come from key_groups' stable encoding of the values, never from this salted hash
        return hash(tuple(self._values))

    def _ordered(self, other: object) -> list[Any] | None:
        if isinstance(other, Row):
            return other._values
        if isinstance(other, tuple | list):
            return list(other)
        return None

    def __lt__(self, other: object) -> bool:
        values = self._ordered(other)
        return NotImplemented if values is None else self._values < values

    def __le__(self, other: object) -> bool:
        values = self._ordered(other)
        return NotImplemented if values is None else self._values <= values

    def __gt__(self, other: object) -> bool:
        values = self._ordered(other)
        return NotImplemented if values is None else self._values > values

    def __ge__(self, other: object) -> bool:
        values = self._ordered(other)
        return NotImplemented if values is None else self._values >= values


_new_row = object.__new__
_Row_type = Row


def make_row(values: Iterable[Any], names: tuple[str, ...] | None = None, kind: RowKind = _INSERT) -> Row:
    """`Row` of `values` named `names` (in that order) with `kind`, without the keyword path's dict."""
    # hot path: called per record
    row: Row = _new_row(Row)
    row._values = list(values)
    row._fields = names
    row._row_kind = kind
    return row


def copy_row(row: Row) -> Row:
    """A new Row with the same names and kind whose values are a copy of the list (the values themselves are
    shared): what a consumer holds when the producer later assigns to its row."""
    return make_row(row._values, row._fields, row._row_kind)


def detached(values: list[Any]) -> list[Any]:
    """`values` with every Row replaced by a copy (`values` itself when it holds no Row).

    Where PyFlink serializes a record (every edge between tasks, a sink such as execute_and_collect's), the
    consumer holds its own copy: a function that emits a Row and then assigns to it (an accumulator kept in
    state or in a field) does not change what was emitted. Between chained operators the object itself is
    passed, as PyFlink's chained Python functions pass it."""
    # hot path: called per batch (the scan is C code)
    if _Row_type not in map(type, values):
        return values
    return [make_row(v._values, v._fields, v._row_kind) if type(v) is Row else v for v in values]


def row_values(row: Row) -> list[Any]:
    """The row's own list of values (not a copy): for code that converts fields in place."""
    return row._values


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row):
        return value.as_dict(True)
    if isinstance(value, list):
        return [_as_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_plain(v) for k, v in value.items()}
    return value


def _make_row(values: tuple[Any, ...], fields: tuple[str, ...] | None, kind: RowKind) -> Row:
    """Unpickles a Row (the name and signature stay: savepoints hold pickled Rows)."""
    return make_row(values, None if fields is None else tuple(fields), kind)
