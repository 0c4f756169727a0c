"""The regular join's runtime, as Flink's StreamingJoinOperator: per join key, each input's rows in MapState
(row -> [count, number of matching rows on the other side]); a row is matched against the other side's
rows of its key (and the residual condition) and the output follows Flink's changelog rules:

* accumulate (+I/+U) on an outer side with no match: +I[row + NULLs];
* a match for an outer row that had none: -D[NULLs + other], then +I of the joined rows;
* retract (-U/-D): the joined rows retracted (-D, or the input's kind on an inner side), and an outer row
  that loses its last match comes back as +I[NULLs + other].

A NULL in the key matches nothing (SQL equality), yet an outer side still emits its row with NULLs.
BATCH (`final_only`): rows are only stored; when the bounded inputs end (a timer at the maximum
watermark) each key emits its final joined rows once, insert-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from strom.common.row import Row, RowKind
from strom.common.time import MAX_WATERMARK
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedCoProcessFunction
from strom.datastream.state import MapStateDescriptor, StateTtlConfig
from strom.table.planner.plan import JoinNode
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar

_ACCUMULATE = (RowKind.INSERT, RowKind.UPDATE_AFTER)


class StreamingJoinFunction(KeyedCoProcessFunction):
    emits_fresh_rows = True  # every Row it emits is built by make_row for that emission

    def __init__(self, node: JoinNode) -> None:
        assert node.left is not None and node.right is not None
        self.left_outer = node.kind in ("LEFT", "FULL")
        self.right_outer = node.kind in ("RIGHT", "FULL")
        self.n_left = len(node.left.columns)
        self.n_right = len(node.right.columns)
        self.condition = compile_scalar(node.condition, node.columns)[0] if node.condition is not None else None
        self.names = tuple(node.names())
        self.final_only = node.final_only
        self.state_ttl_ms = node.state_ttl_ms

    def open(self, runtime_context: Any) -> None:
        pickled = Types.PICKLED_BYTE_ARRAY()
        descriptors = [MapStateDescriptor(f"join-{side}-rows", pickled, pickled) for side in ("left", "right")]
        if self.state_ttl_ms > 0 and not self.final_only:  # table.exec.state.ttl, as Flink's join state
            ttl = StateTtlConfig.new_builder(self.state_ttl_ms).build()
            for d in descriptors:
                d.enable_time_to_live(ttl)
        self.left_rows, self.right_rows = (runtime_context.get_map_state(d) for d in descriptors)

    def process_element1(self, value: Any, ctx: Any) -> Iterator[Row]:
        return self._process(value, ctx, True)

    def process_element2(self, value: Any, ctx: Any) -> Iterator[Row]:
        return self._process(value, ctx, False)

    # -- rows -------------------------------------------------------------------------------------
    def _row(self, left: tuple, right: tuple, kind: RowKind) -> Row:
        return make_row((*left, *right), self.names, kind)

    def _padded(self, values: tuple, is_left: bool, kind: RowKind) -> Row:
        if is_left:
            return self._row(values, (None,) * self.n_right, kind)
        return self._row((None,) * self.n_left, values, kind)

    def _pair(self, values: tuple, other: tuple, input_is_left: bool, kind: RowKind) -> Row:
        return self._row(values, other, kind) if input_is_left else self._row(other, values, kind)

    # hot path: called per record
    def _matches(self, values: tuple, input_is_left: bool, other_rows: Any, ctx: Any) -> list[tuple[tuple, list]]:
        if None in ctx.get_current_key():
            return []  # NULL = NULL is not true
        condition = self.condition
        if condition is None:
            return list(other_rows.items())
        if input_is_left:
            return [(other, meta) for other, meta in other_rows.items() if condition(values + other) is True]
        return [(other, meta) for other, meta in other_rows.items() if condition(other + values) is True]

    @staticmethod
    def _add(rows: Any, values: tuple, associations: int) -> None:
        meta = rows.get(values)
        rows.put(values, [1 if meta is None else meta[0] + 1, associations])

    @staticmethod
    def _retract(rows: Any, values: tuple) -> None:
        meta = rows.get(values)
        if meta is None:
            return  # not there (e.g. expired): nothing to remove, as Flink
        if meta[0] <= 1:
            rows.remove(values)
        else:
            rows.put(values, [meta[0] - 1, meta[1]])

    # -- the changelog rules ------------------------------------------------------------------------
    # hot path: called per record
    def _process(self, row: Any, ctx: Any, input_is_left: bool) -> Iterator[Row]:
        if type(row) is Row:
            values = tuple(row._values)
            kind = row._row_kind
        else:
            values = tuple(row)
            kind = row.get_row_kind()
        rows, other_rows = (self.left_rows, self.right_rows) if input_is_left else (self.right_rows, self.left_rows)
        input_outer, other_outer = ((self.left_outer, self.right_outer) if input_is_left
                                    else (self.right_outer, self.left_outer))
        if self.final_only:
            if rows.is_empty() and other_rows.is_empty():
                ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
            self._add(rows, values, 0)
            return
        matches = self._matches(values, input_is_left, other_rows, ctx)
        if kind in _ACCUMULATE:
            if input_outer and not matches:
                yield self._padded(values, input_is_left, RowKind.INSERT)
            if matches and other_outer:
                for other, (count, associations) in matches:
                    if associations == 0:  # the other row stood alone with NULLs: retract that
                        for _ in range(count):
                            yield self._padded(other, not input_is_left, RowKind.DELETE)
                    other_rows.put(other, [count, associations + 1])
            out_kind = RowKind.INSERT if (input_outer or other_outer) else kind
            for other, (count, _) in matches:
                for _ in range(count):
                    yield self._pair(values, other, input_is_left, out_kind)
            self._add(rows, values, sum(count for _, (count, _) in matches) if input_outer else 0)
            return
        self._retract(rows, values)
        if not matches:
            if input_outer:
                yield self._padded(values, input_is_left, RowKind.DELETE)
            return
        out_kind = RowKind.DELETE if (input_outer or other_outer) else kind
        for other, (count, _) in matches:
            for _ in range(count):
                yield self._pair(values, other, input_is_left, out_kind)
        if other_outer:
            for other, (count, associations) in matches:
                if associations == 1:  # its last match is gone: back to NULLs
                    for _ in range(count):
                        yield self._padded(other, not input_is_left, RowKind.INSERT)
                other_rows.put(other, [count, associations - 1])

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Row]:
        """BATCH: the key's final joined rows."""
        lefts = list(self.left_rows.items())
        rights = list(self.right_rows.items())
        null_key = any(k is None for k in ctx.get_current_key())
        matched_right: set[tuple] = set()
        for left, (lc, _) in lefts:
            found = False
            for right, (rc, _) in rights:
                if null_key or (self.condition is not None and self.condition((*left, *right)) is not True):
                    continue
                found = True
                matched_right.add(right)
                for _ in range(lc * rc):
                    yield self._row(left, right, RowKind.INSERT)
            if not found and self.left_outer:
                for _ in range(lc):
                    yield self._padded(left, True, RowKind.INSERT)
        if self.right_outer:
            for right, (rc, _) in rights:
                if right not in matched_right:
                    for _ in range(rc):
                        yield self._padded(right, False, RowKind.INSERT)
        self.left_rows.clear()
        self.right_rows.clear()
