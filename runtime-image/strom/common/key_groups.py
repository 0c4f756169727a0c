"""Key groups: how a key finds its subtask.

A key maps to one of `max_parallelism` key groups by a stable hash; contiguous ranges
of key groups belong to subtasks (Flink's KeyGroupRangeAssignment). State is stored
per key group, which is what lets a savepoint restore at another parallelism. Never
use built-in hash() here: it is salted per process.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import mmh3

from strom.common.row import Row

DEFAULT_LOWER_MAX_PARALLELISM = 128
UPPER_MAX_PARALLELISM = 1 << 15

_pack_q = struct.Struct("<q").pack
_pack_d = struct.Struct("<d").pack


class UnhashableKeyError(TypeError):
    """A key selector returned a value that has no stable hash (e.g. a list or dict)."""


def _key_bytes(key: Any) -> bytes:
    """A canonical byte encoding of a key, identical in every process."""
    t = type(key)
    if t is str:
        return b"s" + key.encode("utf-8", "surrogatepass")
    if t is int:
        if -(2**63) <= key < 2**63:
            return b"i" + _pack_q(key)
        return b"I" + str(key).encode()
    if t is tuple or t is Row:
        return b"t" + b"".join(_key_bytes(k) + b"\x00" for k in key)
    if t is float:
        if key.is_integer() and -(2**63) <= key < 2**63:
            return b"i" + _pack_q(int(key))  # 1.0 and 1 are equal keys, so they hash alike
        return b"f" + _pack_d(key)
    if t is bytes:
        return b"y" + key
    if key is None:
        return b"n"
    # Subclasses (bool, IntEnum, namedtuple, ...) hash as their base type, because they
    # compare equal to it: True == 1 must land in the same key group as 1.
    for base in (int, str, tuple, float, bytes):
        if isinstance(key, base):
            return _key_bytes(base(key))
    stable = getattr(key, "__stable_key__", None)
    if stable is not None:
        return b"o" + _key_bytes(stable())
    try:
        hash(key)
    except TypeError as e:
        raise UnhashableKeyError(
            f"key {key!r} of type {t.__name__} is not hashable; a key selector must return a str, "
            "int, float, bool, bytes, None, or a tuple/Row of those"
        ) from e
    # A hashable object with no canonical encoding: its repr is the best stable form we have.
    return b"r" + t.__qualname__.encode() + b":" + repr(key).encode()


def stable_hash(key: Any) -> int:
    """A non-negative 31-bit hash of `key`, the same in every process and Python version."""
    return mmh3.hash(_key_bytes(key), 0x5EED, signed=False) & 0x7FFFFFFF


def assign_to_key_group(key: Any, max_parallelism: int) -> int:
    return stable_hash(key) % max_parallelism


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    return key_group * parallelism // max_parallelism


def compute_default_max_parallelism(parallelism: int) -> int:
    """Flink's rule: round up 1.5 x parallelism to a power of two, within [128, 32768]."""
    target = parallelism + parallelism // 2
    power = 1
    while power < target:
        power <<= 1
    return min(max(power, DEFAULT_LOWER_MAX_PARALLELISM), UPPER_MAX_PARALLELISM)


@dataclass(frozen=True, slots=True)
class KeyGroupRange:
    """The inclusive range [start, end] of key groups one subtask owns."""

    start: int
    end: int

    def __contains__(self, key_group: int) -> bool:
        return self.start <= key_group <= self.end

    def __iter__(self):
        return iter(range(self.start, self.end + 1))

    def __len__(self) -> int:
        return max(0, self.end - self.start + 1)

    @staticmethod
    def for_subtask(max_parallelism: int, parallelism: int, index: int) -> KeyGroupRange:
        start = (index * max_parallelism + parallelism - 1) // parallelism
        end = ((index + 1) * max_parallelism - 1) // parallelism
        return KeyGroupRange(start, end)


class KeyGroupAssigner:
    """Memoizes key -> key group, because keys repeat and hashing costs more than a dict lookup.

    The cache is bounded; once full it is cleared, which keeps memory flat for
    high-cardinality keys while still serving the common hot-key case.
    """

    __slots__ = ("max_parallelism", "_cache", "_limit")

    def __init__(self, max_parallelism: int, cache_limit: int = 65536) -> None:
        self.max_parallelism = max_parallelism
        self._cache: dict[Any, int] = {}
        self._limit = cache_limit

    def key_group(self, key: Any) -> int:
        # hot path: called per record
        try:
            return self._cache[key]
        except KeyError:
            pass
        except TypeError:
            stable_hash(key)  # raises UnhashableKeyError with a clear message
        kg = stable_hash(key) % self.max_parallelism
        cache = self._cache
        if len(cache) >= self._limit:
            cache.clear()
        cache[key] = kg
        return kg
