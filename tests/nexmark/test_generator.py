"""The Nexmark generator against Nexmark's formulas, written out here per event in plain Python."""

from __future__ import annotations

import gc
import math
from collections import Counter

import numpy as np
import pytest
from strom.connectors.base import SourceReaderContext
from strom.connectors.nexmark import Auction, Bid, NexmarkConfig, NexmarkReader, NexmarkSource, Person
from strom.connectors.nexmark.generator import EventBatchGenerator
from strom.connectors.nexmark.strings import FIRST_NAMES, HOT_CHANNELS, LAST_NAMES, US_CITIES, US_STATES, string_pools

N = 20_000


def read_all(config: NexmarkConfig, subtask: int = 0, parallelism: int = 1, batch: int = 700) -> tuple[list, list]:
    reader = NexmarkSource(config).create_reader(SourceReaderContext(subtask, parallelism))
    events, stamps = [], []
    while (got := reader.poll(batch)) is not None:
        events += got
        stamps += reader.last_timestamps
    return events, stamps


@pytest.fixture(scope="module")
def events() -> list:
    return read_all(NexmarkConfig(events=N))[0]


def last_person(n: int) -> int:  # PersonGenerator.lastBase0PersonId with proportions 1/3/46
    epoch, offset = divmod(n, 50)
    return epoch + min(offset, 0)


def last_auction(n: int) -> int:  # AuctionGenerator.lastBase0AuctionId
    epoch, offset = divmod(n, 50)
    if offset < 1:
        return (epoch - 1) * 3 + 2
    return epoch * 3 + min(offset - 1, 2)


def test_kinds_follow_the_proportions_1_3_46_in_every_block_of_50(events):
    for start in range(0, N, 50):
        kinds = [type(e) for e in events[start : start + 50]]
        assert kinds == [Person] + [Auction] * 3 + [Bid] * 46


def test_person_and_auction_ids_count_up_from_1000(events):
    assert [p.id for p in events if type(p) is Person] == list(range(1000, 1000 + N // 50))
    assert [a.id for a in events if type(a) is Auction] == list(range(1000, 1000 + 3 * N // 50))


def test_bids_reference_existing_or_soon_created_auctions_and_people(events):
    hot_auctions = hot_bidders = 0
    for n, e in enumerate(events):
        if type(e) is not Bid:
            continue
        last_a, last_p = last_auction(n), last_person(n)
        if e.auction - 1000 == last_a // 100 * 100:
            hot_auctions += 1
        else:
            assert max(last_a - 100, 0) <= e.auction - 1000 <= last_a + 10
        if e.bidder - 1000 == last_p // 100 * 100 + 1:
            hot_bidders += 1
        else:
            active = min(last_p + 1, 1000)
            assert last_p + 1 - active <= e.bidder - 1000 < last_p + 1 + 10
    bids = sum(1 for e in events if type(e) is Bid)
    # hot_auction_ratio 2 -> about half the bids; hot_bidders_ratio 4 -> about three quarters
    assert 0.45 < hot_auctions / bids < 0.6
    assert 0.7 < hot_bidders / bids < 0.8


def test_sellers_categories_prices_and_expiry_are_in_nexmark_ranges(events):
    for n, e in enumerate(events):
        if type(e) is Auction:
            assert 10 <= e.category < 15
            assert e.seller - 1000 <= last_person(n) + 10
            assert 100 <= e.initial_bid <= e.reserve
            assert e.date_time < e.expires
        elif type(e) is Bid:
            assert 100 <= e.price <= 100_000_000


def test_event_time_is_base_time_plus_number_over_rate():
    config = NexmarkConfig(events=5000, event_rate=3000, base_time=1_000_000)
    events, stamps = read_all(config)
    assert stamps == [1_000_000 + int(n * (1_000_000 / 3000)) // 1000 for n in range(5000)]
    assert [e.date_time for e in events] == stamps


def test_extras_average_nexmark_byte_sizes(events):
    bids = [e for e in events if type(e) is Bid]
    size = sum(32 + len(b.extra) for b in bids) / len(bids)
    assert 95 < size < 105
    people = [e for e in events if type(e) is Person]
    assert all(len(p.credit_card) == 19 for p in people)


def test_parallel_subtasks_partition_the_events_and_each_stays_in_time_order(events):
    parts = [read_all(NexmarkConfig(events=N), subtask=i, parallelism=3, batch=333) for i in range(3)]
    for i, (part, stamps) in enumerate(parts):
        assert part == events[i::3]
        assert stamps == sorted(stamps)


def test_an_event_does_not_depend_on_batch_sizes():
    config = NexmarkConfig(events=3000)
    assert read_all(config, batch=1)[0] == read_all(config, batch=4096)[0]


def test_a_restored_reader_continues_exactly():
    config = NexmarkConfig(events=10_000)
    whole, _ = read_all(config, subtask=1, parallelism=2)
    first = NexmarkReader(config, subtask=1, parallelism=2)
    head = first.poll(1234) + first.poll(1000)
    position = first.snapshot_position()
    second = NexmarkReader(config, subtask=1, parallelism=2)
    second.restore_position(position)
    rest = []
    while (got := second.poll(999)) is not None:
        rest += got
    assert head + rest == whole


def test_out_of_order_groups_permute_events_within_each_group():
    in_order, _ = read_all(NexmarkConfig(events=10_050))
    shuffled, stamps = read_all(NexmarkConfig(events=10_050, out_of_order_group_size=100))
    assert shuffled != in_order
    assert Counter(shuffled) == Counter(in_order)
    for start in range(0, 10_000, 100):
        assert set(shuffled[start : start + 100]) == set(in_order[start : start + 100])
    assert shuffled[10_000:] == in_order[10_000:]  # the trailing partial group is left in order
    assert stamps == [e.date_time for e in shuffled]


def test_rate_paces_emission_on_the_clock():
    now = [100.0]
    reader = NexmarkReader(NexmarkConfig(events=1000, rate=200), subtask=0, parallelism=2, clock=lambda: now[0])
    assert len(reader.poll(500)) == 1  # the first event is due at once
    now[0] += 0.5  # 100 events/s per subtask
    assert len(reader.poll(500)) == 50
    assert len(reader.poll(500)) == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"events": -1}, "events"), ({"events": 10, "rate": -5}, "rate"), ({"events": 10, "event_rate": 0}, "event_rate")],
)
def test_invalid_parameters_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        NexmarkConfig(**fields)


# -- the generator against its specification, event by event ---------------------------------------------
# What follows is the generator's algorithm written per event in plain Python, step by step as Nexmark's
# generator takes them (GeneratorConfig's event numbering and timestamps, PersonGenerator, AuctionGenerator,
# BidGenerator, PriceGenerator, nextExtra), with this generator's one difference: each random choice is a
# field of splitmix64(m * 8 + draw index) instead of the next value of a java.util.Random. The string
# pools (e-mails, item names, descriptions, urls, the text `extra` is cut from) are data it looks up.

MASK64 = (1 << 64) - 1


def spec_draw(seed: int, m: int, index: int) -> int:
    """Random draw `index` of event m: splitmix64 of its slot, mixed with the seed."""
    z = (((m * 8 + index) ^ (seed * 0x2545F4914F6CDD1D)) + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def spec_bits(h: int, shift: int, width: int = 16) -> int:
    return (h >> shift) & ((1 << width) - 1)


def spec_price(h: int) -> int:
    """nextPrice: round(10^(u*6) * 100) cents, u uniform in [0, 1) from the draw's top 53 bits."""
    u = (h >> 11) * (1.0 / (1 << 53))
    return math.floor(10.0 ** (u * 6.0) * 100.0 + 0.5)


class Spec:
    """One config's events by their numbers, one at a time."""

    def __init__(self, config: NexmarkConfig) -> None:
        self.c = config
        self.pools = string_pools(config.seed)
        self.total = config.person_proportion + config.auction_proportion + config.bid_proportion
        self.delay_us = 1_000_000.0 / (config.event_rate or config.rate or 10_000)
        sizes = (config.avg_person_byte_size, config.avg_auction_byte_size, config.avg_bid_byte_size)
        self.text_room = len(self.pools.extra_text) - max(sizes)

    def adjusted(self, n: int) -> int:
        """nextAdjustedEventNumber: a fixed shuffle in each full group of out_of_order_group_size."""
        size = self.c.out_of_order_group_size
        base = n // size * size
        return n if base + size > self.c.events else base + n * 953 % size

    def timestamp(self, m: int) -> int:
        return self.c.base_time + int(m * self.delay_us) // 1000

    def last_person(self, m: int) -> int:  # lastBase0PersonId
        epoch, offset = divmod(m, self.total)
        return epoch * self.c.person_proportion + min(offset, self.c.person_proportion - 1)

    def last_auction(self, m: int) -> int:  # lastBase0AuctionId
        epoch, offset = divmod(m, self.total)
        if offset < self.c.person_proportion:
            return (epoch - 1) * self.c.auction_proportion + self.c.auction_proportion - 1
        return epoch * self.c.auction_proportion + min(offset - self.c.person_proportion,
                                                        self.c.auction_proportion - 1)

    def next_person(self, m: int, draw: int) -> int:  # nextBase0PersonId
        num_people = self.last_person(m) + 1
        active = min(num_people, self.c.num_active_people)
        return num_people - active + draw % (active + 10)

    def next_auction(self, m: int, draw: int) -> int:  # nextBase0AuctionId
        last = self.last_auction(m)
        first = max(last - self.c.num_in_flight_auctions, 0)
        return first + draw % (last - first + 1 + 10)

    def extra(self, number: int, average: int, size: int) -> str:
        """nextExtra: `extra` brings the record to `average` bytes, +-20%; cut from the pool text."""
        h = spec_draw(self.c.seed, number, 7)
        desired = average - size
        delta = math.floor(desired * 0.2 + 0.5)
        length = 0 if size > average else desired - delta + (spec_bits(h, 0) % (2 * delta) if delta > 0 else 0)
        start = spec_bits(h, 24, 32) % self.text_room
        return self.pools.extra_text[start : start + length]

    def event(self, n: int) -> tuple[object, int]:
        m = self.adjusted(n)
        ts = self.timestamp(m)
        h = [spec_draw(self.c.seed, m, k) for k in range(4)]
        offset = m % self.total
        if offset < self.c.person_proportion:
            return self.person(m, ts, h), ts
        if offset < self.c.person_proportion + self.c.auction_proportion:
            return self.auction(m, ts, h), ts
        return self.bid(m, ts, h), ts

    def person(self, m: int, ts: int, h: list[int]) -> Person:
        pools = self.pools
        name = f"{FIRST_NAMES[spec_bits(h[0], 0) % 11]} {LAST_NAMES[spec_bits(h[0], 16) % 9]}"
        email = pools.emails[spec_bits(h[0], 32) % len(pools.emails)]
        city = US_CITIES[spec_bits(h[0], 48) % len(US_CITIES)]
        state = US_STATES[spec_bits(h[1], 0) % len(US_STATES)]
        digits = (spec_bits(h[1], 16), spec_bits(h[1], 32), spec_bits(h[1], 48), spec_bits(h[2], 0))
        card = " ".join(f"{d % 10_000:04d}" for d in digits)
        size = 8 + len(name) + len(email) + len(card) + len(city) + len(state)
        extra = self.extra(m, self.c.avg_person_byte_size, size)
        return Person(self.last_person(m) + 1000, name, email, card, city, state, ts, extra)

    def auction(self, m: int, ts: int, h: list[int]) -> Auction:
        c, pools = self.c, self.pools
        if spec_bits(h[0], 0) % c.hot_sellers_ratio > 0:
            seller = self.last_person(m) // 100 * 100
        else:
            seller = self.next_person(m, spec_bits(h[1], 0, 32))
        initial_bid = spec_price(h[2])
        reserve = initial_bid + spec_price(h[3])
        # open until about num_in_flight_auctions more auctions have been created
        later = m + c.num_in_flight_auctions * self.total // c.auction_proportion
        horizon = self.timestamp(later) - ts
        expires = ts + 1 + spec_bits(h[1], 32, 32) % max(horizon * 2, 1)
        item = pools.item_names[spec_bits(h[0], 32) % len(pools.item_names)]
        description = pools.descriptions[spec_bits(h[0], 48) % len(pools.descriptions)]
        extra = self.extra(m, c.avg_auction_byte_size, 8 + len(item) + len(description) + 8 + 8 + 8 + 8 + 8)
        return Auction(self.last_auction(m) + 1000, item, description, initial_bid, reserve, ts, expires,
                       seller + 1000, 10 + spec_bits(h[0], 16) % 5, extra)

    def bid(self, m: int, ts: int, h: list[int]) -> Bid:
        c, pools = self.c, self.pools
        if spec_bits(h[0], 0) % c.hot_auction_ratio > 0:
            auction = self.last_auction(m) // 100 * 100
        else:
            auction = self.next_auction(m, spec_bits(h[1], 0, 32))
        if spec_bits(h[0], 16) % c.hot_bidders_ratio > 0:
            bidder = self.last_person(m) // 100 * 100 + 1
        else:
            bidder = self.next_person(m, spec_bits(h[1], 32, 32))
        draw = spec_bits(h[0], 48)
        if spec_bits(h[0], 32) % 2 > 0:  # one of the four hot channels
            channel, url = HOT_CHANNELS[draw % 4], pools.urls[10_000 + draw % 4]
        else:
            channel, url = f"channel-{draw % 10_000}", pools.urls[draw % 10_000]
        # a bid's extra is that of one of 4096 bids made once, picked by its draw 7
        picked = spec_bits(spec_draw(c.seed, m, 7), 0, 32) % 4096
        extra = self.extra(picked, c.avg_bid_byte_size, 8 + 8 + 8 + 8)
        return Bid(auction + 1000, bidder + 1000, spec_price(h[2]), channel, url, ts, extra)


def assert_matches_spec(config: NexmarkConfig, *, subtask: int = 0, parallelism: int = 1, batch: int = 700,
                        from_position: int = 0) -> None:
    reader = NexmarkReader(config, subtask=subtask, parallelism=parallelism)
    reader.restore_position(from_position)
    spec = Spec(config)
    numbers = iter(range(subtask + from_position * parallelism, config.events, parallelism))
    checked = 0
    while (got := reader.poll(batch)) is not None:
        for event, ts in zip(got, reader.last_timestamps, strict=True):
            n = next(numbers)
            expected, expected_ts = spec.event(n)
            assert (type(event), event, ts) == (type(expected), expected, expected_ts), f"event number {n}"
            assert all(type(v) is type(w) for v, w in zip(event, expected, strict=True)), f"event number {n}"
            checked += 1
    assert next(numbers, None) is None
    assert checked > 0


@pytest.mark.parametrize(
    ("fields", "split"),
    [
        # more events than several generated chunks (source.GENERATE_CHUNK), so chunk boundaries are crossed
        ({"events": 30_000}, {}),
        ({"events": 40_000, "seed": 3}, {"subtask": 2, "parallelism": 3, "batch": 777}),
        # subtasks that see one kind only: persons, auctions, bids (50 = the default total proportion)
        ({"events": 200_000}, {"subtask": 0, "parallelism": 50}),
        ({"events": 200_000}, {"subtask": 2, "parallelism": 50}),
        ({"events": 400_000}, {"subtask": 17, "parallelism": 50, "batch": 5000}),
        ({"events": 20_050, "out_of_order_group_size": 100, "seed": 5}, {"batch": 4096}),
        ({"events": 20_000, "event_rate": 3333, "base_time": 123_456}, {"subtask": 1, "parallelism": 2}),
        # a restored reader starts in the middle of its split
        ({"events": 30_000}, {"subtask": 1, "parallelism": 2, "from_position": 5_555}),
        (
            {"events": 15_000, "person_proportion": 2, "auction_proportion": 5, "bid_proportion": 3,
             "hot_auction_ratio": 1, "hot_bidders_ratio": 1, "hot_sellers_ratio": 1, "num_active_people": 7,
             "num_in_flight_auctions": 3, "avg_person_byte_size": 50, "avg_auction_byte_size": 60,
             "avg_bid_byte_size": 20},
            {"batch": 333},
        ),
        ({"events": 10_000, "avg_person_byte_size": 1000, "avg_auction_byte_size": 2000, "avg_bid_byte_size": 500,
          "num_in_flight_auctions": 1000, "num_active_people": 50_000}, {}),
    ],
)
def test_every_event_is_the_specifications(fields, split):
    assert_matches_spec(NexmarkConfig(**fields), **split)


def test_generating_leaves_the_collector_switched_as_it_was():
    """The collector is paused while a batch is made (see EventBatchGenerator.generate), never left off."""
    generator = EventBatchGenerator(NexmarkConfig(events=1000))
    assert gc.isenabled()
    generator.generate(np.arange(1000, dtype=np.int64))
    assert gc.isenabled()
    with pytest.raises(ValueError, match="could not convert"):  # fails half-way through the batch
        generator.generate(np.array(["not an event number"]))
    assert gc.isenabled()
    gc.disable()
    try:
        generator.generate(np.arange(100, dtype=np.int64))
        assert not gc.isenabled()
    finally:
        gc.enable()
