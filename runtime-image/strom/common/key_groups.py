"""Key groups: how a key finds its subtask.

A key maps to one of `max_parallelism` key groups by a stable hash; contiguous ranges
of key groups belong to subtasks (Flink's KeyGroupRangeAssignment). State is stored
per key group, which is what lets a savepoint restore at another parallelism. Never
use built-in hash() here: it is salted per process.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import mmh3

from strom.common.row import Row, make_row

DEFAULT_LOWER_MAX_PARALLELISM = 128
UPPER_MAX_PARALLELISM = 1 << 15

_pack_q = struct.Struct("<q").pack
_pack_d = struct.Struct("<d").pack
# `_key_bytes` of a tuple of two 64-bit ints: b"t", then per item b"i", the int, b"\x00"
_pack_two_ints = struct.Struct("<ccqxcqx").pack


# the value types a subclass key hashes as (their constructors make the base value of a subclass instance)
_VALUE_TYPES: tuple[type[Any], ...] = (int, str, tuple, float, bytes)


class UnhashableKeyError(TypeError):
    """A key selector returned a value that has no stable hash (e.g. a list or dict)."""


class UnstableKeyError(UnhashableKeyError):
    """A key selector returned an object whose hash would differ between processes, so the same key would
    be routed to different key groups by different TaskManagers (silently wrong results)."""


# object.__repr__ and most C types' default reprs carry the object's address: "<Foo object at 0x7f...>"
_ADDRESS_IN_REPR = re.compile(r" at 0x[0-9a-fA-F]+")

_WHAT_TO_RETURN = (
    "return a str, int, tuple, enum or @dataclass(frozen=True) key built from the object's fields "
    "(or give its class __eq__, __hash__ and a __repr__ that shows only its value)"
)


def _key_bytes(key: Any) -> bytes:
    """A canonical byte encoding of a key, identical in every process."""
    t = type(key)
    if t is str:
        text: str = key  # `type(key) is str` is the fast test; the annotation tells the checker what it proved
        return b"s" + text.encode("utf-8", "surrogatepass")
    if t is int:
        if -(2**63) <= key < 2**63:
            return b"i" + _pack_q(key)
        return b"I" + str(key).encode()
    if t is tuple or t is Row:
        flat = _int_str_tuple_bytes(key)  # the common composite key, without a call per item
        if flat is not None:
            return flat
        return b"t" + b"".join(_key_bytes(k) + b"\x00" for k in key)
    if t is float:
        if key.is_integer() and -(2**63) <= key < 2**63:
            return b"i" + _pack_q(int(key))  # 1.0 and 1 are equal keys, so they hash alike
        return b"f" + _pack_d(key)
    if t is bytes:
        raw: bytes = key
        return b"y" + raw
    if key is None:
        return b"n"
    # Subclasses (bool, IntEnum, namedtuple, ...) hash as their base type, because they
    # compare equal to it: True == 1 must land in the same key group as 1.
    for base in _VALUE_TYPES:
        if isinstance(key, base):
            return _key_bytes(base(key))
    if t is FrozenKey:
        return _key_bytes(key.value)  # the same key group as the user's list, dict or set it wraps
    stable = getattr(key, "__stable_key__", None)
    if stable is not None:
        return b"o" + _key_bytes(stable())
    if t is frozenset:
        # iteration order (and so repr) follows the per-process salted hash of str elements: sort the encodings
        return b"F" + b"".join(e + b"\x00" for e in sorted(map(_key_bytes, key)))
    # Lists, dicts and sets are keys by value, as in PyFlink (which pickles them); each has its own tag, so a
    # list and the tuple of the same items are different keys, as they are in Python.
    if isinstance(key, list):
        return b"l" + b"".join(_key_bytes(k) + b"\x00" for k in key)
    if isinstance(key, dict):
        items = sorted(_key_bytes(k) + b"\x00" + _key_bytes(v) + b"\x00" for k, v in key.items())
        return b"m" + b"".join(items)
    if isinstance(key, (set, frozenset)):
        return b"S" + b"".join(e + b"\x00" for e in sorted(map(_key_bytes, key)))
    try:
        hash(key)
    except TypeError as e:
        raise UnhashableKeyError(
            f"key {key!r} of type {t.__name__} is not hashable; a key selector must return a str, "
            "int, float, bool, bytes, None, or a tuple/Row/list/dict/set of those"
        ) from e
    # A value type with no canonical encoding here (dataclass, enum, datetime, Decimal, UUID, ...): its repr
    # shows its value, the same in every process. Identity objects and address reprs have no such form.
    if not isinstance(key, Enum) and all("__eq__" not in vars(c) for c in t.__mro__[:-1]):
        raise UnstableKeyError(
            f"key of type {t.__module__}.{t.__qualname__} compares by identity (its class defines no __eq__), "
            f"so its hash differs between processes; {_WHAT_TO_RETURN}"
        )
    if dataclasses.is_dataclass(key) and not isinstance(key, type) and _holds_frozenset(key):
        # its repr would show the frozenset in the order of the per-process salted hash: field by field instead
        values = (getattr(key, f.name) for f in dataclasses.fields(key) if f.compare)
        return b"d" + t.__qualname__.encode() + b":" + b"".join(_key_bytes(v) + b"\x00" for v in values)
    text = repr(key)
    if _ADDRESS_IN_REPR.search(text):
        raise UnstableKeyError(
            f"key {text} of type {t.__module__}.{t.__qualname__} has a repr holding a memory address, "
            f"so its hash differs between processes; {_WHAT_TO_RETURN}"
        )
    return b"r" + t.__qualname__.encode() + b":" + text.encode()


def _frozen_form(value: Any) -> Any:
    """A hashable value equal for equal keys: lists, dicts and sets (also inside tuples) become tagged tuples
    and frozensets; anything else is itself (hash() then refuses what has no hash at all)."""
    if isinstance(value, list):
        return (list, tuple(map(_frozen_form, value)))
    if isinstance(value, dict):
        return (dict, frozenset((_frozen_form(k), _frozen_form(v)) for k, v in value.items()))
    if isinstance(value, set):
        return (set, frozenset(map(_frozen_form, value)))
    if isinstance(value, tuple):
        return tuple(map(_frozen_form, value))
    if type(value) is Row:  # a Row holding a list: equal Rows (values, names, kind) freeze alike
        return (Row, tuple(map(_frozen_form, value)), value._fields, value.get_row_kind())
    return value


class FrozenKey:
    """A key Python cannot hash (a list, dict or set, or a tuple holding one), keyed by its value.

    Routing, keyed state and timers see this wrapper (value equality and hash); what the user sees
    (ctx.get_current_key(), a window function's key) is `value`, the key as the selector returned it
    (`user_key`). Its key group is the stable encoding of `value` (`_key_bytes`), the same in every process."""

    __slots__ = ("value", "_frozen", "_hash")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._frozen = _frozen_form(value)
        # in-process dict lookups only (state tables, caches); key groups come from stable_hash(_key_bytes)
        self._hash = hash(self._frozen)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrozenKey) and self._hash == other._hash and self._frozen == other._frozen

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenKey({self.value!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Equal keys pickle to equal bytes in every process (RocksDB stores state under the pickled key): dict
        # items and set elements in the order of their stable encodings, not in insertion or salted-hash order.
        return (_thawed_key, (_canonical(self.value),))


def _canonical(value: Any) -> tuple[str, Any]:
    """`value` as tagged tuples with dict items and set elements sorted by their stable encodings."""
    if isinstance(value, list):
        return ("l", tuple(map(_canonical, value)))
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: _key_bytes(kv[0]))
        return ("m", tuple((_canonical(k), _canonical(v)) for k, v in items))
    if isinstance(value, set):
        return ("S", tuple(map(_canonical, sorted(value, key=_key_bytes))))
    if type(value) is frozenset:
        return ("F", tuple(map(_canonical, sorted(value, key=_key_bytes))))
    if type(value) is tuple:
        return ("t", tuple(map(_canonical, value)))
    if type(value) is Row:
        return ("R", (tuple(map(_canonical, value)), value._fields, value.get_row_kind()))
    return ("v", value)


def _thawed(form: tuple[str, Any]) -> Any:
    tag, body = form
    if tag == "l":
        return [_thawed(f) for f in body]
    if tag == "m":
        return {_thawed(k): _thawed(v) for k, v in body}
    if tag == "S":
        return {_thawed(f) for f in body}
    if tag == "F":
        return frozenset(_thawed(f) for f in body)
    if tag == "t":
        return tuple(_thawed(f) for f in body)
    if tag == "R":
        values, fields, kind = body
        return make_row([_thawed(f) for f in values], fields, kind)
    return body


def _thawed_key(form: tuple[str, Any]) -> FrozenKey:
    """Unpickles a FrozenKey (see FrozenKey.__reduce__)."""
    return FrozenKey(_thawed(form))


def freeze_key(key: Any) -> Any:
    """`key` itself when Python can hash it, else a FrozenKey of it (or UnhashableKeyError)."""
    try:
        hash(key)
        return key
    except TypeError:
        pass
    try:
        return FrozenKey(key)
    except TypeError as e:
        raise UnhashableKeyError(
            f"key {key!r} of type {type(key).__name__} is not hashable; a key selector must return a str, "
            "int, float, bool, bytes, None, or a tuple/Row/list/dict/set of those"
        ) from e


def user_key(key: Any) -> Any:
    """The key as the user's key selector returned it (unwraps a FrozenKey)."""
    return key.value if type(key) is FrozenKey else key


def _holds_frozenset(value: Any) -> bool:
    """Whether a frozenset is in `value`, itself or in its tuples' items and dataclasses' compared fields."""
    if isinstance(value, frozenset):
        return True
    if isinstance(value, tuple | Row):
        return any(map(_holds_frozenset, value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_holds_frozenset(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare)
    return False


def describe_key_selector(selector: Any) -> str:
    """How an error names a key selector: the user's function (name, file and line) or KeySelector class."""
    fn = getattr(selector, "_user_callable", selector)
    code = getattr(fn, "__code__", None)
    if code is not None:
        where = f" ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})"
        return f"key selector {getattr(fn, '__qualname__', fn)}{where}"
    return f"key selector {type(fn).__qualname__}"


def _int_str_tuple_bytes(key: tuple[Any, ...]) -> bytes | None:
    """`_key_bytes` of a tuple whose items are all 64-bit ints or strs, written out without a call per item (a
    composite key per record: q18's (bidder, auction)); None for any other tuple."""
    if len(key) == 2:
        a, b = key
        if type(a) is int and type(b) is int:  # two ints: one pack
            try:
                return _pack_two_ints(b"t", b"i", a, b"i", b)
            except struct.error:  # past 64 bits: `_key_bytes` writes such an int another way
                return None
    parts = [b"t"]
    for x in key:
        t = type(x)
        if t is int:
            if not -(2**63) <= x < 2**63:
                return None
            parts.append(b"i" + _pack_q(x) + b"\x00")
        elif t is str:
            text: str = x
            parts.append(b"s" + text.encode("utf-8", "surrogatepass") + b"\x00")
        else:
            return None
    return b"".join(parts)


def int_str_tuple_hash(key: tuple[Any, ...]) -> int | None:
    """`stable_hash` of a tuple of int (64-bit) and str items, None for any other tuple (the RocksDB backend then
    asks the key group assigner, whose errors name the key selector)."""
    data = _int_str_tuple_bytes(key)
    return None if data is None else mmh3.hash(data, 0x5EED, signed=False) & 0x7FFFFFFF


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

    def __iter__(self) -> Iterator[int]:
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

    `owner` names where the keys come from (e.g. "key selector by_user of operator 'Keyed Reduce'"),
    so that a refused key's error says which function to change.
    """

    __slots__ = ("max_parallelism", "owner", "_cache", "_limit")

    def __init__(self, max_parallelism: int, cache_limit: int = 65536, *, owner: str = "") -> None:
        self.max_parallelism = max_parallelism
        self.owner = owner
        self._cache: dict[Any, int] = {}
        self._limit = cache_limit

    def key_group(self, key: Any) -> int:
        # hot path: called per record
        try:
            return self._cache[key]
        except KeyError:
            pass
        except TypeError:  # a list, dict or set key: cached by value
            key = self.freeze(key)
            if key in self._cache:
                return self._cache[key]
        try:
            kg = stable_hash(key) % self.max_parallelism
        except UnhashableKeyError as e:
            if not self.owner:
                raise
            raise type(e)(f"{self.owner}: {e}") from None
        cache = self._cache
        if len(cache) >= self._limit:
            cache.clear()
        cache[key] = kg
        return kg

    def freeze(self, key: Any) -> Any:
        """`freeze_key`, with a refusal naming `owner`."""
        try:
            return freeze_key(key)
        except UnhashableKeyError as e:
            if not self.owner:
                raise
            raise type(e)(f"{self.owner}: {e}") from None
