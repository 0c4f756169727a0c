"""Every Nexmark query on the in-process engine at parallelism 1 and 2 against its plain-Python reference.

6,000 events at 200 events/s of event time span 30 s and cross midnight (UTC), so sliding and tumbling
windows close several times, auctions open and expire, sessions split and the daily queries see two days.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from strom.connectors.base import SourceReaderContext
from strom.connectors.nexmark import Bid, NexmarkConfig, NexmarkSource

from benchmarks.nexmark.reference import REFERENCES
from benchmarks.nexmark.runner import run_collect

CONFIG = NexmarkConfig(events=6000, event_rate=200, base_time=1_704_153_590_000)  # 2024-01-01T23:59:50Z
# Updating queries: the last row per key is the result.
FINAL_ROW_KEY = {
    "q4": lambda row: row[0],
    "q18": lambda b: (b.bidder, b.auction),
    "q19": lambda row: (row[0], row[-1]),
}


@pytest.fixture(scope="module")
def events() -> list[Any]:
    reader = NexmarkSource(CONFIG).create_reader(SourceReaderContext(0, 1))
    out: list[Any] = []
    while (batch := reader.poll(1000)) is not None:
        out += batch
    return out


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("query", sorted(REFERENCES, key=lambda q: int(q[1:])))
def test_query_matches_its_reference(query, parallelism, events):
    expected = REFERENCES[query](events)
    out = run_collect(query, CONFIG, parallelism=parallelism)
    if query in FINAL_ROW_KEY:
        key = FINAL_ROW_KEY[query]
        assert {key(row): row for row in out} == expected
    else:
        assert Counter(tuple(row) for row in out) == Counter(tuple(row) for row in expected)
    assert expected, f"{query}: the reference is empty, the comparison would prove nothing"


@pytest.mark.parametrize("parallelism", [1, 2])
def test_q12_processing_time_windows_count_every_bid(parallelism, events):
    out = run_collect("q12", CONFIG, parallelism=parallelism)
    per_bidder = Counter(e.bidder for e in events if type(e) is Bid)
    counted: Counter[int] = Counter()
    for bidder, count, start, end in out:
        assert end - start == 10_000 and start % 10_000 == 0
        counted[bidder] += count
    assert counted == per_bidder
