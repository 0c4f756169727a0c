"""Aggregating queries: q15-q17 daily statistics, q18 last bid per (bidder, auction), q19 top-10 bids per
auction.

q15-q17 group by a UTC day. Flink SQL updates each group's row on every bid; here a day is a tumbling
one-day event-time window, so each group's row is emitted once, final, when event time leaves the day.
q18 and q19 emit upserts: a row whenever a key's result changes; the last row per key is the answer.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable
from typing import Any

from strom.common.time import Time
from strom.connectors.nexmark import Bid
from strom.datastream import AggregateFunction, DataStream, KeyedProcessFunction, ProcessWindowFunction
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.window import TumblingEventTimeWindows

from benchmarks.nexmark.streams import DAY_MS, RANK1_BELOW, RANK2_BELOW, bids, day_of, minute_of_day

TOP_N = 10


class BandedStats:
    """Bids, distinct bidders and distinct auctions: in total and per price band (index 0 = total)."""

    __slots__ = ("bids", "bidders", "auctions", "max_time")

    def __init__(self) -> None:
        self.bids = [0, 0, 0, 0]
        self.bidders: list[set[int]] = [set(), set(), set(), set()]
        self.auctions: list[set[int]] = [set(), set(), set(), set()]
        self.max_time = 0

    # hot path: called per bid
    def add(self, b: Bid) -> None:
        price = b.price
        band = 1 if price < RANK1_BELOW else 2 if price < RANK2_BELOW else 3
        counts, bidders, auctions = self.bids, self.bidders, self.auctions
        counts[0] += 1
        counts[band] += 1
        bidders[0].add(b.bidder)
        bidders[band].add(b.bidder)
        auctions[0].add(b.auction)
        auctions[band].add(b.auction)
        if b.date_time > self.max_time:
            self.max_time = b.date_time

    def merge(self, other: BandedStats) -> BandedStats:
        for i in range(4):
            self.bids[i] += other.bids[i]
            self.bidders[i] |= other.bidders[i]
            self.auctions[i] |= other.auctions[i]
        self.max_time = max(self.max_time, other.max_time)
        return self

    def columns(self) -> tuple[int, ...]:
        return (*self.bids, *(len(s) for s in self.bidders), *(len(s) for s in self.auctions))


class BandedAggregate(AggregateFunction):
    def create_accumulator(self) -> BandedStats:
        return BandedStats()

    def add(self, value: Bid, accumulator: BandedStats) -> BandedStats:
        accumulator.add(value)
        return accumulator

    def get_result(self, accumulator: BandedStats) -> BandedStats:
        return accumulator

    def merge(self, acc_a: BandedStats, acc_b: BandedStats) -> BandedStats:
        return acc_a.merge(acc_b)


class DailyRow(ProcessWindowFunction):
    """q15: (day, 4 bid counts, 4 distinct-bidder counts, 4 distinct-auction counts)."""

    def process(self, key: Any, context: Any, elements: Iterable[BandedStats]) -> Iterable[tuple[Any, ...]]:
        for stats in elements:
            yield (day_of(context.window().start), *stats.columns())


class ChannelDailyRow(ProcessWindowFunction):
    """q16: (channel, day, latest 'HH:mm', then q15's twelve counts)."""

    def process(self, key: Any, context: Any, elements: Iterable[BandedStats]) -> Iterable[tuple[Any, ...]]:
        for stats in elements:
            yield (key[0], day_of(context.window().start), minute_of_day(stats.max_time), *stats.columns())


def one_day() -> TumblingEventTimeWindows:
    return TumblingEventTimeWindows.of(Time.milliseconds(DAY_MS))


def q15(events: DataStream) -> DataStream:
    """Per day: bids, distinct bidders and distinct auctions, in total and per price band."""
    return (
        bids(events)
        .key_by(lambda b: b.date_time // DAY_MS)
        .window(one_day())
        .aggregate(BandedAggregate(), DailyRow())
        .name("q15")
    )


def q16(events: DataStream) -> DataStream:
    """q15 per channel and day, with the latest minute of the day seen."""
    return (
        bids(events)
        .key_by(lambda b: (b.channel, b.date_time // DAY_MS))
        .window(one_day())
        .aggregate(BandedAggregate(), ChannelDailyRow())
        .name("q16")
    )


class AuctionDayAggregate(AggregateFunction):
    """[bids, rank1, rank2, rank3, min price, max price, sum of prices]"""

    def create_accumulator(self) -> list[int]:
        return [0, 0, 0, 0, -1, -1, 0]

    # hot path: called per bid
    def add(self, b: Bid, acc: list[int]) -> list[int]:
        price = b.price
        acc[0] += 1
        acc[1 if price < RANK1_BELOW else 2 if price < RANK2_BELOW else 3] += 1
        if acc[4] < 0 or price < acc[4]:
            acc[4] = price
        if price > acc[5]:
            acc[5] = price
        acc[6] += price
        return acc

    def get_result(self, acc: list[int]) -> list[int]:
        return acc

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        low = min(x for x in (a[4], b[4]) if x >= 0) if max(a[4], b[4]) >= 0 else -1
        return [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], low, max(a[5], b[5]), a[6] + b[6]]


class AuctionDailyRow(ProcessWindowFunction):
    """q17: (auction, day, bids, rank1..3 bids, min, max, avg (BIGINT), sum)."""

    def process(self, key: Any, context: Any, elements: Iterable[list[int]]) -> Iterable[tuple[Any, ...]]:
        for n, r1, r2, r3, low, high, total in elements:
            yield (key[0], day_of(context.window().start), n, r1, r2, r3, low, high, total // n, total)


def q17(events: DataStream) -> DataStream:
    """Per auction and day: bid counts per band and min/max/avg/sum of prices."""
    return (
        bids(events)
        .key_by(lambda b: (b.auction, b.date_time // DAY_MS))
        .window(one_day())
        .aggregate(AuctionDayAggregate(), AuctionDailyRow())
        .name("q17")
    )


def latest_order(b: Bid) -> tuple[Any, ...]:
    """Larger is later: by dateTime; the rest of the bid breaks ties so arrival order does not matter."""
    return (b.date_time, b)


class LastBid(KeyedProcessFunction):
    """q18 per (bidder, auction): emits a bid when it becomes the latest of its key."""

    def open(self, runtime_context: Any) -> None:
        self.last = runtime_context.get_state(ValueStateDescriptor("last-bid"))

    def process_element(self, b: Bid, ctx: Any) -> Iterable[Bid]:
        last = self.last.value()
        if last is None or latest_order(b) > latest_order(last):
            self.last.update(b)
            yield b


def q18(events: DataStream) -> DataStream:
    """ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) = 1, as upserts."""
    return bids(events).key_by(lambda b: (b.bidder, b.auction)).process(LastBid()).name("q18")


def rank_order(b: Bid) -> tuple[Any, ...]:
    """Smaller ranks first: highest price; ties by time then the whole bid, for an order independent of
    arrival."""
    return (-b.price, b.date_time, b)


class TopBids(KeyedProcessFunction):
    """q19 per auction: keeps the 10 highest bids; when a bid enters, emits (bid fields..., rank) for every
    rank whose bid changed."""

    def open(self, runtime_context: Any) -> None:
        self.top = runtime_context.get_state(ValueStateDescriptor("top-bids"))

    def process_element(self, b: Bid, ctx: Any) -> Iterable[tuple[Any, ...]]:
        top = self.top.value()
        if top is None:
            top = []
        elif len(top) == TOP_N and b.price < -top[-1][0]:
            return
        entry = rank_order(b)
        if len(top) == TOP_N and entry >= top[-1]:
            return
        insort(top, entry)
        del top[TOP_N:]
        self.top.update(top)
        first = top.index(entry)
        for rank in range(first, len(top)):
            yield (*top[rank][2], rank + 1)


def q19(events: DataStream) -> DataStream:
    """ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) <= 10, as upserts keyed by (auction, rank)."""
    return bids(events).key_by(lambda b: b.auction).process(TopBids()).name("q19")
