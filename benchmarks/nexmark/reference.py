"""Plain-Python references: each query computed in one pass of loops and dicts over the generated events
(in event-number order), written from the SQL definitions and independent of the engine and of the
query programs. Each returns what the query's output must equal, in the shape the tests compare:
a list (compared as a multiset) or, for updating queries, a dict of the final row per key.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from decimal import Decimal
from typing import Any

from strom.connectors.nexmark import Auction, Bid, Person

from benchmarks.nexmark.streams import day_of, minute_of_day

SEC = 1000


def _bids(events: list[Any]) -> list[Bid]:
    return [e for e in events if isinstance(e, Bid)]


def q0(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(b.auction, b.bidder, b.price, b.date_time, b.extra) for b in _bids(events)]


def q1(events: list[Any]) -> list[tuple[Any, ...]]:
    # DECIMAL(23,3) 0.908 * price, as its unscaled value in thousandths
    return [(b.auction, b.bidder, int(Decimal("0.908") * b.price * 1000), b.date_time, b.extra) for b in _bids(events)]


def q2(events: list[Any]) -> list[tuple[int, int]]:
    return [(b.auction, b.price) for b in _bids(events) if b.auction % 123 == 0]


def q3(events: list[Any]) -> list[tuple[Any, ...]]:
    people = {e.id: e for e in events if isinstance(e, Person)}
    out = []
    for a in events:
        if isinstance(a, Auction) and a.category == 10:
            p = people.get(a.seller)
            if p is not None and p.state in ("OR", "ID", "CA"):
                out.append((p.name, p.city, p.state, a.id))
    return out


def _winners(events: list[Any]) -> dict[int, tuple[Auction, Bid]]:
    """Per auction id: the bid ranked first by price DESC, dateTime ASC (then the bid itself) among bids with
    A.dateTime <= B.dateTime <= A.expires."""
    by_auction: dict[int, list[Bid]] = defaultdict(list)
    for b in _bids(events):
        by_auction[b.auction].append(b)
    winners = {}
    for a in events:
        if isinstance(a, Auction):
            valid = [b for b in by_auction.get(a.id, ()) if a.date_time <= b.date_time <= a.expires]
            if valid:
                top_price = max(b.price for b in valid)
                at_top = [b for b in valid if b.price == top_price]
                first_time = min(b.date_time for b in at_top)
                winners[a.id] = (a, min(b for b in at_top if b.date_time == first_time))
    return winners


def q4(events: list[Any]) -> dict[int, tuple[int, int]]:
    """category -> (category, AVG(final)) (AVG of BIGINT: truncated)"""
    finals: dict[int, list[int]] = defaultdict(list)
    for a, b in _winners(events).values():
        finals[a.category].append(b.price)
    return {c: (c, sum(f) // len(f)) for c, f in finals.items()}


def q9(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(*a, b.auction, b.bidder, b.price, b.date_time, b.extra) for a, b in _winners(events).values()]


def q5(events: list[Any]) -> list[tuple[int, int]]:
    size, slide = 10 * SEC, 2 * SEC
    counts: dict[int, Counter[int]] = defaultdict(Counter)
    for b in _bids(events):
        last_start = b.date_time - b.date_time % slide
        for start in range(last_start, b.date_time - size, -slide):
            counts[start][b.auction] += 1
    out = []
    for per_auction in counts.values():
        top = max(per_auction.values())
        out += [(auction, n) for auction, n in per_auction.items() if n >= top]
    return out


def q7(events: list[Any]) -> list[tuple[Any, ...]]:
    size = 10 * SEC
    windows: dict[int, list[Bid]] = defaultdict(list)
    for b in _bids(events):
        windows[b.date_time // size].append(b)
    out = []
    for members in windows.values():
        top = max(b.price for b in members)
        out += [(b.auction, b.bidder, b.price, b.date_time, b.extra) for b in members if b.price == top]
    return out


def q8(events: list[Any]) -> list[tuple[int, str, int]]:
    size = 10 * SEC
    sellers = {(a.seller, a.date_time // size) for a in events if isinstance(a, Auction)}
    people = {(p.id, p.name, p.date_time // size) for p in events if isinstance(p, Person)}
    return [(pid, name, w * size) for pid, name, w in people if (pid, w) in sellers]


def q11(events: list[Any]) -> list[tuple[int, int, int, int]]:
    gap = 10 * SEC
    times: dict[int, list[int]] = defaultdict(list)
    for b in _bids(events):
        times[b.bidder].append(b.date_time)
    out = []
    for bidder, ts in times.items():
        ts.sort()
        start, last, n = ts[0], ts[0], 0
        for t in ts:
            if t - last > gap:  # [t, t + gap) session windows merge when they overlap or touch
                out.append((bidder, n, start, last + gap))
                start, n = t, 0
            last, n = t, n + 1
        out.append((bidder, n, start, last + gap))
    return out


def q14(events: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for b in _bids(events):
        euros = Decimal("0.908") * b.price
        if Decimal(1_000_000) < euros < Decimal(50_000_000):
            hour = (b.date_time // 1000 // 3600) % 24
            kind = "dayTime" if 8 <= hour <= 18 else "nightTime" if hour <= 6 or hour >= 20 else "otherTime"
            c_count = sum(1 for ch in b.extra if ch == "c")
            out.append((b.auction, b.bidder, int(euros * 1000), kind, b.date_time, b.extra, c_count))
    return out


def _band(price: int) -> int:
    if price < 10_000:
        return 1
    return 2 if price < 1_000_000 else 3


def _banded(group: list[Bid]) -> tuple[int, ...]:
    bands = [group] + [[b for b in group if _band(b.price) == r] for r in (1, 2, 3)]
    return (
        *(len(g) for g in bands),
        *(len({b.bidder for b in g}) for g in bands),
        *(len({b.auction for b in g}) for g in bands),
    )


def q15(events: list[Any]) -> list[tuple[Any, ...]]:
    days: dict[str, list[Bid]] = defaultdict(list)
    for b in _bids(events):
        days[day_of(b.date_time)].append(b)
    return [(day, *_banded(group)) for day, group in days.items()]


def q16(events: list[Any]) -> list[tuple[Any, ...]]:
    groups: dict[tuple[str, str], list[Bid]] = defaultdict(list)
    for b in _bids(events):
        groups[(b.channel, day_of(b.date_time))].append(b)
    return [
        (channel, day, max(minute_of_day(b.date_time) for b in group), *_banded(group))
        for (channel, day), group in groups.items()
    ]


def q17(events: list[Any]) -> list[tuple[Any, ...]]:
    groups: dict[tuple[int, str], list[int]] = defaultdict(list)
    for b in _bids(events):
        groups[(b.auction, day_of(b.date_time))].append(b.price)
    out = []
    for (auction, day), prices in groups.items():
        ranks = [sum(1 for p in prices if _band(p) == r) for r in (1, 2, 3)]
        total = sum(prices)
        out.append((auction, day, len(prices), *ranks, min(prices), max(prices), total // len(prices), total))
    return out


def q18(events: list[Any]) -> dict[tuple[int, int], Bid]:
    """(bidder, auction) -> the bid with the latest dateTime (ties: the largest bid)"""
    last: dict[tuple[int, int], Bid] = {}
    for b in _bids(events):
        key = (b.bidder, b.auction)
        seen = last.get(key)
        if seen is None or (b.date_time, b) > (seen.date_time, seen):
            last[key] = b
    return last


def q19(events: list[Any]) -> dict[tuple[int, int], tuple[Any, ...]]:
    """(auction, rank) -> (bid fields..., rank) for the 10 highest-priced bids of each auction"""
    by_auction: dict[int, list[Bid]] = defaultdict(list)
    for b in _bids(events):
        by_auction[b.auction].append(b)
    out = {}
    for auction, group in by_auction.items():
        ranked = sorted(group, key=lambda b: (-b.price, b.date_time, b))[:10]
        for i, b in enumerate(ranked, start=1):
            out[(auction, i)] = (*b, i)
    return out


def q20(events: list[Any]) -> list[tuple[Any, ...]]:
    category_10 = {a.id: a for a in events if isinstance(a, Auction) and a.category == 10}
    out = []
    for b in _bids(events):
        a = category_10.get(b.auction)
        if a is not None:
            out.append((*b, a.item_name, a.description, a.initial_bid, a.reserve, a.date_time, a.expires, a.seller,
                        a.category, a.extra))
    return out


def q21(events: list[Any]) -> list[tuple[Any, ...]]:
    names = {"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
    pattern = re.compile(r"(&|^)channel_id=([^&]*)")
    out = []
    for b in _bids(events):
        m = pattern.search(b.url)
        extracted = m.group(2) if m else None
        if extracted is not None or b.channel.lower() in names:
            out.append((b.auction, b.bidder, b.price, b.channel, names.get(b.channel.lower(), extracted)))
    return out


def q22(events: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for b in _bids(events):
        parts = b.url.split("/")
        dirs = [parts[i] if i < len(parts) else None for i in (3, 4, 5)]
        out.append((b.auction, b.bidder, b.price, b.channel, *dirs))
    return out


REFERENCES = {
    name: fn
    for name, fn in globals().items()
    if name.startswith("q") and name[1:].isdigit() and callable(fn)
}
