"""Drawing results as Flink's SQL Client does (pure: lines of text in, lines out).

* tableau (TableResult.print's format, strom.table.tableau): a bordered table printed row by row as a
  streaming result arrives, with an `op` column, ending "Received a total of N rows"; a batch result sized by
  its content, ending "N rows in set";
* the full-screen `table` and `changelog` views: a title, a status line (refresh interval or "Table program
  finished.", the page, the update time), the rows of the current page, and Flink's key hints at the bottom.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strom.table import tableau
from strom.table.tableau import border_line, cells_line, fit_cell
from strom.table.types import DataType

Columns = Sequence[tuple[str, DataType]]

# Flink's key hints, but for "O Open Row" (row selection is not implemented)
TABLE_KEYS = [("Q", "Quit"), ("+", "Inc Refresh"), ("G", "Goto Page"), ("N", "Next Page"),
              ("R", "Refresh"), ("-", "Dec Refresh"), ("L", "Last Page"), ("P", "Prev Page")]
CHANGELOG_KEYS = [("Q", "Quit"), ("+", "Inc Refresh"), ("R", "Refresh"), ("-", "Dec Refresh")]
REFRESH_INTERVALS = [(0.1, "100 ms"), (0.5, "500 ms"), (1.0, "1 s"), (5.0, "5 s"), (10.0, "10 s"), (60.0, "1 min")]
DEFAULT_REFRESH = 2  # 1 s
HEADER_LINES, FOOTER_LINES = 3, 2  # title, status, blank | the two lines of key hints


def _rows_word(n: int) -> str:
    return f"{n} row{'s' if n != 1 else ''}"


class StreamingTableau:
    """Flink's streaming tableau: the header first, each change as it arrives, then the count."""

    def __init__(self, columns: Columns, max_column_width: int) -> None:
        self.columns = list(columns)
        self.widths = [2] + [max(len(n), _type_width(t, max_column_width), len(tableau.NULL)) for n, t in columns]

    def header(self) -> list[str]:
        names = ["op"] + [n for n, _ in self.columns]
        return [border_line(self.widths), cells_line(names, self.widths), border_line(self.widths)]

    def row(self, kind: str, values: Sequence[Any]) -> str:
        cells = [kind] + [tableau.cell(v, t) for v, (_, t) in zip(values, self.columns, strict=True)]
        return cells_line(cells, self.widths)

    def footer(self, count: int, *, cancelled: bool) -> list[str]:
        lines = [border_line(self.widths)] if count else []
        if cancelled:
            return lines + [f"Query terminated, received a total of {_rows_word(count)}", ""]
        return lines + [f"Received a total of {_rows_word(count)}", ""]


def batch_tableau(columns: Columns, rows: Sequence[Sequence[Any]]) -> list[str]:
    """A finished result sized by its content (SHOW, DESCRIBE, a batch query)."""
    out: list[str] = []
    tableau.print_batch(list(columns), rows, out.append)
    return out + [""]


def _type_width(t: DataType, max_column_width: int) -> int:
    width = tableau.width_by_type(t)
    return max_column_width if width == tableau.MAX_COLUMN_WIDTH else width


def _center(text: str, width: int) -> str:
    return text.center(width).rstrip()


def _status_line(left: str, middle: str, right: str, width: int) -> str:
    line = list(" " + left.ljust(width))
    start = max(len(left) + 3, (width - len(middle)) // 2)
    line[start:start + len(middle)] = middle
    end = max(start + len(middle) + 2, width - len(right))
    line[end:end + len(right)] = right
    return "".join(line)[:max(width, end + len(right))].rstrip()


def _key_lines(keys: list[tuple[str, str]], width: int) -> list[str]:
    """Flink's two lines of key hints: the first half of the keys on the first line, the rest below."""
    half = (len(keys) + 1) // 2
    cell = max(12, width // max(half, 1))
    lines = []
    for part in (keys[:half], keys[half:]):
        lines.append("".join(f"{k} {label}".ljust(cell) for k, label in part).rstrip())
    return lines


def page_count(total: int, page_size: int) -> int:
    return max(1, (total + page_size - 1) // page_size)


def render_view(
    *,
    title: str,
    columns: Columns,
    rows: Sequence[Sequence[Any]],
    op: Sequence[str] | None,
    status: str,
    page: int | None,
    updated: str,
    width: int,
    height: int,
    max_column_width: int,
) -> list[str]:
    """One frame of the `table` (op None, paged) or `changelog` (op per row, the latest rows) view.
    `page` is 1-based, None for the last page."""
    page_size = max(1, height - HEADER_LINES - FOOTER_LINES - 1)
    if op is None:
        pages = page_count(len(rows), page_size)
        number = pages if page is None else min(max(page, 1), pages)
        shown = list(rows[(number - 1) * page_size: number * page_size])
        shown_op: list[str] = []
        page_text = f"Page: {'Last' if page is None or number == pages else number} of {pages}"
        keys = TABLE_KEYS
    else:
        shown = list(rows[-page_size:])
        shown_op = list(op[-page_size:])
        page_text = ""
        keys = CHANGELOG_KEYS
    names = ([" op"] if op is not None else []) + [n for n, _ in columns]
    text_rows = [[tableau.cell(v, t) for v, (_, t) in zip(r, columns, strict=True)] for r in shown]
    widths = [min(max_column_width, max([len(n)] + [len(r[i]) for r in text_rows]))
              for i, (n, _) in enumerate(columns)]
    if op is not None:
        widths = [3] + widths
        text_rows = [[k] + r for k, r in zip(shown_op, text_rows, strict=True)]
    body = [" " + " ".join(fit_cell(c, w) for c, w in zip(r, widths, strict=True)) for r in [names] + text_rows]
    lines = [_center(title, width), _status_line(status, page_text, f"Updated: {updated}", width), ""]
    lines += [line[:width] for line in body]
    lines += [""] * max(0, height - FOOTER_LINES - len(lines))
    return lines + _key_lines(keys, width)
