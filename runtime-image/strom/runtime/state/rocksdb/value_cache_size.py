"""How many entries a state's value cache may hold: its memory budget over the measured size of an entry.

The value cache (`rocksdb.states`) keeps per RocksDB key the object last read or written. Its bound is in
entries, checked per new entry (a length test); what the entries weigh is measured only when the cache reaches
its bound: a sample of its oldest entries, each counted as its key, its value (a tuple with its items, nested; a
held copy or pickle), and a dict slot. Shared objects (small ints, interned strs, a record also held downstream)
are counted per entry, so the estimate errs high: the cache uses at most about its budget.
"""

from __future__ import annotations

import sys
from itertools import islice
from typing import Any

SAMPLE = 256  # entries measured per check: the oldest (a dict iterates in insertion order)
DICT_SLOT_BYTES = 112  # a dict entry (hash, key and value pointers, index) and a dirty-set entry, with spare room
INITIAL_ENTRIES = 100_000  # the bound until the first measurement
_getsizeof = sys.getsizeof


def initial_bound(budget_bytes: int) -> int:
    """The bound before anything is measured: 100,000 entries, fewer when the budget is small (512 bytes each)."""
    return max(1, min(INITIAL_ENTRIES, budget_bytes // 512))


def value_bytes(value: Any) -> int:
    """Memory of a cached object: itself, plus the items of a tuple, list, set or dict, nested; a held copy or
    pickle (an object with one slot, `obj` or `data`) with what it holds."""
    t = type(value)
    if t is tuple or isinstance(value, tuple):  # tuples and NamedTuples
        return _getsizeof(value) + sum(map(value_bytes, value))
    if t is list or t is set or t is frozenset:
        return _getsizeof(value) + sum(map(value_bytes, value))
    if t is dict:
        return _getsizeof(value) + sum(map(value_bytes, value)) + sum(map(value_bytes, value.values()))
    slots = getattr(t, "__slots__", None)
    if slots == ("obj",) or slots == ("data",):  # rocksdb.states.Flat / Pickled
        return _getsizeof(value) + value_bytes(getattr(value, slots[0]))
    return _getsizeof(value)


def entry_bytes(key: bytes, value: Any) -> int:
    return _getsizeof(key) + DICT_SLOT_BYTES + (0 if value is None else value_bytes(value))


def measured_bound(values: dict[bytes, Any], budget_bytes: int) -> int:
    """Entries of the sampled size that fit in `budget_bytes` (at least 1)."""
    sample = list(islice(values.items(), SAMPLE))
    if not sample:
        return initial_bound(budget_bytes)
    mean = sum(entry_bytes(k, v) for k, v in sample) / len(sample)
    return max(1, int(budget_bytes / mean))
