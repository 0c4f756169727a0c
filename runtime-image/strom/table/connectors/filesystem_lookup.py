"""Lookups into a filesystem table (Flink's FileSystemLookupFunction): the dimension side of
`JOIN side_input FOR SYSTEM_TIME AS OF o.proc_time AS s ON o.k = s.key` (Nexmark q13).

The filesystem connector has no index to query, so, as Flink, the table is read whole into memory on the
first lookup of a subtask and kept as key -> rows; it is read again on the first lookup after
`lookup.join.cache.ttl` (Flink's option, default 60 min) has passed since the last read. Between reads a
lookup is a dict probe. `scan()` gives every row, so `'lookup.cache' = 'FULL'` works as well.
Time comes from an injectable clock (milliseconds), so the reload is testable without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from strom.connectors.file_source import FileSystems, StreamFormat

DEFAULT_CACHE_TTL_MS = 60 * 60 * 1000  # Flink's lookup.join.cache.ttl default: 60 min
Clock = Callable[[], int]


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class FileSystemLookupSource:
    """`lookup(key)` -> the rows (Rows of the table's columns) whose `key_indexes` equal `key`."""

    def __init__(self, table_name: str, path: str, line_format: StreamFormat, key_indexes: Sequence[int], *,
                 ttl_ms: int = DEFAULT_CACHE_TTL_MS, clock: Clock = monotonic_ms) -> None:
        self.table_name = table_name
        self.path = path
        self.line_format = line_format
        self.key_indexes = list(key_indexes)
        self.ttl_ms = ttl_ms
        self.clock = clock
        self._table: dict[tuple[Any, ...], list[Any]] = {}
        self._next_load: int | None = None  # None: not read yet
        self.loads = 0

    def __getstate__(self) -> dict[str, Any]:  # shipped with the job graph: the rows are read where it runs
        state = dict(self.__dict__)
        state["_table"], state["_next_load"] = {}, None
        return state

    def open(self) -> None:
        """Nothing to connect: the table is read on the first lookup (as Flink's eval does)."""

    def scan(self) -> list[Any]:
        """Every row of the table, read now."""
        files = FileSystems()
        rows: list[Any] = []
        for path in files.enumerate([self.path]):
            reader: Any = files.open(path, self.line_format)
            try:
                while batch := reader.read_batch(4096):
                    rows += batch
            finally:
                reader.close()
        return rows

    def _load(self) -> None:
        table: dict[tuple[Any, ...], list[Any]] = {}
        keys = self.key_indexes
        for row in self.scan():
            key = tuple(row[i] for i in keys)
            if None not in key:  # a NULL key is never equal to a probe
                table.setdefault(key, []).append(row)
        self._table = table  # one reference swap
        self._next_load = self.clock() + self.ttl_ms
        self.loads += 1

    def lookup(self, key: tuple[Any, ...]) -> list[Any]:  # hot path: called per record
        if self._next_load is None or self.clock() >= self._next_load:
            self._load()
        return self._table.get(key, [])

    def close(self) -> None:
        self._table = {}
        self._next_load = None
