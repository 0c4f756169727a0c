"""How many entries a state's value cache may hold: its memory budget over the measured size of an entry.

The value cache (`rocksdb.states`) keeps per RocksDB key the object last read or written. Its bound is in
entries, checked per new entry (a length test); what the entries weigh is measured only when the cache reaches
its bound: a sample of its oldest entries, each counted as its key, its value (a tuple with its items, nested; a
held copy or pickle), and a dict slot. An item other objects hold too (a string from a pool, a small int) is
charged in proportion to its references (Nexmark's bids share their channel, url and extra strings: counted per
bid, a q18 entry weighed 2-3 times its memory); a whole value is charged in full even if a record in flight still
holds it, so the estimate errs high: the cache uses at most about its budget.
"""

from __future__ import annotations

import sys
from itertools import islice
from typing import Any

from strom.runtime.state.rocksdb.states import Flat, Pickled

SAMPLE = 256  # entries measured per check: the oldest (a dict iterates in insertion order)
DICT_SLOT_BYTES = 128  # a dict entry (hash, key and value pointers, index) and a dirty-set entry, with spare room
INITIAL_ENTRIES = 100_000  # the bound until the first measurement
_getsizeof = sys.getsizeof
_getrefcount = sys.getrefcount


def initial_bound(budget_bytes: int) -> int:
    """The bound before anything is measured: 100,000 entries, fewer when the budget is small (512 bytes each)."""
    return max(1, min(INITIAL_ENTRIES, budget_bytes // 512))


def value_bytes(value: Any) -> float:
    """Memory of a cached object: itself, plus its share of the items of a tuple, list, set or dict, nested; a held
    copy or pickle with what it holds."""
    t = type(value)
    if isinstance(value, tuple) or t is list or t is set or t is frozenset:  # tuples and NamedTuples too
        return _getsizeof(value) + _items_bytes(value)
    if t is dict:
        return _getsizeof(value) + _items_bytes(value) + _items_bytes(value.values())
    if t is Flat:
        return _getsizeof(value) + value_bytes(value.obj)
    if t is Pickled:
        return _getsizeof(value) + _getsizeof(value.data)
    return _getsizeof(value)


def _items_bytes(items: Any) -> float:
    total = 0.0
    for x in items:
        # held by the container, this loop and getrefcount's argument: 3 references; an item with more is shared
        # (a string from a pool, a record still in flight, a small int) and is charged here in part
        total += value_bytes(x) / max(1, _getrefcount(x) - 2)
    return total


def entry_bytes(key: bytes, value: Any) -> float:
    return _getsizeof(key) + DICT_SLOT_BYTES + (0 if value is None else value_bytes(value))


def measured_bound(values: dict[bytes, Any], budget_bytes: int) -> int:
    """Entries of the sampled size that fit in `budget_bytes` (at least 1)."""
    sample = list(islice(values.items(), SAMPLE))
    if not sample:
        return initial_bound(budget_bytes)
    mean = sum(entry_bytes(k, v) for k, v in sample) / len(sample)
    return max(1, int(budget_bytes / mean))
