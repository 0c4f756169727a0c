"""MergingWindowSet: which session windows of a key exist, and where their state lives.

When windows merge, their state is merged into the state of one of them (the "state
window") instead of being moved to a new namespace, so merging costs one state merge.
`mapping` is window -> state window. This follows Flink's MergingWindowSet step by step.

The operator keeps one set per key in memory (`MergingWindowSets`) and writes the changed
ones to keyed state when a snapshot is taken, not per record: between snapshots nobody
reads that state, and a set holds only the key's live windows (each of which also has a
cleanup timer in the in-memory timer service), so memory grows as the timers already do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strom.datastream.windowing.assigners import _SessionWindows
from strom.datastream.windowing.windows import TimeWindow

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


def merges_like_time_windows(assigner: Any) -> bool:
    """True if `assigner` merges as `TimeWindow.merge_windows` does (the built-in session assigners):
    then a new window merges exactly with the windows it intersects (the set's windows never
    intersect each other), which `MergingWindowSet` finds without sorting every window."""
    return isinstance(assigner, _SessionWindows) and type(assigner).merge_windows is _SessionWindows.merge_windows


class MergingWindowSet:
    __slots__ = ("assigner", "mapping", "time_windows")

    def __init__(self, assigner: Any, mapping: dict[Any, Any], *, time_windows: bool = False) -> None:
        self.assigner = assigner
        self.mapping = mapping
        self.time_windows = time_windows  # merges_like_time_windows(assigner)

    def get_state_window(self, window: Any) -> Any:
        return self.mapping.get(window)

    def retire_window(self, window: Any) -> None:
        if self.mapping.pop(window, None) is None:
            raise RuntimeError(f"window {window!r} is not in the in-flight window set")

    def add_window(self, new_window: Any, merge_function: MergeFunction) -> Any:
        """Add `new_window`, merging as the assigner says; return the window it ended up in."""
        if self.time_windows:
            return self._add_time_window(new_window, merge_function)
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

    # hot path: called per record of a session-window operator
    def _add_time_window(self, new_window: Any, merge_function: MergeFunction) -> Any:
        """`add_window` for windows merged as TimeWindow.merge_windows merges them, with the same results,
        merge calls and argument order: the windows already in the set neither overlap nor touch (they
        would have merged), so the group of `new_window` is the windows that overlap or touch it."""
        mapping = self.mapping
        start, end = new_window[0], new_window[1]
        hit = None  # the first window that overlaps or touches the new one
        hits = None  # all of them, if more than one
        for w in mapping:
            if w[0] <= end and w[1] >= start:
                if hit is None:
                    hit = w
                elif hits is None:
                    hits = [hit, w]
                else:
                    hits.append(w)
        if hit is None:
            mapping[new_window] = new_window
            return new_window
        if hits is None:
            hit_start, hit_end = hit[0], hit[1]
            if hit_start <= start and end <= hit_end:
                return hit  # absorbed: nothing merges
            result = TimeWindow(hit_start if hit_start < start else start, hit_end if hit_end > end else end)
            state_window = mapping.pop(hit)
            mapping[result] = state_window
            merge_function(result, [hit], state_window, [])
            return result
        hits.sort()
        result = TimeWindow(min(hits[0][0], start), max(max(w[1] for w in hits), end))
        state_window = mapping[hits[0]]
        merged_state_windows = [mapping.pop(w) for w in hits]
        mapping[result] = state_window
        merged_state_windows.remove(state_window)
        merge_function(result, hits, state_window, merged_state_windows)
        return result


class MergingWindowSets:
    """Every key's MergingWindowSet, in memory; the changed ones go to keyed state at a snapshot.

    `state` is the keyed value state the sets are kept in (namespace VOID), as a tuple of
    (window, state window) pairs or absent for none: the format of earlier versions, which read
    and wrote it per record, so their snapshots restore and theirs restore here."""

    def __init__(self, assigner: Any, backend: Any, state: Any) -> None:
        self.assigner = assigner
        self.time_windows = merges_like_time_windows(assigner)
        self.backend = backend
        self.state = state
        self.sets: dict[Any, MergingWindowSet] = {}
        self.changed: set[Any] = set()

    # hot path: called per record
    def of(self, key: Any) -> MergingWindowSet:
        """The set of `key` (the backend's current key), read from state the first time."""
        mws = self.sets.get(key)
        if mws is None:
            stored = self.state.value()
            mws = self.sets[key] = MergingWindowSet(
                self.assigner, dict(stored) if stored else {}, time_windows=self.time_windows
            )
        return mws

    def forget_if_empty(self, key: Any, mws: MergingWindowSet) -> None:
        """After a window of `key` (the current key) retired: a set with no window left leaves memory and
        state at once (a key that comes back reads an empty set), so keys whose sessions ended cost nothing."""
        if not mws.mapping:
            self.sets.pop(key, None)
            self.changed.discard(key)
            self.state.clear()

    def write_changed(self) -> None:
        """Before a snapshot: the sets changed since the last one into keyed state."""
        if not self.changed:
            return
        backend, state, sets = self.backend, self.state, self.sets
        current = backend.current_key
        try:
            for key in self.changed:
                mws = sets.get(key)
                backend.current_key = key
                if mws is None or not mws.mapping:
                    state.clear()
                else:
                    state.update(tuple(mws.mapping.items()))
        finally:
            backend.current_key = current
        self.changed = set()
