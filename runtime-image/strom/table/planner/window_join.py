"""Window joins (Flink's WindowJoin): a join of two window TVFs (or window aggregations) whose ON equates
both inputs' window_start and window_end. Rows of one window wait in keyed state (the key holds the
window); when the watermark passes the window's end, the window's rows are joined once — INNER pairs,
LEFT/RIGHT/FULL also each unmatched row with NULLs for the other side — and the state is dropped. The
output is insert-only; a row for a window already joined (its end at or behind the watermark) is late and
dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from strom.common.row import Row, RowKind
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedCoProcessFunction
from strom.datastream.state import ListStateDescriptor
from strom.table.expressions import Expression
from strom.table.planner.event_time import to_millis
from strom.table.planner.plan import Columns, PlanNode, join_condition_text
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar


def window_keys(left: PlanNode, right: PlanNode, left_keys: list[int], right_keys: list[int]) -> tuple[int, int] | None:
    """(left window_end, right window_end) column indexes when the equality keys pair both inputs'
    window_start and window_end columns, else None (not a window join)."""
    ln, rn = left.names(), right.names()
    pairs = {(ln[a], rn[b]) for a, b in zip(left_keys, right_keys, strict=True)}
    if ("window_start", "window_start") not in pairs or ("window_end", "window_end") not in pairs:
        return None
    ends = ln.index("window_end"), rn.index("window_end")
    if left.columns[ends[0]][1].is_timestamp and right.columns[ends[1]][1].is_timestamp:
        return ends
    return None


@dataclass(eq=False)
class WindowJoinNode(PlanNode):
    left: PlanNode | None = None
    right: PlanNode | None = None
    kind: str = "INNER"
    left_keys: list[int] = field(default_factory=list)
    right_keys: list[int] = field(default_factory=list)
    condition: Expression | None = None
    left_end: int = 0
    right_end: int = 0

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.left is not None and self.right is not None
        return [self.left, self.right]

    @property
    def updating(self) -> bool:
        return False

    def describe(self) -> str:
        names = self.names()
        keys, where = join_condition_text(names, self.left, self.left_keys, self.right_keys, self.condition)
        return f"WindowJoin(joinType=[{self.kind}], where=[{keys}{where}], select=[{', '.join(names)}])"

    def build_stream(self, streams: list[Any]) -> Any:
        left, right = streams
        keyed = left.connect(right).key_by(lambda r, k=tuple(self.left_keys): tuple(r[i] for i in k),
                                           lambda r, k=tuple(self.right_keys): tuple(r[i] for i in k))
        return keyed.process(WindowJoinFunction(self)).name(self.describe()).uid(self.uid("window-join"))


def window_join(columns: Columns, left: PlanNode, right: PlanNode, kind: str, left_keys: list[int],
                right_keys: list[int], condition: Expression | None, ends: tuple[int, int]) -> WindowJoinNode:
    from strom.table.planner.window_rank import refuse_processing_time

    refuse_processing_time(left, "window join")
    refuse_processing_time(right, "window join")
    return WindowJoinNode(columns, left=left, right=right, kind=kind, left_keys=left_keys, right_keys=right_keys,
                          condition=condition, left_end=ends[0], right_end=ends[1])


class WindowJoinFunction(KeyedCoProcessFunction):
    def __init__(self, node: WindowJoinNode) -> None:
        assert node.left is not None and node.right is not None
        self.left_outer = node.kind in ("LEFT", "FULL")
        self.right_outer = node.kind in ("RIGHT", "FULL")
        self.n_left = len(node.left.columns)
        self.n_right = len(node.right.columns)
        self.ends = (node.left_end, node.right_end)
        self.condition = compile_scalar(node.condition, node.columns)[0] if node.condition is not None else None
        self.names = tuple(node.names())

    def open(self, runtime_context: Any) -> None:
        pickled = Types.PICKLED_BYTE_ARRAY()
        self.lefts = runtime_context.get_list_state(ListStateDescriptor("window-join-left", pickled))
        self.rights = runtime_context.get_list_state(ListStateDescriptor("window-join-right", pickled))

    def _add(self, value: Any, ctx: Any, is_left: bool) -> Iterator[Row]:
        end = value[self.ends[0] if is_left else self.ends[1]]
        if end is None:
            return iter(())
        fire_at = to_millis(end) - 1
        if fire_at <= ctx.timer_service().current_watermark():
            return iter(())  # late: the window was joined already
        (self.lefts if is_left else self.rights).add(tuple(value))
        ctx.timer_service().register_event_time_timer(fire_at)
        return iter(())

    def process_element1(self, value: Any, ctx: Any) -> Iterator[Row]:
        return self._add(value, ctx, True)

    def process_element2(self, value: Any, ctx: Any) -> Iterator[Row]:
        return self._add(value, ctx, False)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Row]:
        lefts = list(self.lefts.get() or [])
        rights = list(self.rights.get() or [])
        if not lefts and not rights:
            return
        null_key = any(k is None for k in ctx.get_current_key())
        matched_right = [False] * len(rights)
        for left in lefts:
            found = False
            for j, right in enumerate(rights):
                values = (*left, *right)
                if null_key or (self.condition is not None and self.condition(values) is not True):
                    continue
                found = matched_right[j] = True
                yield make_row(values, self.names, RowKind.INSERT)
            if not found and self.left_outer:
                yield make_row((*left, *(None,) * self.n_right), self.names, RowKind.INSERT)
        if self.right_outer:
            for right, matched in zip(rights, matched_right, strict=True):
                if not matched:
                    yield make_row((*(None,) * self.n_left, *right), self.names, RowKind.INSERT)
        self.lefts.clear()
        self.rights.clear()
