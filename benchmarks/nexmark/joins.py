"""Join queries: q3 local item suggestion, q20 bids with their auction (regular joins on keyed state),
q4 average winning price per category and q9 winning bids (an auction joined with the bids made while it
was open, decided when event time passes its expiry), q8 new users (a tumbling-window join).

Person and auction ids are unique, so a regular join keeps the one-per-key side in a ValueState and
buffers the other side only until its partner arrives; the results equal Flink SQL's unbounded join.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from strom.common.time import Time
from strom.connectors.nexmark import Auction, Bid, Person
from strom.datastream import CoGroupFunction, DataStream, KeyedCoProcessFunction, KeyedProcessFunction
from strom.datastream.state import ListStateDescriptor, ValueStateDescriptor
from strom.datastream.window import TumblingEventTimeWindows

from benchmarks.nexmark.streams import auctions, bids, persons

Q3_STATES = frozenset({"OR", "ID", "CA"})
Q3_CATEGORY = 10
Q20_CATEGORY = 10
Q8_WINDOW_MS = 10_000


class LocalItemSuggestion(KeyedCoProcessFunction):
    """q3 per seller id: input 1 persons, input 2 their auctions (both already filtered)."""

    def open(self, runtime_context: Any) -> None:
        self.person = runtime_context.get_state(ValueStateDescriptor("person"))
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("auctions-before-person"))

    def process_element1(self, p: Person, ctx: Any) -> Iterable[tuple[Any, ...]]:
        self.person.update(p)
        for a in self.waiting.get() or ():
            yield (p.name, p.city, p.state, a.id)
        self.waiting.clear()

    def process_element2(self, a: Auction, ctx: Any) -> Iterable[tuple[Any, ...]]:
        p = self.person.value()
        if p is None:
            self.waiting.add(a)
        else:
            yield (p.name, p.city, p.state, a.id)


def q3(events: DataStream) -> DataStream:
    """SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
    WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')"""
    sellers = persons(events).filter(lambda p: p.state in Q3_STATES)
    items = auctions(events).filter(lambda a: a.category == Q3_CATEGORY)
    return (
        sellers.connect(items).key_by(lambda p: p.id, lambda a: a.seller).process(LocalItemSuggestion()).name("q3")
    )


_NOT_IN_CATEGORY = 0  # kept for an auction outside the category, so its bids are dropped, not buffered


class BidsWithAuction(KeyedCoProcessFunction):
    """q20 per auction id: input 1 bids, input 2 auctions."""

    def open(self, runtime_context: Any) -> None:
        self.auction = runtime_context.get_state(ValueStateDescriptor("auction"))
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("bids-before-auction"))

    def process_element1(self, b: Bid, ctx: Any) -> Iterable[tuple[Any, ...]]:
        a = self.auction.value()
        if a is None:
            self.waiting.add(b)
        elif a is not _NOT_IN_CATEGORY:
            yield b + a[1:]

    def process_element2(self, a: Auction, ctx: Any) -> Iterable[tuple[Any, ...]]:
        if a.category != Q20_CATEGORY:
            self.auction.update(_NOT_IN_CATEGORY)
        else:
            self.auction.update(a)
            for b in self.waiting.get() or ():
                yield b + a[1:]
        self.waiting.clear()


def q20(events: DataStream) -> DataStream:
    """SELECT B.*, A.itemName, ..., A.extra FROM bid B JOIN auction A ON B.auction = A.id WHERE A.category = 10
    (rows: the bid's 7 fields then the auction's fields after its id)"""
    return (
        bids(events)
        .connect(auctions(events))
        .key_by(lambda b: b.auction, lambda a: a.id)
        .process(BidsWithAuction())
        .name("q20")
    )


def bid_order(b: Bid) -> tuple[Any, ...]:
    """Smaller is better: highest price, then earliest; the rest of the bid breaks remaining ties so the
    winner does not depend on arrival order."""
    return (-b.price, b.date_time, b)


_CLOSED = 0  # an auction whose expiry has passed: later bids cannot win it


class WinningBids(KeyedCoProcessFunction):
    """Per auction id: input 1 bids, input 2 auctions. When the watermark passes the auction's expiry, emits
    (auction, winning bid) with the best bid made within [auction.date_time, auction.expires], if any."""

    def open(self, runtime_context: Any) -> None:
        self.auction = runtime_context.get_state(ValueStateDescriptor("auction"))
        self.best = runtime_context.get_state(ValueStateDescriptor("best-bid"))
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("bids-before-auction"))

    def _consider(self, a: Auction, b: Bid) -> None:
        if a.date_time <= b.date_time <= a.expires:
            best = self.best.value()
            if best is None or bid_order(b) < bid_order(best):
                self.best.update(b)

    def process_element1(self, b: Bid, ctx: Any) -> None:
        a = self.auction.value()
        if a is None:
            self.waiting.add(b)
        elif a is not _CLOSED:
            self._consider(a, b)

    def process_element2(self, a: Auction, ctx: Any) -> None:
        self.auction.update(a)
        for b in self.waiting.get() or ():
            self._consider(a, b)
        self.waiting.clear()
        ctx.timer_service().register_event_time_timer(a.expires)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[tuple[Auction, Bid]]:
        a, best = self.auction.value(), self.best.value()
        self.auction.update(_CLOSED)
        self.best.clear()
        if best is not None:
            yield (a, best)


def winning_bids(events: DataStream) -> DataStream:
    return (
        bids(events)
        .connect(auctions(events))
        .key_by(lambda b: b.auction, lambda a: a.id)
        .process(WinningBids())
        .name("winning-bids")
    )


def q9(events: DataStream) -> DataStream:
    """The winning bid of each auction: A.* then B.auction, bidder, price, dateTime, extra (ROW_NUMBER() OVER
    (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) = 1 over bids within the auction's lifetime)."""
    return winning_bids(events).map(lambda ab: ab[0] + (ab[1].auction, ab[1].bidder, ab[1].price,
                                                       ab[1].date_time, ab[1].extra)).name("q9")


class AveragePerCategory(KeyedProcessFunction):
    """q4's outer aggregation per category: emits (category, AVG(final)) after each closed auction; AVG of
    BIGINT is a BIGINT, as in Flink SQL."""

    def open(self, runtime_context: Any) -> None:
        self.totals = runtime_context.get_state(ValueStateDescriptor("sum-count"))

    def process_element(self, value: tuple[int, int], ctx: Any) -> Iterable[tuple[int, int]]:
        category, final = value
        total, count = self.totals.value() or (0, 0)
        total, count = total + final, count + 1
        self.totals.update((total, count))
        yield (category, total // count)


def q4(events: DataStream) -> DataStream:
    """SELECT category, AVG(final) FROM (SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
    WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires GROUP BY A.id, A.category)
    GROUP BY category -- an updating result: the last row per category is the current average."""
    finals = winning_bids(events).map(lambda ab: (ab[0].category, ab[1].price))
    return finals.key_by(lambda cf: cf[0]).process(AveragePerCategory()).name("q4")


class NewUsers(CoGroupFunction):
    """q8 per (id = seller, 10 s window): the person, once, when they also opened an auction. People arrive as
    (id, name, date_time) and auctions as their seller (see q8)."""

    def co_group(
        self, people: Iterable[tuple[int, str, int]], sellers: Iterable[int]
    ) -> Iterable[tuple[int, str, int]]:
        if not any(True for _ in sellers):
            return
        seen = set()
        for pid, name, date_time in people:
            if (pid, name) not in seen:
                seen.add((pid, name))
                yield (pid, name, date_time - date_time % Q8_WINDOW_MS)


def _person_columns(p: Person) -> tuple[int, str, int]:
    return (p.id, p.name, p.date_time)


def _seller(a: Auction) -> int:
    return a.seller


def _first(row: tuple[int, str, int]) -> int:
    return row[0]


def _itself(seller: int) -> int:
    return seller


def q8(events: DataStream) -> DataStream:
    """Persons who opened an auction in the same 10 s tumbling window as they registered: (id, name, starttime).

    Both sides keep only the columns q8 reads before the co_group's exchange, as Flink's plan of the SQL query
    does (its projections sit right after the source): a Person crosses processes and sits in window state as
    three fields instead of eight, an Auction as its seller instead of ten fields (~20 bytes instead of ~480)."""
    people = persons(events).map(_person_columns).name("person (id, name, dateTime)")
    sellers = auctions(events).map(_seller).name("auction seller")
    return (
        people.co_group(sellers)
        .where(_first)
        .equal_to(_itself)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(Q8_WINDOW_MS)))
        .apply(NewUsers())
        .name("q8")
    )
