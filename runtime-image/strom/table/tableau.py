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


def fit_cell(text: str, width: int) -> str:
    if len(text) > width:
        text = text[: max(0, width - 3)] + "..."
    return text.rjust(width)


def border_line(widths: list[int]) -> str:
    return "+" + "+".join("-" * (w + 2) for w in widths) + "+"


def cells_line(cells: list[str], widths: list[int]) -> str:
    return "|" + "|".join(" " + fit_cell(c, w) + " " for c, w in zip(cells, widths, strict=True)) + "|"


def print_streaming(
    columns: list[tuple[str, DataType]], rows: Iterable[Any], out: Callable[[str], None] = print
) -> None:
    """Rows are printed as they arrive (an unbounded result prints until it is cancelled)."""
    widths = [2] + [max(len(n), width_by_type(t), len(NULL)) for n, t in columns]
    names = ["op"] + [n for n, _ in columns]
    count = 0
    for row in rows:
        if count == 0:
            out(border_line(widths))
            out(cells_line(names, widths))
            out(border_line(widths))
        kind = row.get_row_kind().value if hasattr(row, "get_row_kind") else 0
        out(cells_line([_SHORT[kind]] + [cell(v, t) for v, (_, t) in zip(row, columns, strict=True)], widths))
        count += 1
    if count == 0:
        out("Empty set")
        return
    out(border_line(widths))
    out(f"Received a total of {count} row{'s' if count != 1 else ''}")


def print_batch(columns: list[tuple[str, DataType]], rows: Iterable[Any], out: Callable[[str], None] = print) -> None:
    rendered = [[cell(v, t) for v, (_, t) in zip(row, columns, strict=True)] for row in rows]
    if not rendered:
        out("Empty set")
        return
    names = [n for n, _ in columns]
    widths = [max([len(n)] + [len(r[i]) for r in rendered]) for i, n in enumerate(names)]
    out(border_line(widths))
    out(cells_line(names, widths))
    out(border_line(widths))
    for r in rendered:
        out(cells_line(r, widths))
    out(border_line(widths))
    out(f"{len(rendered)} row{'s' if len(rendered) != 1 else ''} in set")
