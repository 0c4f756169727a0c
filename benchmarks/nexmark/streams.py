"""The three views every query starts from (Nexmark's `person`, `auction` and `bid` views over one
event stream), plus the units and formats the queries share."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from strom.connectors.nexmark import Auction, Bid, Person
from strom.datastream import DataStream

SECOND_MS = 1000
DAY_MS = 86_400_000
# The price bands of q15-q17: rank1 < $100, rank2 < $10,000, rank3 above (prices are in cents).
RANK1_BELOW = 10_000
RANK2_BELOW = 1_000_000
# q1/q14 convert dollars to euros as DECIMAL(23, 3): 0.908 * price. We carry the DECIMAL's unscaled
# integer, price * 908 (thousandths), so the value is exact and as cheap as an int.
EURO_RATE_THOUSANDTHS = 908


def is_person(e: Any) -> bool:
    return type(e) is Person


def is_auction(e: Any) -> bool:
    return type(e) is Auction


def is_bid(e: Any) -> bool:
    return type(e) is Bid


def persons(events: DataStream) -> DataStream:
    return events.filter(is_person).name("person")


def auctions(events: DataStream) -> DataStream:
    return events.filter(is_auction).name("auction")


def bids(events: DataStream) -> DataStream:
    return events.filter(is_bid).name("bid")


def day_of(ms: int) -> str:
    """DATE_FORMAT(t, 'yyyy-MM-dd') of epoch milliseconds, in UTC."""
    return _dt.datetime.fromtimestamp(ms // 1000, tz=_dt.UTC).strftime("%Y-%m-%d")


def minute_of_day(ms: int) -> str:
    """DATE_FORMAT(t, 'HH:mm') of epoch milliseconds, in UTC."""
    minutes = ms % DAY_MS // 60_000
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def price_rank(price: int) -> int:
    """1, 2 or 3: the price band of q15-q17."""
    return 1 if price < RANK1_BELOW else 2 if price < RANK2_BELOW else 3
