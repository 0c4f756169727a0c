"""Window Top-N and window deduplication (Flink's WindowRank / WindowDeduplicate): a ROW_NUMBER(), RANK() or
DENSE_RANK() Top-N whose PARTITION BY holds window_start and window_end, over a window TVF or a window
aggregation (insert-only). Rows of a window wait in state; when the watermark passes the window's end the
window's top rows are emitted once, +I with their rank numbers, and its state is dropped — insert-only, no
retractions. A row that arrives for a window whose end is at or behind the watermark is late and dropped.
Deduplication (rn = 1 ordered by the time attribute, ASC keeps the first row, DESC the last; on equal
times the first row for ASC, the last for DESC, as Flink's deduplication) is the same operator with N = 1.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor
from strom.table.errors import NotSupportedYet
from strom.table.planner.event_time import to_millis
from strom.table.planner.plan import PlanNode, RankNode, WindowSpec
from strom.table.planner.rank import SortKeyOf
from strom.table.planner.retract_rank import top_rows
from strom.table.planner.rows import make_row


def processing_time_window(node: PlanNode) -> bool:
    """Whether the nearest window below `node` (a window TVF or window aggregation) is in processing time."""
    window = getattr(node, "window", None)
    if isinstance(window, WindowSpec):
        return not window.event_time
    return any(processing_time_window(i) for i in node.inputs)


def refuse_processing_time(node: PlanNode, what: str) -> None:
    if processing_time_window(node):
        raise NotSupportedYet(f"{what} over processing-time windows (declare a rowtime with WATERMARK FOR)")


def window_bounds(node: PlanNode, partition: list[int]) -> tuple[int, int] | None:
    """(window_start, window_end) column indexes when the partition holds both, else None."""
    names = node.names()
    held = {names[i]: i for i in partition}
    if "window_start" in held and "window_end" in held:
        t = node.columns[held["window_end"]][1]
        if t.is_timestamp:
            return held["window_start"], held["window_end"]
    return None


@dataclass(eq=False)
class WindowRankNode(RankNode):
    """A Rank over windows: insert-only, one emission per window when the watermark passes its end."""

    window_end: int = 0  # input column index of window_end
    keep_last: bool = False  # window deduplication keeping the last row: a later row of equal rowtime wins

    @property
    def updating(self) -> bool:
        return False

    def describe(self) -> str:
        return "Window" + super().describe()

    def build_stream(self, streams: list[Any]) -> Any:
        (ds,) = streams
        fn = WindowRankFunction(self)
        keyed = ds.key_by(lambda row, p=tuple(self.partition): tuple(row[i] for i in p))
        return keyed.process(fn).name(self.describe()).uid(self.uid("window-rank"))


def window_rank(rank: RankNode, window_end: int) -> WindowRankNode:
    assert rank.input is not None
    refuse_processing_time(rank.input, "window Top-N / window deduplication")
    return WindowRankNode(rank.columns, input=rank.input, partition=rank.partition, order=rank.order,
                          rank_end=rank.rank_end, output_rank=rank.output_rank, final_only=rank.final_only,
                          rank_type=rank.rank_type, window_end=window_end, keep_last=rank.deduplicate == "last")


class WindowRankFunction(KeyedProcessFunction):
    def __init__(self, node: WindowRankNode) -> None:
        self.sort_key = SortKeyOf(list(node.order))
        self.rank_end = node.rank_end
        self.rank_type = node.rank_type
        self.output_rank = node.output_rank
        self.window_end = node.window_end
        # ties: a new row goes after the equal ones (the first stays on top), except for keep-last deduplication
        self.insert_at = bisect.bisect_left if node.keep_last else bisect.bisect_right
        self.names = tuple(node.names())

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("window-rank", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        end = value[self.window_end]
        if end is None:
            return iter(())
        fire_at = to_millis(end) - 1
        if fire_at <= ctx.timer_service().current_watermark():
            return iter(())  # late: the window has fired
        stored = self.state.value()
        keys, rows = stored if stored is not None else ([], [])
        key = self.sort_key(value)
        pos = self.insert_at(keys, key)
        if self.rank_type == "ROW_NUMBER" and self.rank_end is not None and pos >= self.rank_end:
            return iter(())  # below the top N of this window: never emitted
        keys.insert(pos, key)
        rows.insert(pos, tuple(value))
        if self.rank_type == "ROW_NUMBER" and self.rank_end is not None and len(rows) > self.rank_end:
            keys.pop()
            rows.pop()
        self.state.update((keys, rows))
        if stored is None:
            ctx.timer_service().register_event_time_timer(fire_at)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        stored = self.state.value()
        if stored is None:
            return
        for values, rank in top_rows(stored[0], stored[1], self.rank_type, self.rank_end):
            yield make_row((*values, rank) if self.output_rank else values, self.names, RowKind.INSERT)
        self.state.clear()
