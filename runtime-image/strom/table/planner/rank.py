"""Top-N and deduplication as Flink's AppendOnlyTopNFunction and Deduplicate functions: keyed by the
partition, the current top rows in ValueState, a changelog out.

Top-N over insert-only input, per new row (ties go after the rows already there, so an equal row never
displaces one):
* without the rank number: a row that does not make the top N emits nothing; one that does emits -D of
  the row it pushed out (if the top was full), then +I of itself;
* with the rank number: every rank from the new row's down to N changes: -U(old row, rank) +U(new row,
  rank) for a rank that had a row, +I(row, rank) for one that had none.
Deduplication (ROW_NUMBER() = 1 ordered by a time attribute, rank number not selected): +I for a key's
first row; keep-last replaces on every row (by rowtime: one not older), keep-first only with an older
rowtime (never by processing time); a replacement emits -U(previous) +U(new).
BATCH (`final_only`): nothing per row; each partition's final rows (+I) when the input ends.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

from strom.common.row import RowKind
from strom.common.time import MAX_WATERMARK
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor
from strom.table.errors import NotSupportedYet
from strom.table.planner.plan import SortKey
from strom.table.planner.rows import make_row


class _Descending:
    """Wraps a value so that sorting ascending orders it descending."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.v < self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and bool(self.v == other.v)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Descending, (self.v,))


_NEGATABLE = (int, float)  # exactly these types (not bool): a descending number sorts as its negation


class SortKeyOf:
    """A row -> a tuple that sorts as ORDER BY says (NULLS FIRST/LAST per key). A descending INT/BIGINT/DOUBLE
    value is negated (tuple comparison stays in C); other descending values are wrapped in _Descending. A
    column's values all take the same path, so keys of one column always compare with each other."""

    def __init__(self, keys: list[SortKey]) -> None:
        self.keys = [(k.index, k.descending, k.nulls_first) for k in keys]

    # hot path: called per record
    def __call__(self, row: Any) -> tuple[Any, ...]:
        out: list[Any] = []
        for index, descending, nulls_first in self.keys:
            v = row[index]
            if v is None:
                out += [0 if nulls_first else 2, 0]
            elif descending:
                out += [1, -v if type(v) in _NEGATABLE else _Descending(v)]
            else:
                out += [1, v]
        return tuple(out)


def _retracting(value: Any) -> bool:
    return value.get_row_kind() in (RowKind.UPDATE_BEFORE, RowKind.DELETE)


class TopNFunction(KeyedProcessFunction):
    emits_fresh_rows = True  # every Row it emits is built by make_row for that emission

    def __init__(self, order: list[SortKey], rank_end: int | None, output_rank: bool, names: list[str],
                 final_only: bool) -> None:
        self.sort_key = SortKeyOf(order)
        self.rank_end = rank_end
        self.output_rank = output_rank
        self.names = tuple(names)
        self.final_only = final_only

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("top-n", Types.PICKLED_BYTE_ARRAY()))

    def _row(self, values: tuple[Any, ...], rank: int, kind: RowKind) -> Any:
        return make_row((*values, rank) if self.output_rank else values, self.names, kind)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        if _retracting(value):
            raise NotSupportedYet("Top-N over an updating input (its -U/-D rows); Top-N runs over insert-only input")
        stored = self.state.value()
        keys, rows = stored if stored is not None else ([], [])
        key = self.sort_key(value)
        pos = bisect.bisect_right(keys, key)
        n = self.rank_end
        if n is not None and pos >= n:
            return  # not in the top N: no change
        if stored is None and self.final_only:
            ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
        before = list(rows) if self.output_rank else rows  # only the rank numbers need the old order
        keys.insert(pos, key)
        rows.insert(pos, tuple(value))
        evicted = None
        if n is not None and len(rows) > n:
            keys.pop()
            evicted = rows.pop()
        self.state.update((keys, rows))
        if self.final_only:
            return
        if not self.output_rank:
            if evicted is not None:
                yield self._row(evicted, 0, RowKind.DELETE)
            yield self._row(rows[pos], 0, RowKind.INSERT)
            return
        for rank in range(pos + 1, len(rows) + 1):
            if rank <= len(before):
                yield self._row(before[rank - 1], rank, RowKind.UPDATE_BEFORE)
                yield self._row(rows[rank - 1], rank, RowKind.UPDATE_AFTER)
            else:
                yield self._row(rows[rank - 1], rank, RowKind.INSERT)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        stored = self.state.value()
        if stored is not None:
            for rank, values in enumerate(stored[1], start=1):
                yield self._row(values, rank, RowKind.INSERT)
        self.state.clear()


class DeduplicateFunction(KeyedProcessFunction):
    emits_fresh_rows = True  # every Row it emits is built by make_row for that emission

    def __init__(self, keep: str, time_index: int, rowtime: bool, names: list[str], final_only: bool) -> None:
        self.keep = keep
        self.time_index = time_index
        self.rowtime = rowtime
        self.names = tuple(names)
        self.final_only = final_only

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("deduplicate", Types.PICKLED_BYTE_ARRAY()))

    def _replaces(self, previous: tuple[Any, ...], current: Any) -> bool:
        if not self.rowtime:
            return self.keep == "last"
        before, now = previous[self.time_index], current[self.time_index]
        if self.keep == "last":
            return bool(now >= before)
        return bool(now < before)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        if _retracting(value):
            raise NotSupportedYet("deduplication over an updating input (its -U/-D rows)")
        previous = self.state.value()
        if previous is None:
            self.state.update(tuple(value))
            if self.final_only:
                ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
            else:
                yield make_row(tuple(value), self.names, RowKind.INSERT)
            return
        if not self._replaces(previous, value):
            return
        self.state.update(tuple(value))
        if not self.final_only:
            yield make_row(previous, self.names, RowKind.UPDATE_BEFORE)
            yield make_row(tuple(value), self.names, RowKind.UPDATE_AFTER)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        stored = self.state.value()
        if stored is not None:
            yield make_row(stored, self.names, RowKind.INSERT)
        self.state.clear()
