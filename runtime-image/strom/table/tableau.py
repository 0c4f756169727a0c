"""Flink's tableau format (TableResult.print): streaming results get an `op` column (+I/-U/+U/-D) and
columns sized by type, since rows are printed as they arrive; batch results are sized by content.
Cells are right-aligned, NULL prints as <NULL>, a cell wider than its column is cut with '...'."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from strom.table.planner.values import sql_string
from strom.table.types import DataType

MAX_COLUMN_WIDTH = 30  # Flink's default for types without a natural width (strings, doubles)
NULL = "<NULL>"
_SHORT = ("+I", "-U", "+U", "-D")


def width_by_type(t: DataType) -> int:
    """Flink's TableauStyle.columnWidthsByType, before the header and <NULL> widths are applied."""
    fixed = {"TINYINT": 4, "SMALLINT": 6, "INT": 11, "BIGINT": 20, "BOOLEAN": 5, "DATE": 10}
    if t.root in fixed:
        return fixed[t.root]
    if t.root == "DECIMAL":  # the digits, a sign and the point
        return (10 if t.precision is None else t.precision) + 2
    if t.root == "TIMESTAMP":
        p = 3 if t.precision is None else t.precision
        return 19 + (0 if p == 0 else p + 1)
    return MAX_COLUMN_WIDTH


def cell(v: Any, t: DataType) -> str:
    return NULL if v is None else sql_string(v, t)


def _fit(text: str, width: int) -> str:
    if len(text) > width:
        text = text[: max(0, width - 3)] + "..."
    return text.rjust(width)


def _border(widths: list[int]) -> str:
    return "+" + "+".join("-" * (w + 2) for w in widths) + "+"


def _line(cells: list[str], widths: list[int]) -> str:
    return "|" + "|".join(" " + _fit(c, w) + " " for c, w in zip(cells, widths, strict=True)) + "|"


def print_streaming(
    columns: list[tuple[str, DataType]], rows: Iterable[Any], out: Callable[[str], None] = print
) -> None:
    """Rows are printed as they arrive (an unbounded result prints until it is cancelled)."""
    widths = [2] + [max(len(n), width_by_type(t), len(NULL)) for n, t in columns]
    names = ["op"] + [n for n, _ in columns]
    count = 0
    for row in rows:
        if count == 0:
            out(_border(widths))
            out(_line(names, widths))
            out(_border(widths))
        kind = row.get_row_kind().value if hasattr(row, "get_row_kind") else 0
        out(_line([_SHORT[kind]] + [cell(v, t) for v, (_, t) in zip(row, columns, strict=True)], widths))
        count += 1
    if count == 0:
        out("Empty set")
        return
    out(_border(widths))
    out(f"Received a total of {count} row{'s' if count != 1 else ''}")


def print_batch(columns: list[tuple[str, DataType]], rows: Iterable[Any], out: Callable[[str], None] = print) -> None:
    rendered = [[cell(v, t) for v, (_, t) in zip(row, columns, strict=True)] for row in rows]
    if not rendered:
        out("Empty set")
        return
    names = [n for n, _ in columns]
    widths = [max([len(n)] + [len(r[i]) for r in rendered]) for i, n in enumerate(names)]
    out(_border(widths))
    out(_line(names, widths))
    out(_border(widths))
    for r in rendered:
        out(_line(r, widths))
    out(_border(widths))
    out(f"{len(rendered)} row{'s' if len(rendered) != 1 else ''} in set")
