"""Stateless queries: q0 pass-through, q1 currency conversion, q2 selection, q14 calculation with a UDF,
q21 channel ids, q22 URL directories. Each maps the event stream to the query's output rows."""

from __future__ import annotations

import re
from typing import Any

from strom.connectors.nexmark import Bid
from strom.datastream import DataStream, MapFunction

from benchmarks.nexmark.streams import EURO_RATE_THOUSANDTHS, bids


def q0(events: DataStream) -> DataStream:
    """SELECT auction, bidder, price, dateTime, extra FROM bid"""
    return bids(events).map(lambda b: (b.auction, b.bidder, b.price, b.date_time, b.extra)).name("q0")


def q1(events: DataStream) -> DataStream:
    """SELECT auction, bidder, 0.908 * price, dateTime, extra FROM bid (price as DECIMAL(23,3)'s unscaled int)"""
    rate = EURO_RATE_THOUSANDTHS
    return bids(events).map(lambda b: (b.auction, b.bidder, b.price * rate, b.date_time, b.extra)).name("q1")


def q2(events: DataStream) -> DataStream:
    """SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0"""
    return bids(events).filter(lambda b: b.auction % 123 == 0).map(lambda b: (b.auction, b.price)).name("q2")


def bid_time_type(date_time: int) -> str:
    hour = date_time // 3_600_000 % 24
    if 8 <= hour <= 18:
        return "dayTime"
    if hour <= 6 or hour >= 20:
        return "nightTime"
    return "otherTime"


class CountChar(MapFunction):
    """q14's projection with Nexmark's count_char UDF (occurrences of 'c' in extra)."""

    def map(self, b: Bid) -> tuple[Any, ...]:
        return (b.auction, b.bidder, b.price * EURO_RATE_THOUSANDTHS, bid_time_type(b.date_time), b.date_time,
                b.extra, b.extra.count("c"))


def q14(events: DataStream) -> DataStream:
    """Bids with 1,000,000 < 0.908 * price < 50,000,000, with a time-of-day type and count_char(extra, 'c')."""
    low, high = 1_000_000 * 1000, 50_000_000 * 1000  # in thousandths, as the unscaled DECIMAL
    rate = EURO_RATE_THOUSANDTHS
    return bids(events).filter(lambda b: low < b.price * rate < high).map(CountChar()).name("q14")


_CHANNEL_ID = re.compile(r"(&|^)channel_id=([^&]*)")
_HOT_CHANNEL_IDS = {"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}


def channel_row(b: Bid) -> list[tuple[Any, ...]]:
    """q21's row for a bid, or none: hot channels by name, others by the url's channel_id."""
    channel_id = _HOT_CHANNEL_IDS.get(b.channel.lower())
    if channel_id is None:
        found = _CHANNEL_ID.search(b.url)
        if found is None:
            return []
        channel_id = found.group(2)
    return [(b.auction, b.bidder, b.price, b.channel, channel_id)]


def q21(events: DataStream) -> DataStream:
    """SELECT auction, bidder, price, channel, CASE ... REGEXP_EXTRACT(url, channel_id) ... FROM bid WHERE ..."""
    return bids(events).flat_map(channel_row).name("q21")


def url_dirs(b: Bid) -> tuple[Any, ...]:
    parts = b.url.split("/")
    n = len(parts)
    return (b.auction, b.bidder, b.price, b.channel, parts[3] if n > 3 else None, parts[4] if n > 4 else None,
            parts[5] if n > 5 else None)


def q22(events: DataStream) -> DataStream:
    """SELECT auction, bidder, price, channel, SPLIT_INDEX(url, '/', 3..5) FROM bid"""
    return bids(events).map(url_dirs).name("q22")
