"""Building result rows without Row's keyword path (a dict per row): the planner knows the field names."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from strom.common.row import Row, RowKind


def make_row(values: Iterable[Any], names: tuple[str, ...], kind: RowKind = RowKind.INSERT) -> Row:
    """Row(**dict(zip(names, values))) with `kind`, as Row's own constructor would build it."""
    row = tuple.__new__(Row, values)
    row._fields = names
    row._row_kind = kind
    return row
