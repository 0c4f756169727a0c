"""Plain-Python reference for event-time windows with Flink's default trigger.

Independent of the engine: it replays the arrival order of (key, timestamp, value)
events with the watermark that `strom.testing.punctuated_watermarks(bound)` emits after
each event (max timestamp so far - bound - 1), and then the final maximum watermark.

Rules (Flink's WindowOperator with EventTimeTrigger):
* an element joins its windows unless a window's max_timestamp + lateness <= watermark;
  sessions merge first and are checked after merging;
* an element that joined no window and has timestamp + lateness <= watermark is late data;
* a pane whose max_timestamp the watermark has already passed fires at once on each element;
* when the watermark crosses a pane's max_timestamp, the pane fires; when it reaches
  max_timestamp + lateness, the pane is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX = 2**63 - 1
MIN = -(2**63)


@dataclass
class Pane:
    start: int
    end: int
    values: list = field(default_factory=list)

    @property
    def max_ts(self) -> int:
        return self.end - 1


def tumbling(size):
    return lambda ts: [(ts - ts % size, ts - ts % size + size)]


def sliding(size, slide):
    def assign(ts):
        last = ts - ts % slide
        return [(s, s + size) for s in range(last, ts - size, -slide)]

    return assign


def simulate(events, *, assign=None, session_gap=None, bound, lateness=0):
    """Returns (fired, late): fired = [(key, start, end, sorted values)], late = [(key, ts, value)]."""
    panes: dict[tuple, Pane] = {}  # (key, start, end) -> pane; for sessions one entry per live session
    fired, late = [], []
    wm = MIN
    max_seen = None

    def fire(key, pane):
        fired.append((key, pane.start, pane.end, tuple(sorted(pane.values))))

    def advance(new_wm):
        nonlocal wm
        if new_wm <= wm:
            return
        for (key, _s, _e), pane in sorted(panes.items(), key=lambda kv: kv[1].max_ts):
            if wm < pane.max_ts <= new_wm:
                fire(key, pane)
        for k in [k for k, p in panes.items() if p.max_ts + lateness <= new_wm]:
            del panes[k]
        wm = new_wm

    for key, ts, value in events:
        joined = False
        if session_gap is None:
            for start, end in assign(ts):
                if end - 1 + lateness <= wm:
                    continue
                joined = True
                pane = panes.setdefault((key, start, end), Pane(start, end))
                pane.values.append(value)
                if pane.max_ts <= wm:
                    fire(key, pane)
        else:
            start, end = ts, ts + session_gap
            overlapping = [k for k, p in panes.items() if k[0] == key and p.start <= end and p.end >= start]
            values = [value]
            for k in overlapping:
                p = panes.pop(k)
                start, end = min(start, p.start), max(end, p.end)
                values.extend(p.values)
            if overlapping or end - 1 + lateness > wm:
                joined = True
                pane = panes[(key, start, end)] = Pane(start, end, values)
                if pane.max_ts <= wm:
                    fire(key, pane)
        if not joined and ts + lateness <= wm:
            late.append((key, ts, value))
        max_seen = ts if max_seen is None else max(max_seen, ts)
        advance(max_seen - bound - 1)
    advance(MAX)
    return fired, late
