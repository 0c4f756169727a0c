"""Between RocksDB entries and the canonical (heap) form of keyed state.

The canonical form is what full snapshots and savepoints hold, whatever the backend: per state,
`namespace -> key -> value`, where a list state's value is the list of its elements and a map
state's value is a dict (TTL entries stamped as `(value, last_access_ms)` per element or map
entry, as the heap stores them). Reading turns a range of key groups of a RocksDB database (or
of a RocksDB snapshot) into that form; writing puts canonical entries into a database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rocksdict import WriteBatch

from strom.common.key_groups import KeyGroupRange
from strom.runtime.state.api import StateAccessError
from strom.runtime.state.rocksdb import keys as rk

Entry = tuple[Any, Any, Any]  # (key, namespace, value)
# writes are flushed to RocksDB in batches of this many entries
_BATCH = 10_000


def scan_range(source: Any, rng: KeyGroupRange) -> Iterable[tuple[bytes, bytes]]:
    """Raw (key, value) entries of key groups `rng` of a database or snapshot, in key order."""
    lower, upper = rk.key_group_bounds(rng.start, rng.end)
    it = source.iter()
    it.seek(lower)
    while it.valid():
        k = it.key()
        if k >= upper:
            return
        yield k, it.value()
        it.next()


def read_entries(
    source: Any, rng: KeyGroupRange, kinds: dict[str, str], *, operator_uid: str = ""
) -> dict[int, dict[str, list[Entry]]]:
    """{key group: {state name: [(key, namespace, value)]}} of key groups `rng`, values in canonical
    form. One scan: the entries of one (state, namespace, key) sit next to each other."""
    out: dict[int, dict[str, list[Entry]]] = {}
    ns_cache: dict[bytes, Any] = {}
    key_cache: dict[bytes, Any] = {}
    loads = rk.loads
    last: tuple[int, str, bytes, bytes] | None = None
    container: Any = None
    kind = ""
    for k, v in scan_range(source, rng):
        kg, name, nsb, keyb, suffix = rk.decode_key(k)
        ident = (kg, name, nsb, keyb)
        if ident != last:
            last = ident
            kind = kinds.get(name, "")
            if not kind:
                raise StateAccessError(
                    f"operator uid {operator_uid!r}: RocksDB holds entries of undeclared state {name!r}"
                )
            ns = ns_cache.get(nsb)
            if ns is None and nsb:
                ns = ns_cache[nsb] = rk.decode_namespace(nsb)
            key = key_cache.get(keyb)
            if key is None:
                key = key_cache[keyb] = loads(keyb)
            if kind == "list":
                container = []
            elif kind == "map":
                container = {}
            else:
                container = loads(v)
            out.setdefault(kg, {}).setdefault(name, []).append((key, ns, container))
            if kind != "list" and kind != "map":
                continue
        if kind == "list":
            container.append(loads(v))
        else:
            container[loads(suffix)] = loads(v)
    return out


def write_entries(
    db: Any,
    kinds: dict[str, str],
    key_group: int,
    entries: dict[str, list[Entry]],
    take_seq: Callable[[], bytes],
    *,
    operator_uid: str = "",
) -> None:
    """Put canonical entries of one key group into `db`."""
    kgb = rk.key_group_prefix(key_group)
    dumps = rk.dumps
    batch = WriteBatch(raw_mode=True)
    n = 0
    for name, items in entries.items():
        kind = kinds.get(name)
        if kind is None:
            raise StateAccessError(
                f"operator uid {operator_uid!r}: the snapshot has entries of undeclared state {name!r}"
            )
        name_part = rk.name_part(name)
        for key, ns, value in items:
            base = kgb + name_part + rk.namespace_part(ns) + rk.key_part(key)
            if kind == "list":
                for element in value:
                    batch.put(base + take_seq(), dumps(element))
                    n += 1
            elif kind == "map":
                for uk, v in value.items():
                    batch.put(base + dumps(uk), dumps(v))
                    n += 1
            else:
                batch.put(base, dumps(value))
                n += 1
            if n >= _BATCH:
                db.write(batch)
                batch = WriteBatch(raw_mode=True)
                n = 0
    if n:
        db.write(batch)
