"""Caches of a lookup join (Flink's LookupOptions, FLIP-221): which rows of the dimension table a
subtask keeps, for how long, and what it counts.

    lookup.cache = NONE     every probe queries the table
    lookup.cache = PARTIAL  rows of probed keys, bounded by `lookup.partial-cache.max-rows` (least
                            recently used key evicted; Flink counts keys), expiring `expire-after-write`
                            after they were loaded and/or `expire-after-access` after their last
                            probe; `cache-missing-key` (default true) caches "no row" too
    lookup.cache = FULL     the whole table, loaded before the first probe and reloaded every
                            `lookup.full-cache.periodic-reload.interval` in a background thread; probes
                            keep reading the previous copy until the new one is complete, then swap

Counters follow Flink's cache metric group: hitCount, missCount, loadCount, numLoadFailures,
latestLoadTime and numCachedRecords. A FULL cache answers every probe (a key absent from the table is
a hit with no rows), so its misses stay 0, as in Flink. Time comes from an injectable clock in
milliseconds (processing time), so expiry is testable without sleeping.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from strom.common.config_options import parse_duration_ms
from strom.table.errors import NotSupportedYet, ValidationException

Clock = Callable[[], int]
Rows = list[Any]

CACHE_OPTIONS = frozenset({
    "lookup.cache",
    "lookup.max-retries",
    "lookup.async",
    "lookup.partial-cache.max-rows",
    "lookup.partial-cache.expire-after-write",
    "lookup.partial-cache.expire-after-access",
    "lookup.partial-cache.cache-missing-key",
    "lookup.full-cache.reload-strategy",
    "lookup.full-cache.periodic-reload.interval",
    "lookup.full-cache.periodic-reload.schedule-mode",
})


def wall_clock_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class LookupOptions:
    """The `lookup.*` options of one dimension table, checked."""

    cache: str = "NONE"  # NONE, PARTIAL, FULL
    max_retries: int = 3
    is_async: bool = False
    max_rows: int | None = None
    expire_after_write_ms: int | None = None
    expire_after_access_ms: int | None = None
    cache_missing_key: bool = True
    reload_interval_ms: int | None = None

    @staticmethod
    def parse(table: str, options: dict[str, str]) -> LookupOptions:
        def duration(key: str) -> int | None:
            if key not in options:
                return None
            try:
                value = parse_duration_ms(options[key])
            except ValueError:
                raise ValidationException(f"table {table!r}: option {key!r} must be a duration such as '10 s' or "
                                          f"'500 ms', got {options[key]!r}") from None
            if value <= 0:
                raise ValidationException(f"table {table!r}: option {key!r} must be positive, got {options[key]!r}")
            return value

        def integer(key: str, default: int | None, minimum: int) -> int | None:
            if key not in options:
                return default
            try:
                value = int(options[key])
            except ValueError:
                value = minimum - 1
            if value < minimum:
                raise ValidationException(f"table {table!r}: option {key!r} must be an integer >= {minimum}, "
                                          f"got {options[key]!r}")
            return value

        def boolean(key: str, default: bool) -> bool:
            value = options.get(key, str(default)).lower()
            if value not in ("true", "false"):
                raise ValidationException(f"table {table!r}: option {key!r} must be 'true' or 'false', "
                                          f"got {options[key]!r}")
            return value == "true"

        cache = options.get("lookup.cache", "NONE").upper()
        if cache not in ("NONE", "PARTIAL", "FULL"):
            raise ValidationException(f"table {table!r}: option 'lookup.cache' must be NONE, PARTIAL or FULL, "
                                      f"got {options['lookup.cache']!r}")
        parsed = LookupOptions(
            cache=cache,
            max_retries=integer("lookup.max-retries", 3, 0) or 0,
            is_async=boolean("lookup.async", False),
            max_rows=integer("lookup.partial-cache.max-rows", None, 1),
            expire_after_write_ms=duration("lookup.partial-cache.expire-after-write"),
            expire_after_access_ms=duration("lookup.partial-cache.expire-after-access"),
            cache_missing_key=boolean("lookup.partial-cache.cache-missing-key", True),
            reload_interval_ms=duration("lookup.full-cache.periodic-reload.interval"),
        )
        partial = [k for k in options if k.startswith("lookup.partial-cache.")]
        full = [k for k in options if k.startswith("lookup.full-cache.")]
        if cache != "PARTIAL" and partial:
            raise ValidationException(f"table {table!r}: option {sorted(partial)[0]!r} needs 'lookup.cache' = "
                                      f"'PARTIAL' (it is {cache!r})")
        if cache != "FULL" and full:
            raise ValidationException(f"table {table!r}: option {sorted(full)[0]!r} needs 'lookup.cache' = "
                                      f"'FULL' (it is {cache!r})")
        if cache == "PARTIAL" and parsed.max_rows is None and parsed.expire_after_write_ms is None \
                and parsed.expire_after_access_ms is None:
            raise ValidationException(
                f"table {table!r}: 'lookup.cache' = 'PARTIAL' needs an eviction policy: set "
                "'lookup.partial-cache.max-rows', '.expire-after-write' or '.expire-after-access'")
        if cache == "FULL":
            strategy = options.get("lookup.full-cache.reload-strategy", "PERIODIC").upper()
            if strategy != "PERIODIC":
                raise NotSupportedYet(f"table {table!r}: 'lookup.full-cache.reload-strategy' = {strategy!r} "
                                      "(only PERIODIC)")
            mode = options.get("lookup.full-cache.periodic-reload.schedule-mode", "FIXED_DELAY").upper()
            if mode not in ("FIXED_DELAY", "FIXED_RATE"):
                raise ValidationException(f"table {table!r}: 'lookup.full-cache.periodic-reload.schedule-mode' "
                                          f"must be FIXED_DELAY or FIXED_RATE, got {mode!r}")
            if parsed.reload_interval_ms is None:
                raise ValidationException(f"table {table!r}: 'lookup.cache' = 'FULL' needs "
                                          "'lookup.full-cache.periodic-reload.interval' (e.g. '1 h')")
        return parsed


class CacheMetrics:
    """Flink's cache metric group counters; `register` exposes them in a metric group."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self.loads = 0
        self.load_failures = 0
        self.latest_load_time_ms = 0
        self.cached_records: Callable[[], int] = lambda: 0

    def register(self, group: Any) -> None:
        group.gauge("hitCount", lambda: self.hits)
        group.gauge("missCount", lambda: self.misses)
        group.gauge("loadCount", lambda: self.loads)
        group.gauge("numLoadFailures", lambda: self.load_failures)
        group.gauge("latestLoadTime", lambda: self.latest_load_time_ms)
        group.gauge("numCachedRecords", lambda: self.cached_records())


class LookupCache:
    """No cache: every probe is a miss and loads. Flink's LookupCache shape: `get_if_present` (a hit, or
    None), then the caller loads and `put`s; `get` does all three for a synchronous lookup."""

    def __init__(self, metrics: CacheMetrics, clock: Clock = wall_clock_ms) -> None:
        self.metrics = metrics
        self.clock = clock

    def get_if_present(self, key: Hashable) -> Rows | None:
        return None

    def put(self, key: Hashable, rows: Rows) -> None:
        """Nothing kept."""

    def get(self, key: Hashable, load: Callable[[Hashable], Rows]) -> Rows:  # hot path: called per record
        rows = self.get_if_present(key)
        if rows is not None:
            return rows
        self.metrics.misses += 1
        start = self.clock()
        try:
            rows = load(key)
        except Exception:
            self.metrics.load_failures += 1
            raise
        self.loaded(self.clock() - start)
        self.put(key, rows)
        return rows

    def loaded(self, elapsed_ms: int) -> None:
        self.metrics.loads += 1
        self.metrics.latest_load_time_ms = elapsed_ms

    def open(self) -> None:
        """Nothing to load up front."""

    def close(self) -> None:
        """Nothing held."""


class PartialCache(LookupCache):
    """Rows per probed key, LRU-bounded by the number of keys and expiring after write and/or access."""

    def __init__(self, options: LookupOptions, metrics: CacheMetrics, clock: Clock = wall_clock_ms) -> None:
        super().__init__(metrics, clock)
        self.max_rows = options.max_rows
        self.after_write = options.expire_after_write_ms
        self.after_access = options.expire_after_access_ms
        self.cache_missing = options.cache_missing_key
        # key -> (rows, loaded at, last access); order = least recently used first
        self._entries: OrderedDict[Hashable, tuple[Rows, int, int]] = OrderedDict()
        self._rows = 0
        metrics.cached_records = lambda: self._rows

    def get_if_present(self, key: Hashable) -> Rows | None:  # hot path: called per record
        entry = self._entries.get(key)
        if entry is None:
            return None
        now = self.clock()
        rows, written, accessed = entry
        if (self.after_write is not None and now - written >= self.after_write) or \
                (self.after_access is not None and now - accessed >= self.after_access):
            self._remove(key)
            return None
        self.metrics.hits += 1
        self._entries[key] = (rows, written, now)
        self._entries.move_to_end(key)
        return rows

    def put(self, key: Hashable, rows: Rows) -> None:
        if not rows and not self.cache_missing:
            return
        if key in self._entries:
            self._remove(key)
        now = self.clock()
        self._entries[key] = (rows, now, now)
        self._rows += len(rows)
        if self.max_rows is not None:
            # Flink's bound counts cache entries (one per key, as its Guava maximumSize), not rows inside
            while len(self._entries) > self.max_rows:
                self._remove(next(iter(self._entries)))

    def _remove(self, key: Hashable) -> None:
        rows, _, _ = self._entries.pop(key)
        self._rows -= len(rows)


class FullCache(LookupCache):
    """The whole table: loaded at `open` (blocking, as Flink's first load), reloaded in the background
    once the interval has passed since the last load ended (FIXED_DELAY); a failed reload keeps the
    previous copy, is counted, and is tried again an interval later."""

    def __init__(self, options: LookupOptions, metrics: CacheMetrics, scan: Callable[[], list[tuple[Hashable, Any]]],
                 clock: Clock = wall_clock_ms) -> None:
        super().__init__(metrics, clock)
        assert options.reload_interval_ms is not None
        self.interval = options.reload_interval_ms
        self._scan = scan
        self._table: dict[Hashable, Rows] = {}
        self._next_reload = 0
        self._reloading: threading.Thread | None = None
        self._lock = threading.Lock()
        self._records = 0
        metrics.cached_records = lambda: self._records

    def open(self) -> None:
        self._load_all()

    def get_if_present(self, key: Hashable) -> Rows | None:  # hot path: called per record
        if self.clock() >= self._next_reload:
            self._start_reload()
        self.metrics.hits += 1
        return self._table.get(key, [])

    def _load_all(self) -> None:
        start = self.clock()
        try:
            pairs = self._scan()
        except Exception:
            self.metrics.load_failures += 1
            raise
        table: dict[Hashable, Rows] = {}
        for key, row in pairs:
            table.setdefault(key, []).append(row)
        with self._lock:
            self._table = table  # one reference swap: a probe sees the old copy or the new one, never half
            self._records = len(pairs)
            self.loaded(self.clock() - start)
            self._next_reload = self.clock() + self.interval

    def _start_reload(self) -> None:
        with self._lock:
            if self._reloading is not None and self._reloading.is_alive():
                return
            self._next_reload = self.clock() + self.interval  # until this reload ends and sets it again
            self._reloading = threading.Thread(target=self._reload, name="lookup-full-cache-reload", daemon=True)
            self._reloading.start()

    def _reload(self) -> None:
        try:
            self._load_all()
        except Exception:  # noqa: BLE001 - counted in numLoadFailures; probes keep the previous copy
            pass

    def wait_for_reload(self, timeout_s: float) -> None:
        """Wait until a reload in progress has ended (for tests and close)."""
        thread = self._reloading
        if thread is not None:
            thread.join(timeout=timeout_s)

    def close(self) -> None:
        self.wait_for_reload(30)


def make_cache(options: LookupOptions, metrics: CacheMetrics, scan: Callable[[], list[tuple[Hashable, Any]]] | None,
               clock: Clock = wall_clock_ms) -> LookupCache:
    if options.cache == "PARTIAL":
        return PartialCache(options, metrics, clock)
    if options.cache == "FULL":
        if scan is None:
            raise ValidationException("'lookup.cache' = 'FULL' needs a connector that can scan the whole table")
        return FullCache(options, metrics, scan, clock)
    return LookupCache(metrics, clock)
