"""Nexmark events, generated a batch at a time from their numbers (Nexmark's NexmarkGenerator with
PersonGenerator, AuctionGenerator, BidGenerator and PriceGenerator).

Event number n becomes event m = adjusted(n) (a shuffle inside out-of-order groups); m decides the
kind (m mod 50 < 1 person, < 4 auction, else bid with the default proportions), the ids, the
timestamp and every random choice. Random choices come from splitmix64 of (seed, m, draw index)
rather than from a stateful generator, so each event is a pure function of its number: a subtask
can start anywhere, and a restored reader regenerates exactly what it would have.

The work is vectorised with numpy over the whole batch; only building the record tuples is per event,
and that is most of the cost: one NamedTuple and a few ints per event. tests/nexmark/test_generator.py
holds the same algorithm written per event in plain Python, as the specification this must match.
"""

from __future__ import annotations

import gc
from itertools import repeat
from typing import Any

import numpy as np

from strom.connectors.nexmark import config as cfg
from strom.connectors.nexmark.config import NexmarkConfig
from strom.connectors.nexmark.model import Auction, Bid, Person
from strom.connectors.nexmark.strings import CHANNELS_NUMBER, HOT_CHANNELS, StringPools, string_pools

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_U30, _U27, _U31 = np.uint64(30), np.uint64(27), np.uint64(31)
_DRAWS_PER_EVENT = 8
_EXTRA_DRAW = 7  # the hash that sizes and places `extra`, apart from every other choice
_BID_EXTRA_POOL = 4096
_BID_SIZE = 8 + 8 + 8 + 8  # what Nexmark counts as a bid's size before its extra
# tuple.__new__(Bid, values) makes the NamedTuple in C; Bid(*values) would run its Python __new__
_new = tuple.__new__


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a bijective, well-mixed hash of uint64 values (wrapping arithmetic)."""
    z = x + _GOLDEN
    z = (z ^ (z >> _U30)) * _MIX1
    z = (z ^ (z >> _U27)) * _MIX2
    return z ^ (z >> _U31)


def field(h: np.ndarray, shift: int, bits: int = 16) -> np.ndarray:
    """`bits` bits of hash h from bit `shift`, as int64 (safe to mix with the int64 id arithmetic)."""
    if shift + bits == 64:  # the top bits: the shift alone isolates them
        return (h >> np.uint64(shift)).astype(np.int64)
    return ((h >> np.uint64(shift)) & np.uint64((1 << bits) - 1)).astype(np.int64)


def prices(h: np.ndarray) -> np.ndarray:
    """Nexmark's nextPrice: round(10^(u*6) * 100) cents for u uniform in [0, 1), from the top 53 bits."""
    u = (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    return np.floor(np.power(10.0, u * 6.0) * 100.0 + 0.5).astype(np.int64)


def extra_lengths(config_avg: int, current_sizes: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Nexmark's nextExtra length: current + extra averages `config_avg` bytes, +-20%."""
    desired = config_avg - current_sizes
    delta = np.floor(desired * 0.2 + 0.5).astype(np.int64)
    sized = desired - delta + np.where(delta > 0, draws % np.maximum(2 * delta, 1), 0)
    return np.where(current_sizes > config_avg, 0, sized)


def records(kind: type, columns: tuple[list[Any], ...]) -> list[Any]:
    """One `kind` NamedTuple per row of these equally long column lists."""
    # hot path: one tuple per event, made in C (map over zip reuses zip's row tuple)
    return list(map(_new, repeat(kind, len(columns[0])), zip(*columns, strict=True)))


class EventBatchGenerator:
    """Makes the events of a numpy array of event numbers (one subtask's batch)."""

    def __init__(self, config: NexmarkConfig) -> None:
        self.config = config
        self.pools: StringPools = string_pools(config.seed)
        self._seed = np.uint64((config.seed * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF)
        pools = self.pools
        self._email_lengths = pools.lengths(pools.emails)
        self._name_lengths = pools.lengths(pools.person_names)
        self._city_lengths = pools.lengths(pools.cities)
        self._item_lengths = pools.lengths(pools.item_names)
        self._description_lengths = pools.lengths(pools.descriptions)
        self._text = pools.extra_text
        self._text_room = len(pools.extra_text) - max(config.avg_person_byte_size, config.avg_auction_byte_size,
                                                      config.avg_bid_byte_size)
        # Bids are 92% of events: their extras come from a pool made once (a lookup instead of a slice).
        pool_draws = np.arange(_BID_EXTRA_POOL, dtype=np.int64)
        self._bid_extras = np.array(
            self.extras(config.avg_bid_byte_size, np.full(_BID_EXTRA_POOL, _BID_SIZE, dtype=np.int64),
                        self.draw_bases(pool_draws)),
            dtype=object,
        )
        # How far ahead, in events, the auction `num_in_flight_auctions` from now will be created.
        self._auction_horizon_events = (
            config.num_in_flight_auctions * config.total_proportion // config.auction_proportion
        )
        # Credit card numbers are four groups of four digits: each group's text made once.
        self._four_digits = np.array([f"{k:04d}" for k in range(10_000)], dtype=object)

    def draw_bases(self, m: np.ndarray) -> np.ndarray:
        """What `hashes` adds a draw index to: each event's first slot among the per-event draws."""
        return m.astype(np.uint64) * np.uint64(_DRAWS_PER_EVENT)

    def hashes(self, bases: np.ndarray, draw: int) -> np.ndarray:
        """Draw number `draw` of each event (from `draw_bases`): splitmix64((m * 8 + draw) ^ seed)."""
        return splitmix64((bases + np.uint64(draw)) ^ self._seed)

    def generate(self, numbers: np.ndarray) -> tuple[list[Any], list[int]]:
        """The events for these event numbers, in the same order, and their timestamps."""
        # hot path: called per batch. The batch makes thousands of tuples that all outlive it (the caller
        # keeps them): with the collector on, every 700 of them start a young-generation collection that
        # walks the whole batch built so far and promotes it, and the promotions then trigger the older
        # generations' collections: about half the generator's CPU (measured). With the collector paused
        # for the batch, the first allocation after it runs one young collection over the batch instead.
        # The switch is process-wide: other threads' garbage of those milliseconds is collected after them,
        # and a generator that finds the collector off (another one's batch) leaves the switch alone.
        if not gc.isenabled():
            return self._generate(numbers)
        gc.disable()
        try:
            return self._generate(numbers)
        finally:
            gc.enable()

    def _generate(self, numbers: np.ndarray) -> tuple[list[Any], list[int]]:
        config = self.config
        m = cfg.adjusted_numbers(config, numbers)
        ts = cfg.timestamps(config, m)
        epoch, offset = np.divmod(m, config.total_proportion)
        persons_end = config.person_proportion
        auctions_end = persons_end + config.auction_proportion
        is_bid = offset >= auctions_end
        if is_bid.all():
            stamps = ts.tolist()
            return self.bids(m, epoch, ts, stamps), stamps
        is_person = offset < persons_end
        is_auction = ~(is_bid | is_person)
        events = np.empty(len(m), dtype=object)
        stamps_in_order = np.empty(len(m), dtype=object)
        for mask, make in ((is_person, self.persons), (is_auction, self.auctions), (is_bid, self.bids)):
            where = np.flatnonzero(mask)
            if len(where):
                kind_ts = ts[where]
                stamps = kind_ts.tolist()
                made = make(m[where], epoch[where], kind_ts, stamps, offset[where])
                # the kinds are made apart; scattering puts them back in event order (fromiter: a list of
                # tuples given to numpy directly would become a 2-d array)
                events[where] = np.fromiter(made, dtype=object, count=len(made))
                stamps_in_order[where] = np.fromiter(stamps, dtype=object, count=len(stamps))
        return events.tolist(), stamps_in_order.tolist()

    # Each kind's maker takes its events' numbers m, their epochs (m // total_proportion) and offsets in the
    # epoch, and their timestamps as an array and as the list the records share with the caller.
    def bids(self, m: np.ndarray, epoch: np.ndarray, ts: np.ndarray, stamps: list[int],
             offset: np.ndarray | None = None) -> list[Bid]:
        config, pools = self.config, self.pools
        bases = self.draw_bases(m)
        h0, h1, h2 = self.hashes(bases, 0), self.hashes(bases, 1), self.hashes(bases, 2)
        # a bid comes after its epoch's people and auctions: the last ones created are the epoch's last
        last_auction = (epoch + 1) * config.auction_proportion - 1
        last_person = (epoch + 1) * config.person_proportion - 1
        hot_auction = field(h0, 0) % config.hot_auction_ratio > 0
        auction = np.where(
            hot_auction,
            last_auction // cfg.HOT_AUCTION_RATIO * cfg.HOT_AUCTION_RATIO,
            self._next_auction(last_auction, field(h1, 0, 32)),
        ) + cfg.FIRST_AUCTION_ID
        hot_bidder = field(h0, 16) % config.hot_bidders_ratio > 0
        bidder = np.where(
            hot_bidder,
            last_person // cfg.HOT_BIDDER_RATIO * cfg.HOT_BIDDER_RATIO + 1,
            self._next_person(last_person, field(h1, 32, 32)),
        ) + cfg.FIRST_PERSON_ID
        price = prices(h2)
        # half the bids come through one of the four hot channels, the rest through one of 10,000
        channel_draw = field(h0, 48)
        channel = np.where(
            field(h0, 32) % 2 > 0, CHANNELS_NUMBER + channel_draw % len(HOT_CHANNELS), channel_draw % CHANNELS_NUMBER
        )
        extra = self._bid_extras[field(self.hashes(bases, _EXTRA_DRAW), 0, 32) % _BID_EXTRA_POOL].tolist()
        return records(Bid, (
            auction.tolist(), bidder.tolist(), price.tolist(), pools.channels[channel].tolist(),
            pools.urls[channel].tolist(), stamps, extra,
        ))

    def persons(self, m: np.ndarray, epoch: np.ndarray, ts: np.ndarray, stamps: list[int],
                offset: np.ndarray) -> list[Person]:
        config, pools = self.config, self.pools
        bases = self.draw_bases(m)
        h0, h1, h2 = self.hashes(bases, 0), self.hashes(bases, 1), self.hashes(bases, 2)
        ids = epoch * config.person_proportion + offset + cfg.FIRST_PERSON_ID
        name = field(h0, 0) % 11 * 9 + field(h0, 16) % 9
        email = field(h0, 32) % len(pools.emails)
        city = field(h0, 48) % len(pools.cities)
        state = field(h1, 0) % len(pools.states)
        four = self._four_digits
        groups = [four[field(h, shift) % 10_000].tolist() for h, shift in ((h1, 16), (h1, 32), (h1, 48), (h2, 0))]
        cards = [f"{a} {b} {c} {d}" for a, b, c, d in zip(*groups, strict=True)]
        size = 8 + self._name_lengths[name] + self._email_lengths[email] + 19 + self._city_lengths[city] + 2
        extra = self.extras(config.avg_person_byte_size, size, bases)
        return records(Person, (
            ids.tolist(), pools.person_names[name].tolist(), pools.emails[email].tolist(), cards,
            pools.cities[city].tolist(), pools.states[state].tolist(), stamps, extra,
        ))

    def auctions(self, m: np.ndarray, epoch: np.ndarray, ts: np.ndarray, stamps: list[int],
                 offset: np.ndarray) -> list[Auction]:
        config, pools = self.config, self.pools
        bases = self.draw_bases(m)
        h0, h1, h2, h3 = (self.hashes(bases, 0), self.hashes(bases, 1), self.hashes(bases, 2),
                          self.hashes(bases, 3))
        base0_id = epoch * config.auction_proportion + (offset - config.person_proportion)
        ids = base0_id + cfg.FIRST_AUCTION_ID
        # an auction comes after its epoch's people: the last person created is the epoch's last
        last_person = (epoch + 1) * config.person_proportion - 1
        hot_seller = field(h0, 0) % config.hot_sellers_ratio > 0
        seller = np.where(
            hot_seller,
            last_person // cfg.HOT_SELLER_RATIO * cfg.HOT_SELLER_RATIO,
            self._next_person(last_person, field(h1, 0, 32)),
        ) + cfg.FIRST_PERSON_ID
        category = cfg.FIRST_CATEGORY_ID + field(h0, 16) % cfg.NUM_CATEGORIES
        initial_bid = prices(h2)
        reserve = initial_bid + prices(h3)
        # auctions last on average until `num_in_flight_auctions` more auctions have been created
        horizon = cfg.timestamps(config, m + self._auction_horizon_events) - ts
        expires = ts + 1 + field(h1, 32, 32) % np.maximum(horizon * 2, 1)
        item = field(h0, 32) % len(pools.item_names)
        description = field(h0, 48) % len(pools.descriptions)
        size = 8 + self._item_lengths[item] + self._description_lengths[description] + 40
        extra = self.extras(config.avg_auction_byte_size, size, bases)
        return records(Auction, (
            ids.tolist(), pools.item_names[item].tolist(), pools.descriptions[description].tolist(),
            initial_bid.tolist(), reserve.tolist(), stamps, expires.tolist(), seller.tolist(),
            category.tolist(), extra,
        ))

    def _next_person(self, last_person: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """Nexmark's nextBase0PersonId: one of the active people or of the next few to be created."""
        num_people = last_person + 1
        active = np.minimum(num_people, self.config.num_active_people)
        return num_people - active + draws % (active + cfg.PERSON_ID_LEAD)

    def _next_auction(self, last_auction: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """Nexmark's nextBase0AuctionId: one of the auctions likely still open or of the next few."""
        first = np.maximum(last_auction - self.config.num_in_flight_auctions, 0)
        return first + draws % (last_auction - first + 1 + cfg.AUCTION_ID_LEAD)

    def extras(self, average: int, current_sizes: np.ndarray, bases: np.ndarray) -> list[str]:
        """`extra` payloads: slices of the pool text, lengths as Nexmark's nextExtra."""
        h = self.hashes(bases, _EXTRA_DRAW)
        lengths = extra_lengths(average, current_sizes, field(h, 0, 16)).tolist()
        starts = (field(h, 24, 32) % self._text_room).tolist()
        text = self._text
        return [text[s : s + n] for s, n in zip(starts, lengths, strict=True)]
