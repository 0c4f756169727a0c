"""Window queries: q5 hot items (sliding 10 s every 2 s), q7 highest bid (tumbling 10 s), q11 user
sessions (10 s gap), q12 bids per user in processing-time windows.

q5 and q7 ask for a maximum over a whole window. Each runs in two stages so that the per-bid work is
spread over all subtasks: per key and window a partial result, then, keyed by the window's end, the
window-wide maximum, decided by an event-time timer at the window's last millisecond (the partial
results of that window all carry that timestamp, so they are in before the watermark passes it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from strom.common.time import MAX_WATERMARK, Time
from strom.connectors.nexmark import Bid
from strom.datastream import AggregateFunction, DataStream, KeyedProcessFunction, ProcessWindowFunction
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)

from benchmarks.nexmark.streams import bids

Q5_SIZE_MS, Q5_SLIDE_MS = 10_000, 2_000
Q7_SIZE_MS = 10_000
Q11_GAP_MS = 10_000
Q12_SIZE_MS = 10_000


class Count(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class WithWindowEnd(ProcessWindowFunction):
    """(key, count, window end)"""

    def process(self, key: Any, context: Any, elements: Iterable[int]) -> Iterable[tuple[Any, int, int]]:
        for count in elements:
            yield (key, count, context.window().end)


class WithWindowBounds(ProcessWindowFunction):
    """(key, count, window start, window end)"""

    def process(self, key: Any, context: Any, elements: Iterable[int]) -> Iterable[tuple[Any, int, int, int]]:
        window = context.window()
        for count in elements:
            yield (key, count, window.start, window.end)


class HotItems(KeyedProcessFunction):
    """Per window end: collects (auction, count) and, at the window's last millisecond, emits those with the
    window's highest count."""

    def open(self, runtime_context: Any) -> None:
        self.top = runtime_context.get_state(ValueStateDescriptor("top-count-and-auctions"))

    def process_element(self, value: tuple[int, int, int], ctx: Any) -> None:
        auction, count, end = value
        top = self.top.value()
        if top is None:
            self.top.update((count, [auction]))
            ctx.timer_service().register_event_time_timer(end - 1)
        elif count > top[0]:
            self.top.update((count, [auction]))
        elif count == top[0]:
            top[1].append(auction)
            self.top.update(top)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[tuple[int, int]]:
        count, auctions = self.top.value()
        self.top.clear()
        for auction in auctions:
            yield (auction, count)


def q5(events: DataStream) -> DataStream:
    """(auction, num) for the auctions with the most bids in each 10 s window sliding by 2 s."""
    counts = (
        bids(events)
        .key_by(lambda b: b.auction)
        .window(SlidingEventTimeWindows.of(Time.milliseconds(Q5_SIZE_MS), Time.milliseconds(Q5_SLIDE_MS)))
        .aggregate(Count(), WithWindowEnd())
        .name("bids-per-auction-window")
    )
    return counts.key_by(lambda c: c[2]).process(HotItems()).name("q5")


class HighestBids(AggregateFunction):
    """(highest price, the bids at that price) of a window's bids of one key."""

    def create_accumulator(self) -> tuple[int, list[Bid]]:
        return (-1, [])

    def add(self, b: Bid, acc: tuple[int, list[Bid]]) -> tuple[int, list[Bid]]:
        price = b.price
        if price > acc[0]:
            return (price, [b])
        if price == acc[0]:
            acc[1].append(b)
        return acc

    def get_result(self, acc: tuple[int, list[Bid]]) -> tuple[int, list[Bid]]:
        return acc

    def merge(self, a: tuple[int, list[Bid]], b: tuple[int, list[Bid]]) -> tuple[int, list[Bid]]:
        return a if a[0] > b[0] else b if b[0] > a[0] else (a[0], a[1] + b[1])


class PartialWithWindowEnd(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[tuple[int, int, list[Bid]]]:
        end = context.window().end
        for price, top in elements:
            yield (end, price, top)


class HighestBid(KeyedProcessFunction):
    """Per window end: the bids at the window-wide highest price, emitted at the window's last millisecond."""

    def open(self, runtime_context: Any) -> None:
        self.top = runtime_context.get_state(ValueStateDescriptor("top-price-and-bids"))

    def process_element(self, value: tuple[int, int, list[Bid]], ctx: Any) -> None:
        end, price, top_bids = value
        top = self.top.value()
        if top is None:
            self.top.update((price, list(top_bids)))
            ctx.timer_service().register_event_time_timer(end - 1)
        elif price > top[0]:
            self.top.update((price, list(top_bids)))
        elif price == top[0]:
            top[1].extend(top_bids)
            self.top.update(top)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[tuple[Any, ...]]:
        _, top_bids = self.top.value()
        self.top.clear()
        for b in top_bids:
            yield (b.auction, b.bidder, b.price, b.date_time, b.extra)


def q7(events: DataStream) -> DataStream:
    """The bids at the highest price of each 10 s tumbling window: (auction, bidder, price, dateTime, extra)."""
    partial = (
        bids(events)
        .key_by(lambda b: b.auction)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(Q7_SIZE_MS)))
        .aggregate(HighestBids(), PartialWithWindowEnd())
        .name("highest-bids-per-auction-window")
    )
    return partial.key_by(lambda p: p[0]).process(HighestBid()).name("q7")


def q11(events: DataStream) -> DataStream:
    """(bidder, bid_count, starttime, endtime) per session of a bidder's bids (gap 10 s)."""
    return (
        bids(events)
        .key_by(lambda b: b.bidder)
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(Q11_GAP_MS)))
        .aggregate(Count(), WithWindowBounds())
        .name("q11")
    )


class ProcessingTimeOrEndOfInput(Trigger):
    """Fires a processing-time window at its end, as ProcessingTimeTrigger, and also when a bounded input
    ends (its final watermark), so that a benchmark run shorter than a window still reports its counts."""

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: Any) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        ctx.register_event_time_timer(MAX_WATERMARK)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if time == MAX_WATERMARK else TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())
        ctx.delete_event_time_timer(MAX_WATERMARK)


def q12(events: DataStream) -> DataStream:
    """(bidder, bid_count, starttime, endtime) per 10 s processing-time window."""
    return (
        bids(events)
        .key_by(lambda b: b.bidder)
        .window(TumblingProcessingTimeWindows.of(Time.milliseconds(Q12_SIZE_MS)))
        .trigger(ProcessingTimeOrEndOfInput())
        .aggregate(Count(), WithWindowBounds())
        .name("q12")
    )
