"""A running query's result as the client holds it (pure): Flink's materialized table for the `table` mode
(inserts and update-afters add a row, update-befores and deletes retract an equal one) and the change buffer
of the `changelog` mode, both capped at `sql-client.execution.max-table-result.rows` (the oldest go first, as
in Flink's MaterializedCollectStreamResult)."""

from __future__ import annotations

from collections import deque
from typing import Any

KINDS = ("+I", "-U", "+U", "-D")


def row_kind(row: Any) -> str:
    """+I, -U, +U or -D of a result row (a row without a kind is an insert)."""
    kind = row.get_row_kind().value if hasattr(row, "get_row_kind") else 0
    return KINDS[kind]


class MaterializedTable:
    """The current table a changelog reduces to, in arrival order."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self.rows: list[tuple[Any, ...]] = []
        self.version = 0  # bumped on every change: the view redraws only when it moved

    def apply(self, kind: str, values: tuple[Any, ...]) -> None:
        self.version += 1
        if kind in ("+I", "+U"):
            self.rows.append(values)
            if len(self.rows) > self.max_rows:
                del self.rows[0]
            return
        for i in range(len(self.rows) - 1, -1, -1):  # the latest equal row: what an update-before retracts
            if self.rows[i] == values:
                del self.rows[i]
                return


class ChangelogBuffer:
    """The changes in arrival order, each with its op."""

    def __init__(self, max_rows: int) -> None:
        self.rows: deque[tuple[str, tuple[Any, ...]]] = deque(maxlen=max_rows)
        self.version = 0

    def apply(self, kind: str, values: tuple[Any, ...]) -> None:
        self.version += 1
        self.rows.append((kind, values))
