"""The plain-Python baseline: each workload as a loop making one function call per operator per record
(the same user functions), with its state in dicts. Engine-core loops are benchmarks/micro.py's own; the
Nexmark loops stream over the same generator chunks the engines read, watermark 4 s behind.

    python -m benchmarks.compare.programs.python_job --workload q5 --events 1000000
"""

from __future__ import annotations

from typing import Any

from benchmarks import micro
from benchmarks.compare.programs import harness
from benchmarks.compare.programs.workloads import (
    NEXMARK_WATERMARK_DELAY_MS,
    NexmarkEvents,
    q0_row,
    q2_keep,
    q2_row,
    q5_window_ends,
)


def loop_q0(events: NexmarkEvents) -> int:
    count = 0
    bid = events.bid_type
    for chunk in events:
        for e in chunk:
            if type(e) is bid:
                q0_row(e)
                count += 1
    return count


def loop_q2(events: NexmarkEvents) -> int:
    count = 0
    bid = events.bid_type
    for chunk in events:
        for e in chunk:
            if type(e) is bid and q2_keep(e):
                q2_row(e)
                count += 1
    return count


def hot_items(per_auction: dict[int, int]) -> list[tuple[int, int]]:
    top = max(per_auction.values())
    return [(auction, n) for auction, n in per_auction.items() if n == top]


def loop_q5(events: NexmarkEvents) -> int:
    """Counts per (window end, auction); a window fires when the watermark passes its last millisecond.
    Events are in event-time order, so window ends enter the dict in increasing order."""
    count = 0
    bid = events.bid_type
    windows: dict[int, dict[int, int]] = {}
    fire_at = None  # the first open window's last millisecond
    for chunk in events:
        for e in chunk:
            if type(e) is not bid:
                continue
            ts, auction = e.date_time, e.auction
            for end in q5_window_ends(ts):
                per_auction = windows.get(end)
                if per_auction is None:
                    per_auction = windows[end] = {}
                per_auction[auction] = per_auction.get(auction, 0) + 1
            watermark = ts - NEXMARK_WATERMARK_DELAY_MS - 1
            if fire_at is None:
                fire_at = next(iter(windows)) - 1
            while fire_at is not None and fire_at <= watermark:
                count += len(hot_items(windows.pop(fire_at + 1)))
                fire_at = next(iter(windows)) - 1 if windows else None
    for per_auction in windows.values():
        count += len(hot_items(per_auction))
    return count


def run(workload: str, n: int) -> Any:
    if workload == "a":
        return micro.loop_a(n)
    if workload == "b":
        return micro.loop_b(n)
    return {"q0": loop_q0, "q2": loop_q2, "q5": loop_q5}[workload](NexmarkEvents(n))


if __name__ == "__main__":
    harness.main("python", run)
