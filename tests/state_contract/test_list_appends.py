"""Contract: list state under random appends, reads, clears, merges and snapshots equals plain Python lists.

RocksDB writes immutable list elements behind (they wait in the table's value cache until a snapshot, a scanning
read or its bound writes them through) and skips RocksDB for lists it knows have nothing there. Whatever the mix,
a list reads back as the elements appended since its last clear, in order, across namespaces, after a write-through
mid-list, after its bound is passed, and after a snapshot restored into a fresh backend of either kind. Mutable
elements are copies on RocksDB: changing the object after adding it changes nothing stored. The expected lists
are a plain dict of Python lists.
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

import pytest
from strom.datastream.state import ListStateDescriptor
from strom.datastream.window import TimeWindow
from strom.runtime.state.api import VOID, KeyedStateBackend
from strom.runtime.state.restore import restore_keyed
from strom.runtime.state.rocksdb import states as rocksdb_states
from strom.runtime.state.snapshots import snapshot_keyed

from tests.state_contract.conftest import BACKENDS, new_backend

KEYS: list[Any] = [1, 2, 3, 40, "a", "b", "person-7"]
NAMESPACES: list[Any] = [VOID, TimeWindow(0, 10), TimeWindow(10, 20), TimeWindow(20, 30)]


class Person(NamedTuple):  # an immutable element, as Nexmark's events are
    id: int
    name: str


def _element(rng: random.Random, n: int) -> Any:
    kind = rng.randrange(5)
    if kind == 0:
        return n
    if kind == 1:
        return (1, Person(n, f"p{n}"))
    if kind == 2:
        return f"s{n}"
    if kind == 3:
        return [n, [n]]  # mutable: stored as a copy
    return {"n": n}


def _state(backend: KeyedStateBackend, namespace: Any) -> Any:
    s = backend.create_namespaced_state(ListStateDescriptor("events"))
    s.set_current_namespace(namespace)
    return s


def _restored(backend: KeyedStateBackend, into: str) -> KeyedStateBackend:
    fresh = new_backend(into)
    fresh.create_namespaced_state(ListStateDescriptor("events"))
    restore_keyed(fresh, None, [snapshot_keyed(backend, None).materialize(None)])
    return fresh


def _check_all(backend: KeyedStateBackend, want: dict[tuple[Any, Any], list[Any]]) -> None:
    for ns in NAMESPACES:
        s = _state(backend, ns)
        for key in KEYS:
            backend.set_current_key(key)
            assert s.get() == want.get((key, ns), []), f"key {key!r}, namespace {ns!r}"


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", BACKENDS)
def test_random_list_operations_read_back_as_python_lists(kind: str, seed: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(rocksdb_states, "LIST_PENDING_MAX", 37)  # the bound is passed several times per run
    if seed % 2:  # past this many lists known to be in RocksDB, the state stops tracking them and scans
        monkeypatch.setattr(rocksdb_states, "LIST_ON_DISK_MAX", 5)
    rng = random.Random(seed)
    want: dict[tuple[Any, Any], list[Any]] = {}
    backend = new_backend(kind)
    states = {ns: _state(backend, ns) for ns in NAMESPACES}
    try:
        for n in range(1500):
            key, ns = rng.choice(KEYS), rng.choice(NAMESPACES)
            backend.set_current_key(key)
            s = states[ns]
            ref = want.setdefault((key, ns), [])
            op = rng.random()
            if op < 0.55:
                e = _element(rng, n)
                s.add(e)
                ref.append(e if not isinstance(e, (list, dict)) else type(e)(e))
                if isinstance(e, list) and kind == "rocksdb":
                    e.append("changed after add")  # RocksDB stores a copy (the heap, like Flink's, the object)
            elif op < 0.62:
                es = [_element(rng, n * 10 + i) for i in range(rng.randrange(4))]
                s.add_all(es)
                ref.extend(es)
            elif op < 0.67:
                es = [_element(rng, n * 10 + i) for i in range(rng.randrange(3))]
                s.update(es)
                ref[:] = es
            elif op < 0.80:
                assert s.get() == ref, f"key {key!r}, namespace {ns!r}, operation {n}"
            elif op < 0.88:
                s.clear()
                ref.clear()
            elif op < 0.91:
                sources = [x for x in NAMESPACES if x is not ns and x is not VOID][: rng.randrange(1, 3)]
                s.merge_namespaces(ns, sources)
                for x in sources:
                    ref.extend(want.pop((key, x), []))
            elif op < 0.93:
                backend.keys("events", ns)  # a scanning read: writes every pending element through
            elif op < 0.935:
                into = rng.choice(BACKENDS)
                fresh = _restored(backend, into)
                backend.close()
                backend, kind = fresh, into
                states = {x: _state(backend, x) for x in NAMESPACES}
        _check_all(backend, want)
        _check_all(_restored(backend, "rocksdb"), want)
    finally:
        backend.close()


def test_adding_none_is_refused_naming_the_state(backend_kind: str):
    backend = new_backend(backend_kind)
    try:
        backend.set_current_key("k")
        s = _state(backend, VOID)
        with pytest.raises(ValueError, match="list state 'events'"):
            s.add(None)
        with pytest.raises(ValueError, match="list state 'events'"):
            s.add_all([1, None])
    finally:
        backend.close()


def test_a_restored_list_is_read_from_rocksdb_not_assumed_empty():
    """A list that was written through before a snapshot and restored must be found by reads and cleared by
    clear(): the write-behind's knowledge of what RocksDB holds starts over after a restore."""
    old = new_backend("rocksdb")
    try:
        old.set_current_key("k")
        _state(old, TimeWindow(0, 10)).add_all([(1, "x"), (2, "y")])
        new = _restored(old, "rocksdb")
    finally:
        old.close()
    try:
        new.set_current_key("k")
        s = _state(new, TimeWindow(0, 10))
        s.add((3, "z"))
        assert s.get() == [(1, "x"), (2, "y"), (3, "z")]
        s.clear()
        assert s.get() == []
        assert new.keys("events", TimeWindow(0, 10)) == []
    finally:
        new.close()
