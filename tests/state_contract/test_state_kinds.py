"""Contract: every state kind reads what was written, per key and namespace, on every backend.

Random operations on every kind are checked against a plain-Python model (dicts per
(namespace, key)): the model is the reference, never a backend's earlier output.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from strom.datastream import AggregateFunction
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from strom.datastream.window import TimeWindow
from strom.runtime.state.api import VOID, StateAccessError

from tests.state_contract.conftest import MakeBackend

KEYS = ["a", "b", 7, (1, "x"), 3.5]
NAMESPACES = [VOID, TimeWindow(0, 10), TimeWindow(10, 20)]


class Average(AggregateFunction):
    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, acc: list[int]) -> list[int]:
        return [acc[0] + value, acc[1] + 1]

    def get_result(self, acc: list[int]) -> float:
        return acc[0] / acc[1]

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0], a[1] + b[1]]


def _states(backend: Any) -> dict[str, Any]:
    """One namespaced state object per kind (namespaces are set per operation)."""
    return {
        "value": backend.create_namespaced_state(ValueStateDescriptor("value")),
        "list": backend.create_namespaced_state(ListStateDescriptor("list")),
        "map": backend.create_namespaced_state(MapStateDescriptor("map")),
        "reducing": backend.create_namespaced_state(ReducingStateDescriptor("reducing", lambda a, b: a + b)),
        "aggregating": backend.create_namespaced_state(AggregatingStateDescriptor("aggregating", Average())),
    }


def _step(rnd: random.Random, kind: str, state: Any, model: dict[Any, Any], at: Any) -> None:
    """One random operation on `state` and the model; checks what the operation reads."""
    n = rnd.randrange(100)
    op = rnd.randrange(4)
    if kind == "value":
        if op == 0:
            state.clear()
            model.pop(at, None)
        elif op == 1:
            state.update(None)  # updating to None clears, as in Flink
            model.pop(at, None)
        else:
            state.update(n)
            model[at] = n
        assert state.value() == model.get(at)
    elif kind == "list":
        if op == 0:
            state.clear()
            model.pop(at, None)
        elif op == 1:
            state.add_all([n, n + 1])
            model.setdefault(at, []).extend([n, n + 1])
        elif op == 2:
            state.update([n])
            model[at] = [n]
        else:
            state.add(n)
            model.setdefault(at, []).append(n)
        assert list(state.get()) == model.get(at, [])
    elif kind == "map":
        m = model.setdefault(at, {})
        uk = rnd.choice(["x", "y", "z", 1])
        if op == 0:
            state.remove(uk)
            m.pop(uk, None)
        elif op == 1:
            state.put_all({uk: n, "w": n + 1})
            m.update({uk: n, "w": n + 1})
        elif op == 2:
            state.clear()
            m.clear()
        else:
            state.put(uk, n)
            m[uk] = n
        assert state.get(uk) == m.get(uk)
        assert state.contains(uk) == (uk in m)
        assert sorted(state.items(), key=repr) == sorted(m.items(), key=repr)
        assert sorted(state.keys(), key=repr) == sorted(m, key=repr)
        assert sorted(state.values()) == sorted(m.values())
        assert state.is_empty() == (not m)
        if not m:
            del model[at]
    elif kind == "reducing":
        if op == 0:
            state.clear()
            model.pop(at, None)
        else:
            state.add(n)
            model[at] = model.get(at, 0) + n
        assert state.get() == model.get(at)
    else:
        if op == 0:
            state.clear()
            model.pop(at, None)
        else:
            state.add(n)
            total, count = model.get(at, (0, 0))
            model[at] = (total + n, count + 1)
        expected = model.get(at)
        assert state.get() == (None if expected is None else expected[0] / expected[1])


@pytest.mark.parametrize("kind", ["value", "list", "map", "reducing", "aggregating"])
def test_every_state_kind_follows_a_plain_python_model_per_key_and_namespace(make_backend: MakeBackend, kind: str):
    backend = make_backend()
    state = _states(backend)[kind]
    model: dict[Any, Any] = {}
    rnd = random.Random(17)
    for _ in range(600):
        key, ns = rnd.choice(KEYS), rnd.choice(NAMESPACES)
        backend.set_current_key(key)
        state.set_current_namespace(ns)
        _step(rnd, kind, state, model, (ns, key))
    # every (namespace, key) the model holds, and no other, is listed by the backend
    for ns in NAMESPACES:
        listed = backend.keys(kind, ns)
        assert sorted(listed, key=repr) == sorted((k for n, k in model if n == ns), key=repr)
    assert backend.num_entries() == len(model)


def test_states_of_different_names_and_keys_do_not_see_each_other(make_backend: MakeBackend):
    backend = make_backend()
    first = backend.get_state(ValueStateDescriptor("first"))
    second = backend.get_state(ValueStateDescriptor("second"))
    backend.set_current_key("a")
    first.update(1)
    backend.set_current_key("b")
    assert first.value() is None and second.value() is None
    second.update(2)
    backend.set_current_key("a")
    assert (first.value(), second.value()) == (1, None)
    assert backend.get_current_key() == "a"


def test_get_state_returns_the_same_object_for_the_same_name(make_backend: MakeBackend):
    backend = make_backend()
    assert backend.get_state(ListStateDescriptor("l")) is backend.get_state(ListStateDescriptor("l"))


def test_a_list_state_refuses_none(make_backend: MakeBackend):
    backend = make_backend()
    backend.set_current_key("a")
    with pytest.raises(ValueError, match="list state 'l': cannot add None"):
        backend.get_state(ListStateDescriptor("l")).add(None)


def test_a_ttl_list_state_refuses_none(make_backend: MakeBackend):
    d = ListStateDescriptor("l")
    d.enable_time_to_live(StateTtlConfig.new_builder(100).build())
    backend = make_backend()
    backend.set_current_key("a")
    with pytest.raises(ValueError, match="list state 'l': cannot add None"):
        backend.get_state(d).add(None)


def test_a_state_redeclared_as_another_kind_is_refused_naming_it(make_backend: MakeBackend):
    backend = make_backend()
    backend.get_state(ValueStateDescriptor("s"))
    with pytest.raises(StateAccessError, match="'s' is already registered as value state, not list"):
        backend.get_state(ListStateDescriptor("s"))
    with pytest.raises(StateAccessError, match="'s' holds value state but is declared as list state"):
        backend.create_namespaced_state(ListStateDescriptor("s"))


def test_a_state_redeclared_with_ttl_is_refused_naming_it(make_backend: MakeBackend):
    backend = make_backend()
    backend.get_state(ValueStateDescriptor("s"))
    d = ValueStateDescriptor("s")
    d.enable_time_to_live(StateTtlConfig.new_builder(100).build())
    with pytest.raises(StateAccessError, match=r"'s' holds value state but is declared as value \(TTL\) state"):
        backend.create_namespaced_state(d)


def test_merging_namespaces_moves_list_reducing_and_aggregating_values_into_the_target(make_backend: MakeBackend):
    """Merging windows: the values of the source namespaces end in the target, the sources empty."""
    backend = make_backend()
    states = _states(backend)
    w1, w2, target = TimeWindow(0, 5), TimeWindow(3, 8), TimeWindow(0, 8)
    backend.set_current_key("k")
    for ns, n in ((w1, 1), (w2, 2), (target, 4)):
        for kind in ("list", "reducing", "aggregating"):
            states[kind].set_current_namespace(ns)
            states[kind].add(n)
    for kind in ("list", "reducing", "aggregating"):
        states[kind].merge_namespaces(target, [w1, w2])
        states[kind].set_current_namespace(target)
    assert sorted(states["list"].get()) == [1, 2, 4]
    assert states["reducing"].get() == 7
    assert states["aggregating"].get() == 7 / 3
    for ns in (w1, w2):
        assert backend.keys("list", ns) == [] and backend.keys("reducing", ns) == []
