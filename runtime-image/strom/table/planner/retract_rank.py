"""Top-N over an updating input, and RANK()/DENSE_RANK() Top-N, as Flink's RetractableTopNFunction: keyed by
the partition, every row of the partition kept sorted (a retracted top row is replaced from below the top),
a changelog out as the top changes.

Rank numbers: ROW_NUMBER numbers rows 1, 2, 3 in order (ties after the rows already there); RANK gives tied
rows one number and skips (1, 1, 3); DENSE_RANK does not skip (1, 1, 2); a row is in the top when its number
is <= N, so RANK/DENSE_RANK may hold more than N rows.
Per input row the top before and after are compared: with the rank number, per rank a changed row is
-U(old, rank) +U(new, rank), a rank that disappeared -D, a new one +I; without it, rows that left the top -D,
rows that entered +I. -U/-D of a row not kept (never in the partition) is ignored, as Flink does without
state TTL. BATCH (`final_only`): each partition's final top rows (+I) at the end of the input.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator
from typing import Any

from strom.common.row import RowKind
from strom.common.time import MAX_WATERMARK
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor
from strom.table.planner.plan import SortKey
from strom.table.planner.rank import SortKeyOf
from strom.table.planner.rows import make_row

_RETRACT = (RowKind.UPDATE_BEFORE, RowKind.DELETE)


def top_rows(keys: list[Any], rows: list[tuple], rank_type: str, rank_end: int | None) -> list[tuple[tuple, int]]:
    """(row, rank number) of the top of a sorted partition."""
    out: list[tuple[tuple, int]] = []
    rank = 0
    for i, (key, row) in enumerate(zip(keys, rows, strict=True)):
        new_key = i == 0 or key != keys[i - 1]
        if rank_type == "ROW_NUMBER":
            rank = i + 1
        elif rank_type == "RANK":
            rank = i + 1 if new_key else rank
        else:
            rank = rank + 1 if new_key else rank
        if rank_end is not None and rank > rank_end:
            break
        out.append((row, rank))
    return out


class RetractableTopNFunction(KeyedProcessFunction):
    def __init__(self, order: list[SortKey], rank_end: int | None, output_rank: bool, names: list[str],
                 final_only: bool, rank_type: str = "ROW_NUMBER", append_only: bool = False) -> None:
        self.sort_key = SortKeyOf(order)
        self.rank_end = rank_end
        self.output_rank = output_rank
        self.names = tuple(names)
        self.final_only = final_only
        self.rank_type = rank_type
        # over an insert-only input ranks only grow: a row that fell out of the top never comes back
        self.append_only = append_only

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("retract-top-n", Types.PICKLED_BYTE_ARRAY()))

    def _row(self, values: tuple, rank: int, kind: RowKind) -> Any:
        return make_row((*values, rank) if self.output_rank else values, self.names, kind)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        stored = self.state.value()
        keys, rows = stored if stored is not None else ([], [])
        if stored is None and self.final_only:
            ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
        before = top_rows(keys, rows, self.rank_type, self.rank_end)
        values = tuple(value)
        key = self.sort_key(value)
        if value.get_row_kind() in _RETRACT:
            lo, hi = bisect.bisect_left(keys, key), bisect.bisect_right(keys, key)
            found = next((i for i in range(lo, hi) if rows[i] == values), None)
            if found is None:
                return
            del keys[found], rows[found]
        else:
            pos = bisect.bisect_right(keys, key)
            keys.insert(pos, key)
            rows.insert(pos, values)
        after = top_rows(keys, rows, self.rank_type, self.rank_end)
        if self.append_only and len(after) < len(rows):
            del keys[len(after):], rows[len(after):]
        if rows:
            self.state.update((keys, rows))
        else:
            self.state.clear()
        if self.final_only:
            return
        yield from self._changes(before, after)

    def _changes(self, before: list[tuple[tuple, int]], after: list[tuple[tuple, int]]) -> Iterator[Any]:
        if not self.output_rank:
            gone = Counter(r for r, _ in before) - Counter(r for r, _ in after)
            came = Counter(r for r, _ in after) - Counter(r for r, _ in before)
            for row in _ordered(gone, before):
                yield self._row(row, 0, RowKind.DELETE)
            for row in _ordered(came, after):
                yield self._row(row, 0, RowKind.INSERT)
            return
        ranks = sorted({r for _, r in before} | {r for _, r in after})
        for rank in ranks:
            old = Counter(row for row, r in before if r == rank)
            new = Counter(row for row, r in after if r == rank)
            gone = list(_ordered(old - new, before))
            came = list(_ordered(new - old, after))
            for a, b in zip(gone, came, strict=False):
                yield self._row(a, rank, RowKind.UPDATE_BEFORE)
                yield self._row(b, rank, RowKind.UPDATE_AFTER)
            for a in gone[len(came):]:
                yield self._row(a, rank, RowKind.DELETE)
            for b in came[len(gone):]:
                yield self._row(b, rank, RowKind.INSERT)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        stored = self.state.value()
        if stored is not None:
            for values, rank in top_rows(stored[0], stored[1], self.rank_type, self.rank_end):
                yield self._row(values, rank, RowKind.INSERT)
        self.state.clear()


def _ordered(counts: Counter, top: list[tuple[tuple, int]]) -> Iterator[tuple]:
    """The rows of a multiset in the order they stand in the top (deterministic output order)."""
    left = Counter(counts)
    for row, _ in top:
        if left[row] > 0:
            left[row] -= 1
            yield row
