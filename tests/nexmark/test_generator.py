"""The Nexmark generator against Nexmark's formulas, written out here per event in plain Python."""

from __future__ import annotations

from collections import Counter

import pytest
from strom.connectors.base import SourceReaderContext
from strom.connectors.nexmark import Auction, Bid, NexmarkConfig, NexmarkReader, NexmarkSource, Person

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
