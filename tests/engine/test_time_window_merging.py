"""TimeWindow.merge_windows (session windows) against a plain reference: windows that overlap or touch
merge into their cover, groups of one are not reported; random windows including negative times, repeats
and windows nested in others."""

from __future__ import annotations

import random

from strom.datastream.windowing.windows import TimeWindow


def reference(windows: list[tuple[int, int]]) -> list[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """Groups of windows that overlap or touch, as (cover, members), with two or more members."""
    groups: list[tuple[tuple[int, int], list[tuple[int, int]]]] = []
    for start, end in sorted(windows):
        if groups and start <= groups[-1][0][1]:
            (s, e), members = groups[-1]
            groups[-1] = ((s, max(e, end)), [*members, (start, end)])
        else:
            groups.append(((start, end), [(start, end)]))
    return [g for g in groups if len(g[1]) > 1]


def test_merge_windows_reports_the_cover_of_every_group_of_overlapping_or_touching_windows():
    rnd = random.Random(7)
    merged_some = 0
    for _ in range(5000):
        pairs = []
        for _ in range(rnd.randint(0, 6)):
            start = rnd.randint(-20, 20)
            pairs.append((start, start + rnd.randint(1, 10)))
        out: list[tuple[TimeWindow, list[TimeWindow]]] = []
        TimeWindow.merge_windows([TimeWindow(s, e) for s, e in pairs], lambda m, r, out=out: out.append((r, m)))
        assert all(type(r) is TimeWindow for r, _ in out)
        assert [((r.start, r.end), [(w.start, w.end) for w in m]) for r, m in out] == reference(pairs)
        merged_some += bool(out)
    assert merged_some > 1000  # the random windows do overlap: the comparison is not vacuous


def test_windows_that_touch_merge_and_windows_apart_do_not():
    out: list[tuple[TimeWindow, list[TimeWindow]]] = []
    TimeWindow.merge_windows([TimeWindow(10, 20), TimeWindow(0, 10), TimeWindow(21, 30)],
                             lambda m, r: out.append((r, m)))
    assert out == [(TimeWindow(0, 20), [TimeWindow(0, 10), TimeWindow(10, 20)])]
