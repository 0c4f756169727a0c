"""The byte layout of keyed state in RocksDB: what a key and a value look like on disk.

Every RocksDB key starts with the key group (2 bytes, big-endian), then the state name and
the namespace, then the user's key, so that one key group, or one state in one namespace of
one key group, is a contiguous prefix range: restoring a subset of key groups (rescaling) and
listing a state's keys are prefix scans. Every part but the last is length-prefixed, so no
entry's prefix is mistaken for another's:

    kg:u16 | len:u16 name:utf8 | len:u32 namespace | len:u32 key | [suffix]

The suffix is empty for value, reducing and aggregating state, a big-endian sequence number
per element of a list state (elements iterate in append order), and the pickled user key of
a map state. Keys and values are pickled (protocol 5); a value whose pickle refers to
`__main__` or cannot be pickled plainly (a lambda, a local class) goes through cloudpickle,
so that it still loads in another process (restore after failover, rescaling).
"""

from __future__ import annotations

import pickle
import struct
from typing import Any, cast

import cloudpickle

from strom.common.key_groups import KeyGroupAssigner, stable_hash
from strom.datastream.windowing.windows import TimeWindow

PROTOCOL = 5
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_SEQ = struct.Struct(">Q")
_WINDOW = struct.Struct(">qq")

_VOID_NS = b""
_TIME_WINDOW_TAG = b"\x01"
_PICKLED_TAG = b"\x02"

KEY_GROUP_BYTES = 2
SEQ_BYTES = _SEQ.size


_pickle_dumps = pickle.dumps


def dumps(value: Any) -> bytes:
    """Pickle `value`; user classes of the job script (`__main__`) and lambdas by value."""
    try:
        data = _pickle_dumps(value, PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return cast(bytes, cloudpickle.dumps(value, PROTOCOL))
    if b"__main__" in data:
        return cast(bytes, cloudpickle.dumps(value, PROTOCOL))
    return data


loads = pickle.loads
_DUMPS_ERRORS = (pickle.PicklingError, AttributeError, TypeError)


def dumps_many(values: list[Any]) -> list[bytes]:
    """`dumps` of each value, in bulk (hot path: a write-through's values): plain pickles, one search for
    `__main__` over all of them, and `dumps` again only for those that need cloudpickle."""
    try:
        out = [_pickle_dumps(v, PROTOCOL) for v in values]
    except _DUMPS_ERRORS:
        return [dumps(v) for v in values]
    if b"__main__" in b"".join(out):
        out = [dumps(v) if b"__main__" in data else data for v, data in zip(values, out, strict=True)]
    return out


def key_group_prefix(key_group: int) -> bytes:
    return _U16.pack(key_group)


def name_part(state_name: str) -> bytes:
    raw = state_name.encode("utf-8")
    return _U16.pack(len(raw)) + raw


def namespace_bytes(namespace: Any) -> bytes:
    """The namespace without its length: VOID is empty, a TimeWindow 17 bytes, anything else pickled."""
    if namespace is None:
        return _VOID_NS
    if type(namespace) is TimeWindow:
        return _TIME_WINDOW_TAG + _WINDOW.pack(namespace.start, namespace.end)
    return _PICKLED_TAG + dumps(namespace)


def namespace_part(namespace: Any) -> bytes:
    raw = namespace_bytes(namespace)
    return _U32.pack(len(raw)) + raw


def key_part(key: Any) -> bytes:
    # hot path: called per state key written or read in bulk. An int, or a str that does not mention __main__,
    # pickles plainly: the bytes `dumps` gives, without its checks
    t = type(key)
    raw = _pickle_dumps(key, PROTOCOL) if t is int or (t is str and "__main__" not in key) else dumps(key)
    return _U32.pack(len(raw)) + raw


_KG_PREFIXES: list[bytes] = []


def key_group_prefixes(max_parallelism: int) -> list[bytes]:
    """key group -> its 2 bytes (`key_group_prefix`), for at least every key group below `max_parallelism`."""
    if len(_KG_PREFIXES) < max_parallelism:
        _KG_PREFIXES.extend(_U16.pack(kg) for kg in range(len(_KG_PREFIXES), max_parallelism))
    return _KG_PREFIXES


def state_keys(key_groups: KeyGroupAssigner, middle: bytes, keys: list[Any]) -> list[bytes]:
    """The RocksDB keys of `keys` under `middle` (a state's name part and namespace part), in bulk (hot path: a
    namespace cache's multi-get and write-through). The key group comes from the stable hash directly: on a large
    key space the assigner's memo misses on nearly every key, and a miss costs it an exception and an insert; a key
    the hash refuses goes through the assigner, whose error names the key selector."""
    max_p = key_groups.max_parallelism
    prefixes = key_group_prefixes(max_p)
    try:
        return [prefixes[stable_hash(k) % max_p] + middle + key_part(k) for k in keys]
    except TypeError:  # UnhashableKeyError, or a list key not yet frozen
        key_group = key_groups.key_group
        return [prefixes[key_group(k)] + middle + key_part(k) for k in keys]


def seq_suffix(seq: int) -> bytes:
    return _SEQ.pack(seq)


def decode_namespace(raw: bytes) -> Any:
    if not raw:
        return None
    tag = raw[:1]
    if tag == _TIME_WINDOW_TAG:
        start, end = _WINDOW.unpack_from(raw, 1)
        return TimeWindow(start, end)
    if tag == _PICKLED_TAG:
        return loads(raw[1:])
    raise ValueError(f"unknown namespace encoding {raw[:1]!r}")


def decode_key(data: bytes) -> tuple[int, str, bytes, bytes, bytes]:
    """(key group, state name, namespace bytes, key bytes, suffix) of a RocksDB key."""
    kg = _U16.unpack_from(data, 0)[0]
    pos = 2
    n = _U16.unpack_from(data, pos)[0]
    pos += 2
    name = data[pos : pos + n].decode("utf-8")
    pos += n
    n = _U32.unpack_from(data, pos)[0]
    pos += 4
    ns = data[pos : pos + n]
    pos += n
    n = _U32.unpack_from(data, pos)[0]
    pos += 4
    key = data[pos : pos + n]
    pos += n
    return kg, name, ns, key, data[pos:]


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key that starts with `prefix` (exclusive upper bound)."""
    b = bytearray(prefix)
    while b:
        if b[-1] < 0xFF:
            b[-1] += 1
            return bytes(b)
        b.pop()
    raise ValueError("a prefix of only 0xff bytes has no upper bound")


def key_group_bounds(start: int, end: int) -> tuple[bytes, bytes]:
    """[lower, upper) of the keys of key groups start..end (inclusive)."""
    return _U16.pack(start), _U16.pack(end + 1)  # key groups are < 32768 (Flink's upper max parallelism)
