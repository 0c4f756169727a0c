"""Lookup caches on a manual clock: what a probe returns, when it loads, what the counters say, and the
options Flink refuses. References are worked by hand per test."""

from __future__ import annotations

import threading
import time

import pytest
from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.planner.lookup_cache import CacheMetrics, FullCache, LookupOptions, PartialCache, make_cache


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class Table:
    """The dimension table the cache loads from: counts queries."""

    def __init__(self, rows: dict[int, list[str]]) -> None:
        self.rows = rows
        self.queries = 0

    def load(self, key: int) -> list[str]:
        self.queries += 1
        return list(self.rows.get(key, []))

    def scan(self) -> list[tuple[int, str]]:
        self.queries += 1
        return [(k, v) for k, vs in self.rows.items() for v in vs]


def partial(clock: Clock, **options: str) -> tuple[PartialCache, CacheMetrics]:
    metrics = CacheMetrics()
    cache = make_cache(LookupOptions.parse("dim", {"lookup.cache": "PARTIAL", **options}), metrics, None, clock)
    assert isinstance(cache, PartialCache)
    return cache, metrics


def test_no_cache_loads_every_probe():
    table = Table({1: ["a"]})
    metrics = CacheMetrics()
    cache = make_cache(LookupOptions.parse("dim", {}), metrics, None, Clock())
    assert [cache.get(1, table.load) for _ in range(3)] == [["a"]] * 3
    assert (metrics.hits, metrics.misses, metrics.loads, table.queries) == (0, 3, 3, 3)


def test_partial_cache_serves_a_key_until_it_expires_after_write():
    clock, table = Clock(), Table({1: ["a"]})
    cache, metrics = partial(clock, **{"lookup.partial-cache.expire-after-write": "10 s"})
    assert cache.get(1, table.load) == ["a"]
    table.rows[1] = ["b"]  # the table changes; the cached row stays until 10 s after it was loaded
    clock.now = 9_999
    assert cache.get(1, table.load) == ["a"]
    clock.now = 10_000
    assert cache.get(1, table.load) == ["b"]
    assert (metrics.hits, metrics.misses, metrics.loads) == (1, 2, 2)


def test_expire_after_access_is_renewed_by_each_hit():
    clock, table = Clock(), Table({1: ["a"]})
    cache, metrics = partial(clock, **{"lookup.partial-cache.expire-after-access": "5 s"})
    cache.get(1, table.load)
    for t in (4_000, 8_000, 12_000):  # each probe within 5 s of the previous one
        clock.now = t
        assert cache.get(1, table.load) == ["a"]
    clock.now = 17_000
    cache.get(1, table.load)
    assert (metrics.hits, metrics.misses, table.queries) == (3, 2, 2)


def test_max_rows_evicts_the_least_recently_used_key():
    clock, table = Clock(), Table({1: ["a"], 2: ["b"], 3: ["c"]})
    cache, metrics = partial(clock, **{"lookup.partial-cache.max-rows": "2"})
    cache.get(1, table.load)
    cache.get(2, table.load)
    cache.get(1, table.load)  # 1 is now more recent than 2
    cache.get(3, table.load)  # evicts 2
    assert metrics.cached_records() == 2
    cache.get(1, table.load)
    cache.get(2, table.load)
    assert (metrics.hits, metrics.misses) == (2, 4)


def test_missing_keys_are_cached_unless_told_not_to():
    clock, table = Clock(), Table({})
    cache, metrics = partial(clock, **{"lookup.partial-cache.max-rows": "10"})
    cache.get(7, table.load)
    cache.get(7, table.load)
    assert (metrics.hits, table.queries) == (1, 1)
    table2 = Table({})
    cache, metrics = partial(clock, **{"lookup.partial-cache.max-rows": "10",
                                       "lookup.partial-cache.cache-missing-key": "false"})
    cache.get(7, table2.load)
    cache.get(7, table2.load)
    assert (metrics.hits, table2.queries) == (0, 2)


def test_full_cache_answers_from_its_copy_and_swaps_in_a_reload_in_the_background():
    clock, table = Clock(), Table({1: ["a"], 2: ["b"]})
    metrics = CacheMetrics()
    options = LookupOptions.parse("dim", {"lookup.cache": "FULL",
                                          "lookup.full-cache.periodic-reload.interval": "1 min"})
    cache = make_cache(options, metrics, table.scan, clock)
    assert isinstance(cache, FullCache)
    cache.open()
    assert (cache.get(1, table.load), cache.get(3, table.load)) == (["a"], [])
    table.rows[1] = ["z"]
    clock.now = 59_999
    assert cache.get(1, table.load) == ["a"]
    clock.now = 60_000
    cache.get(1, table.load)  # due: starts a reload, answers from the old copy meanwhile
    cache.wait_for_reload(10)
    assert cache.get(1, table.load) == ["z"]
    assert (metrics.loads, metrics.misses, metrics.cached_records(), table.queries) == (2, 0, 2, 2)


def test_a_probe_during_a_full_reload_reads_the_previous_copy():
    clock = Clock()
    release = threading.Event()
    calls = []

    def scan() -> list[tuple[int, str]]:
        calls.append(1)
        if len(calls) > 1:
            release.wait(10)
            return [(1, "new")]
        return [(1, "old")]

    options = LookupOptions.parse("dim", {"lookup.cache": "FULL", "lookup.full-cache.periodic-reload.interval": "1 s"})
    cache = FullCache(options, CacheMetrics(), scan, clock)
    cache.open()
    clock.now = 1_000
    assert cache.get_if_present(1) == ["old"]  # starts the reload, which blocks
    deadline = time.monotonic() + 10
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cache.get_if_present(1) == ["old"]
    release.set()
    cache.wait_for_reload(10)
    assert cache.get_if_present(1) == ["new"]


@pytest.mark.parametrize(("options", "message"), [
    ({"lookup.cache": "SOME"}, "'lookup.cache' must be NONE, PARTIAL or FULL"),
    ({"lookup.cache": "PARTIAL"}, "needs an eviction policy"),
    ({"lookup.cache": "PARTIAL", "lookup.partial-cache.max-rows": "0"}, "'lookup.partial-cache.max-rows' must be"),
    ({"lookup.cache": "PARTIAL", "lookup.partial-cache.expire-after-write": "soon"}, "must be a duration"),
    ({"lookup.partial-cache.max-rows": "5"}, "needs 'lookup.cache' = 'PARTIAL'"),
    ({"lookup.cache": "FULL"}, "'lookup.full-cache.periodic-reload.interval'"),
    ({"lookup.max-retries": "-1"}, "'lookup.max-retries' must be an integer >= 0"),
    ({"lookup.async": "yes"}, "'lookup.async' must be 'true' or 'false'"),
])
def test_bad_lookup_options_are_refused_naming_the_option(options, message):
    with pytest.raises(ValidationException, match="table 'dim'") as e:
        LookupOptions.parse("dim", options)
    assert message in str(e.value)


def test_timed_full_cache_reload_is_not_supported_yet():
    with pytest.raises(NotSupportedYet, match="reload-strategy"):
        LookupOptions.parse("dim", {"lookup.cache": "FULL", "lookup.full-cache.reload-strategy": "TIMED",
                                    "lookup.full-cache.periodic-reload.interval": "1 h"})
