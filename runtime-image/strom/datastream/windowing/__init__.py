"""Building blocks of windowing: windows, assigners, triggers and evictors.

`strom.datastream.window` re-exports all of them under PyFlink's names; this package
only splits them into one module per concept.

    windows.py     Window, TimeWindow, CountWindow, GlobalWindow (each also a state and timer namespace)
    assigners.py   which windows an element belongs to: tumbling, sliding, session, global, count
    triggers.py    when a pane fires and/or purges (event time, processing time, count, ...)
    evictors.py    remove elements before/after the window function (count, time, delta)

The runtime side is runtime/operators/window_operator.py (with window_contexts.py,
window_functions.py, merging_window_set.py and the aligned-window fast path window_fast_path.py).
"""
