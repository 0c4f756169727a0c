"""The three Nexmark event kinds: a person registers, a person opens an auction, a person bids.

Field names follow Nexmark's model classes in snake_case. Times are epoch milliseconds (UTC), prices
are in cents, as in Nexmark. Records are NamedTuples: immutable, picklable by reference, fields by
name (`bid.price`) or position, and their kind is their type (`type(event) is Bid`).
"""

from __future__ import annotations

from typing import NamedTuple


class Person(NamedTuple):
    id: int
    name: str
    email_address: str
    credit_card: str
    city: str
    state: str
    date_time: int
    extra: str


class Auction(NamedTuple):
    id: int
    item_name: str
    description: str
    initial_bid: int
    reserve: int
    date_time: int
    expires: int
    seller: int
    category: int
    extra: str


class Bid(NamedTuple):
    auction: int
    bidder: int
    price: int
    channel: str
    url: str
    date_time: int
    extra: str


Event = Person | Auction | Bid
