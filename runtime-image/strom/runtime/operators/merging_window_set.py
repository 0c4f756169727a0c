"""MergingWindowSet: which session windows of a key exist, and where their state lives.

When windows merge, their state is merged into the state of one of them (the "state
window") instead of being moved to a new namespace, so merging costs one state merge.
`mapping` is window -> state window; the operator keeps it in keyed state per key.
This follows Flink's MergingWindowSet step by step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# merge_function(merge_result, merged_windows, state_window_of_result, merged_state_windows)
MergeFunction = Callable[[Any, list[Any], Any, list[Any]], None]


class _MergeCollector:
    """The callback handed to `merge_windows`: callable as `callback(merged, result)` (Strom's shape) and
    `callback.merge(merged, result)` (PyFlink's MergingWindowAssigner.MergeCallback), so user assigners
    written either way work."""

    __slots__ = ("results",)

    def __init__(self) -> None:
        self.results: list[tuple[Any, list[Any]]] = []

    def merge(self, to_be_merged: Any, merge_result: Any) -> None:
        self.results.append((merge_result, list(to_be_merged)))

    __call__ = merge


class MergingWindowSet:
    def __init__(self, assigner: Any, mapping: dict[Any, Any]) -> None:
        self.assigner = assigner
        self.mapping = mapping

    def get_state_window(self, window: Any) -> Any:
        return self.mapping.get(window)

    def retire_window(self, window: Any) -> None:
        if self.mapping.pop(window, None) is None:
            raise RuntimeError(f"window {window!r} is not in the in-flight window set")

    def add_window(self, new_window: Any, merge_function: MergeFunction) -> Any:
        """Add `new_window`, merging as the assigner says; return the window it ended up in."""
        candidates = list(self.mapping) + [new_window]
        collector = _MergeCollector()
        self.assigner.merge_windows(candidates, collector)
        merge_results = collector.results

        result_window = new_window
        merged_new_window = False
        for merge_result, merged_windows in merge_results:
            if new_window in merged_windows:
                merged_windows.remove(new_window)
                merged_new_window = True
                result_window = merge_result
            # the merge result keeps the state window of one of the merged (pre-existing) windows
            merged_state_window = self.mapping[merged_windows[0]]
            merged_state_windows = []
            for w in merged_windows:
                sw = self.mapping.pop(w, None)
                if sw is not None:
                    merged_state_windows.append(sw)
            self.mapping[merge_result] = merged_state_window
            merged_state_windows.remove(merged_state_window)
            # a pre-existing window that merely absorbed the new window has nothing to merge
            if not (len(merged_windows) == 1 and merged_windows[0] == merge_result):
                merge_function(merge_result, merged_windows, merged_state_window, merged_state_windows)

        if not merge_results or (result_window == new_window and not merged_new_window):
            self.mapping[result_window] = result_window
        return result_window
