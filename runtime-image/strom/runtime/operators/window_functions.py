"""Internal window functions: turn a pane's contents into output records.

A pane's contents are a single pre-aggregated value (reduce / aggregate) or the list of
its elements; the user's window function, if any, is one of four shapes (WindowFunction,
ProcessWindowFunction and their non-keyed forms). `WindowFunctionRunner` hides these
differences from the operator, as Flink's InternalWindowFunction does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from strom.common.key_groups import user_key
from strom.runtime.operators.base import results_of
from strom.runtime.operators.window_contexts import ProcessWindowContext


class WindowFunctionRunner:
    """Calls the user's window function (or none) for one pane of one key."""

    def __init__(self, kind: str | None, function: Any, context: ProcessWindowContext) -> None:
        self.kind = kind
        self.function = function
        self.context = context
        self.clears = kind in ("process", "process_all")

    def run(self, key: Any, window: Any, elements: list[Any]) -> Iterable[Any]:
        kind = self.kind
        if kind is None:
            return elements
        if kind == "window":
            return results_of(self.function.apply(user_key(key), window, elements))
        if kind == "all_window":
            return results_of(self.function.apply(window, elements))
        self.context.current_window = window
        if kind == "process":
            return results_of(self.function.process(user_key(key), self.context, elements))
        return results_of(self.function.process(self.context, elements))

    def clear(self, window: Any) -> None:
        """The window is cleaned up: ProcessWindowFunction.clear(context)."""
        if self.clears:
            self.context.current_window = window
            self.function.clear(self.context)


class PaneEvaluator:
    """Pane contents -> the elements the window function sees.

    `contents` is the kind of window state: "reduce" and "aggregate" hold one value
    (the aggregating state already applies get_result); "list" holds the elements.
    With an evictor the state holds all elements and reduce/aggregate run here, over
    what the evictor left (Flink's EvictingWindowOperator)."""

    def __init__(self, contents: str, reduce_function: Any, aggregate_function: Any, evicting: bool) -> None:
        self.contents = contents
        self.reduce = reduce_function.reduce if reduce_function is not None else None
        self.aggregate = aggregate_function
        self.evicting = evicting

    def elements(self, contents: Any) -> list[Any]:
        if not self.evicting:
            return contents if self.contents == "list" else [contents]
        if self.contents == "list":
            return contents
        if self.contents == "reduce":
            if not contents:
                return []  # the evictor removed everything: nothing to reduce, nothing to emit
            reduce = self.reduce
            it = iter(contents)
            acc = next(it)
            for v in it:
                acc = reduce(acc, v)
            return [acc]
        # as Flink's AggregateApplyWindowFunction: an empty pane still yields the empty accumulator's result
        agg = self.aggregate
        acc = agg.create_accumulator()
        for v in contents:
            acc = agg.add(v, acc)
        return [agg.get_result(acc)]
