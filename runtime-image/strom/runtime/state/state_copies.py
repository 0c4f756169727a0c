"""Copies of state values that later processing cannot change: the consistency of a snapshot.

A checkpoint copies state in its synchronous phase and serializes the copy while the task
keeps processing. The heap state objects mutate some values in place (a list state's list,
a map state's dict) and user functions often do too (an aggregate function that updates
its accumulator and returns it). So a copy shares a value only when it is immutable
(numbers, strings, bytes, None, and tuples/frozensets of those: the common case, also for
TTL-stamped `(value, ts)` entries) and deep-copies anything else.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

_ATOMIC = frozenset({int, float, str, bytes, bool, complex, type(None)})
_is_atomic_type = _ATOMIC.__contains__


def _is_flat(values: Any) -> bool:
    """All items of atomic types; map() keeps the loop in C, which matters at millions of entries."""
    return all(map(_is_atomic_type, map(type, values)))


def is_immutable(value: Any) -> bool:
    """Whether no one can change `value` in place (exact built-in immutable types only)."""
    t = type(value)
    if t in _ATOMIC:
        return True
    if t is tuple or t is frozenset:
        return all(is_immutable(v) for v in value)
    return False


def frozen_copy(value: Any) -> Any:
    """`value` itself when immutable, else a deep copy."""
    t = type(value)
    if t in _ATOMIC:
        return value
    if t is tuple and _is_flat(value):
        return value  # the frequent TTL entry (value, ts) and flat tuple keys: no recursion
    return value if is_immutable(value) else copy.deepcopy(value)


def _copy_list(values: list[Any]) -> list[Any]:
    if _is_flat(values):
        return values.copy()
    return [frozen_copy(v) for v in values]


def _copy_map(entries: dict[Any, Any]) -> dict[Any, Any]:
    if _is_flat(entries.values()):
        return entries.copy()
    return {k: frozen_copy(v) for k, v in entries.items()}


def copier_for(kind: str) -> Callable[[Any], Any]:
    """How to copy one stored value of a state table of `kind`.

    A list state stores a list and a map state a dict, which the state objects append to and
    update in place: those containers are always copied (their elements only when mutable)."""
    if kind == "list":
        return _copy_list
    if kind == "map":
        return _copy_map
    return frozen_copy
