"""Bytewax's side of the comparison (runs in its own virtualenv; imports no Strom engine code).

Dataflows built with `bytewax.operators` and run by `bytewax.run`'s `cli_main` with one worker. The source
hands out events in batches (1024 engine-core events, or one 8192-event Nexmark chunk), as Strom's source
does; the sink counts. Event time: an `EventClock` whose system clock is frozen, so the watermark follows the
events only (Strom's and Flink's semantics: largest timestamp minus the allowed delay), never the wall clock.

    ~/.cache/strom-compare/bytewax/bin/python benchmarks/compare/programs/bytewax_job.py --workload b --events 1000000
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import bytewax.operators as op
import bytewax.operators.windowing as win
import harness
import workloads
from bytewax.dataflow import Dataflow
from bytewax.inputs import DynamicSource, StatelessSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition
from bytewax.run import cli_main

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICRO_BATCH = 1024


class BatchPartition(StatelessSourcePartition):
    def __init__(self, batches: Any) -> None:
        self._batches = iter(batches)

    def next_batch(self) -> list[Any]:
        return next(self._batches)  # StopIteration ends the input


class BatchSource(DynamicSource):
    """One worker reads every batch (the benchmark runs a single worker)."""

    def __init__(self, make_batches: Callable[[], Any]) -> None:
        self._make_batches = make_batches

    def build(self, step_id: str, worker_index: int, worker_count: int) -> BatchPartition:
        return BatchPartition(self._make_batches())


class CountingPartition(StatelessSinkPartition):
    count = 0

    def write_batch(self, items: list[Any]) -> None:
        CountingPartition.count += len(items)


class CountingSink(DynamicSink):
    def build(self, step_id: str, worker_index: int, worker_count: int) -> CountingPartition:
        return CountingPartition()


def event_clock(ts_ms: Callable[[Any], int], delay_ms: int) -> win.EventClock:
    return win.EventClock(
        ts_getter=lambda v: EPOCH + timedelta(milliseconds=ts_ms(v)),
        wait_for_system_duration=timedelta(milliseconds=delay_ms),
        now_getter=lambda: EPOCH,  # frozen: the watermark moves with event time only
        to_system_utc=lambda _t: None,  # so nothing wakes up on the wall clock either
    )


def micro_batches(n: int) -> Any:
    make = workloads.make_event
    for lo in range(0, n, MICRO_BATCH):
        yield [make(i) for i in range(lo, min(lo + MICRO_BATCH, n))]


def flow_a(n: int) -> Dataflow:
    flow = Dataflow("micro-a")
    events = op.input("events", flow, BatchSource(lambda: micro_batches(n)))
    kept = op.filter("filter", op.map("map", events, workloads.map_fn), workloads.filter_fn)
    op.output("sink", kept, CountingSink())
    return flow


def flow_b(n: int) -> Dataflow:
    flow = Dataflow("micro-b")
    events = op.input("events", flow, BatchSource(lambda: micro_batches(n)))
    keyed = op.key_on("key", events, lambda e: str(workloads.key_fn(e)))  # Bytewax keys are strings
    clock = event_clock(lambda e: e[1], 0)
    windower = win.TumblingWindower(length=timedelta(milliseconds=workloads.WINDOW_MS), align_to=EPOCH)
    sums = win.reduce_window("sum", keyed, clock, windower, workloads.sum_fn)
    op.output("sink", sums.down, CountingSink())
    return flow


def nexmark_bids(flow: Dataflow, n: int) -> tuple[Any, Any]:
    events = workloads.NexmarkEvents(n)
    stream = op.input("nexmark", flow, BatchSource(lambda: iter(events)))
    bid = events.bid_type
    return op.filter("bid", stream, lambda e: type(e) is bid), events


def flow_q0(n: int) -> Dataflow:
    flow = Dataflow("nexmark-q0")
    bids, _ = nexmark_bids(flow, n)
    op.output("sink", op.map("q0", bids, workloads.q0_row), CountingSink())
    return flow


def flow_q2(n: int) -> Dataflow:
    flow = Dataflow("nexmark-q2")
    bids, _ = nexmark_bids(flow, n)
    op.output("sink", op.map("q2", op.filter("auction-mod-123", bids, workloads.q2_keep), workloads.q2_row),
              CountingSink())
    return flow


def hottest(acc: tuple[int, list[int]], v: tuple[int, int, int]) -> tuple[int, list[int]]:
    _end, auction, count = v
    if count > acc[0]:
        return (count, [auction])
    if count == acc[0]:
        acc[1].append(auction)
    return acc


def merge_hottest(a: tuple[int, list[int]], b: tuple[int, list[int]]) -> tuple[int, list[int]]:
    return a if a[0] > b[0] else b if b[0] > a[0] else (a[0], a[1] + b[1])


def flow_q5(n: int) -> Dataflow:
    """Two stages, as Strom's q5: count per auction in sliding 10 s / 2 s windows, then per window end the
    auctions with the highest count (a 2 s tumbling window over the partial results, stamped end - 1 ms)."""
    flow = Dataflow("nexmark-q5")
    bids, _ = nexmark_bids(flow, n)
    sliding = win.SlidingWindower(length=timedelta(milliseconds=workloads.Q5_SIZE_MS),
                                  offset=timedelta(milliseconds=workloads.Q5_SLIDE_MS), align_to=EPOCH)
    counts = win.count_window("bids-per-auction", bids, event_clock(lambda b: b.date_time,
                                                                    workloads.NEXMARK_WATERMARK_DELAY_MS),
                              sliding, lambda b: str(b.auction))
    size, slide = workloads.Q5_SIZE_MS, workloads.Q5_SLIDE_MS
    # window id w of the sliding windower opens at w * slide (aligned to the epoch), so it ends at w * slide + size
    partial = op.map("with-window-end", counts.down, lambda kv: (kv[1][0] * slide + size, int(kv[0]), kv[1][1]))
    by_end = op.key_on("window-end", partial, lambda p: str(p[0]))
    top = win.fold_window("hot-items", by_end, event_clock(lambda p: p[0] - 1, 0),
                          win.TumblingWindower(length=timedelta(milliseconds=slide), align_to=EPOCH),
                          lambda: (-1, []), hottest, merge_hottest, ordered=False)
    rows = op.flat_map("rows", top.down, lambda kv: [(auction, kv[1][1][0]) for auction in kv[1][1][1]])
    op.output("sink", rows, CountingSink())
    return flow


FLOWS = {"a": flow_a, "b": flow_b, "q0": flow_q0, "q2": flow_q2, "q5": flow_q5}


def run(workload: str, n: int) -> int:
    CountingPartition.count = 0
    cli_main(FLOWS[workload](n), workers_per_process=1)
    return CountingPartition.count


if __name__ == "__main__":
    harness.main("bytewax", run)
