"""What every keyed state backend does alike: the current key, and descriptors -> tables -> state objects.

A backend subclass says how a table is made (`new_table`) and which state classes read and write
its storage (`state_class`); declaring a state, refusing a redeclaration with another kind or TTL
setting, and putting the one TTL layer (`ttl`) over a TTL descriptor's state happen here, once.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

from strom.common.key_groups import KeyGroupAssigner, KeyGroupRange
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from strom.runtime.state.api import StateAccessError, describe_state, ttl_config_of, wall_clock_ms
from strom.runtime.state.ttl import ttl_state

_KINDS: tuple[tuple[type[StateDescriptor], str], ...] = (
    (ValueStateDescriptor, "value"),
    (ListStateDescriptor, "list"),
    (MapStateDescriptor, "map"),
    (ReducingStateDescriptor, "reducing"),
    (AggregatingStateDescriptor, "aggregating"),
)


class AbstractKeyedStateBackend(abc.ABC):
    """The backend-independent half of a keyed state backend (Flink's AbstractKeyedStateBackend)."""

    def __init__(
        self,
        *,
        max_parallelism: int,
        key_group_range: KeyGroupRange,
        clock: Callable[[], int] = wall_clock_ms,
        operator_name: str = "",
        operator_uid: str = "",
    ) -> None:
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.clock = clock
        self.operator_name = operator_name
        self.operator_uid = operator_uid
        self.current_key: Any = None
        self.tables: dict[str, Any] = {}
        self._states: dict[str, Any] = {}
        self.key_groups = KeyGroupAssigner(max_parallelism)

    # -- what a backend supplies ------------------------------------------------------------------
    @abc.abstractmethod
    def new_table(self, name: str, kind: str, ttl: bool) -> Any:
        """A table (a `StateTableInfo`) for a newly declared state."""

    @abc.abstractmethod
    def state_class(self, kind: str) -> Any:
        """The class of this backend's states of `kind` (value, list, map, reducing, aggregating),
        constructed as cls(backend, table), or cls(backend, table, fn) for reducing and aggregating."""

    # -- the current key --------------------------------------------------------------------------
    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    def current_key_group(self) -> int:
        return self.key_groups.key_group(self.current_key)

    # -- states -----------------------------------------------------------------------------------
    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The state object for a descriptor; the same object for the same name."""
        existing = self._states.get(descriptor.name)
        if existing is not None:
            if self.tables[descriptor.name].kind != descriptor.kind:
                raise StateAccessError(
                    f"operator {self.operator_name!r}: state {descriptor.name!r} is already registered as "
                    f"{self.tables[descriptor.name].kind} state, not {descriptor.kind}"
                )
            return existing
        state = self._create(descriptor, self._table_for(descriptor))
        self._states[descriptor.name] = state
        return state

    def create_namespaced_state(self, descriptor: StateDescriptor) -> Any:
        """A separate state object of the same state, for use with its own namespace."""
        return self._create(descriptor, self._table_for(descriptor))

    def _table_for(self, descriptor: StateDescriptor) -> Any:
        """The descriptor's table; a table restored from a snapshot must match its kind and TTL flag."""
        ttl = ttl_config_of(descriptor) is not None
        table = self.tables.get(descriptor.name)
        if table is None:
            table = self.tables[descriptor.name] = self.new_table(descriptor.name, descriptor.kind, ttl)
        elif table.kind != descriptor.kind or table.ttl != ttl:
            raise StateAccessError(
                f"operator uid {self.operator_uid!r} ({self.operator_name!r}): state {descriptor.name!r} holds "
                f"{describe_state(table.kind, table.ttl)} state but is declared as "
                f"{describe_state(descriptor.kind, ttl)} state; a state's kind and TTL setting cannot change for "
                "the same name (use a new state name)"
            )
        return table

    def _create(self, d: StateDescriptor, table: Any) -> Any:
        kind = next((k for cls, k in _KINDS if isinstance(d, cls)), None)
        if kind is None:
            raise StateAccessError(f"unsupported state descriptor {d!r}")
        ttl = ttl_config_of(d)
        if ttl is not None:
            # TTL values are stored stamped, (value, last_access_ms): a reducing or aggregating state's
            # stamped accumulator is one value, so a value state of the same table stores it
            stored = "value" if kind in ("reducing", "aggregating") else kind
            return ttl_state(d, self, table, self.state_class(stored)(self, table), ttl)
        cls = self.state_class(kind)
        if isinstance(d, ReducingStateDescriptor):
            return cls(self, table, d.reduce_function.reduce)
        if isinstance(d, AggregatingStateDescriptor):
            return cls(self, table, d.agg_function)
        return cls(self, table)
