"""Keyed state backends: the interface, the choice by configuration, and the heap backend.

A backend owns the current key (set per record by the operator), creates state objects
from descriptors, and can list its entries by key group, which is how snapshots address
state so that it restores at another parallelism. `state.backend.type` chooses the heap
backend here (HASHMAP, the default: all keyed state of one subtask in dicts) or the
RocksDB backend (`rocksdb_backend`, state on local disk).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from strom.common import config_options as opts
from strom.common.config_options import ConfigError
from strom.common.key_groups import KeyGroupAssigner, KeyGroupRange
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from strom.runtime.state import heap_states as hs


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _describe(kind: str, ttl: bool) -> str:
    return f"{kind} (TTL)" if ttl else kind


class StateAccessError(RuntimeError):
    """State used where it is not allowed, or redeclared with another kind."""


class KeyedStateBackend(Protocol):
    """What operators, timers and snapshots use of a keyed state backend (heap or RocksDB).

    `current_key` is a plain attribute: operators set it per record without a call."""

    max_parallelism: int
    key_group_range: KeyGroupRange
    clock: Callable[[], int]
    operator_name: str
    operator_uid: str
    current_key: Any
    tables: dict[str, Any]  # state name -> table with `name`, `kind`, `ttl`

    def set_current_key(self, key: Any) -> None:
        """Make `key` the key that state accesses address."""

    def get_current_key(self) -> Any:
        """The key that state accesses address."""

    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The state object for a descriptor; the same object for the same name."""

    def create_namespaced_state(self, descriptor: StateDescriptor) -> Any:
        """A separate state object of the same state, for use with its own namespace."""

    def keys(self, state_name: str, namespace: Any = None) -> list[Any]:
        """The keys with an entry of the state in the namespace (a copy)."""

    def entries_by_key_group(self) -> dict[int, dict[str, list[tuple[Any, Any, Any]]]]:
        """{key_group: {state name: [(key, namespace, value), ...]}} for every entry."""

    def close(self) -> None:
        """Release what the backend holds (files, handles); idempotent."""


def create_keyed_state_backend(
    config: Any,
    *,
    max_parallelism: int,
    key_group_range: KeyGroupRange,
    clock: Callable[[], int] = wall_clock_ms,
    operator_name: str = "",
    operator_uid: str = "",
) -> KeyedStateBackend:
    """The backend `state.backend.type` names: HASHMAP (the heap) or ROCKSDB."""
    raw = config.get(opts.STATE_BACKEND.key) if config is not None else None
    kind = opts.STATE_BACKEND.default if raw is None else opts.STATE_BACKEND.parse(raw)
    if kind == "HASHMAP":
        return HeapKeyedStateBackend(
            max_parallelism=max_parallelism,
            key_group_range=key_group_range,
            clock=clock,
            operator_name=operator_name,
            operator_uid=operator_uid,
        )
    if kind == "ROCKSDB":
        from strom.runtime.state.rocksdb_options import rocksdb_settings

        settings = rocksdb_settings(config)
        try:
            from strom.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
        except ImportError as e:
            raise ConfigError(
                f"'{opts.STATE_BACKEND.key}: rocksdb' needs the rocksdict package ({e}); "
                "install it with pip install 'strom[rocksdb]'"
            ) from None
        return RocksDBKeyedStateBackend(
            max_parallelism=max_parallelism,
            key_group_range=key_group_range,
            clock=clock,
            operator_name=operator_name,
            operator_uid=operator_uid,
            local_dir=settings.local_dir or None,
            incremental=settings.incremental,
        )
    raise ConfigError(f"invalid value {raw!r} for '{opts.STATE_BACKEND.key}': expected hashmap or rocksdb")


class HeapKeyedStateBackend:
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
        self.tables: dict[str, hs.StateTable] = {}
        self._states: dict[str, Any] = {}
        self.key_groups = KeyGroupAssigner(max_parallelism)

    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    def current_key_group(self) -> int:
        return self.key_groups.key_group(self.current_key)

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
        """A separate state object over the same table, for use with its own namespace."""
        return self._create(descriptor, self._table_for(descriptor))

    def _table_for(self, descriptor: StateDescriptor) -> hs.StateTable:
        """The descriptor's table; a table restored from a snapshot must match its kind and TTL flag."""
        ttl = descriptor.ttl_config is not None and descriptor.ttl_config.is_enabled()
        table = self.tables.get(descriptor.name)
        if table is None:
            table = self.tables[descriptor.name] = hs.StateTable(descriptor.name, descriptor.kind, ttl)
        elif table.kind != descriptor.kind or table.ttl != ttl:
            raise StateAccessError(
                f"operator uid {self.operator_uid!r} ({self.operator_name!r}): state {descriptor.name!r} holds "
                f"{_describe(table.kind, table.ttl)} state but is declared as {_describe(descriptor.kind, ttl)} "
                "state; a state's kind and TTL setting cannot change for the same name (use a new state name)"
            )
        return table

    def _create(self, d: StateDescriptor, table: hs.StateTable) -> Any:
        ttl = d.ttl_config if d.ttl_config is not None and d.ttl_config.is_enabled() else None
        if isinstance(d, ValueStateDescriptor):
            return hs.TtlValueState(self, table, ttl) if ttl else hs.HeapValueState(self, table)
        if isinstance(d, ListStateDescriptor):
            return hs.TtlListState(self, table, ttl) if ttl else hs.HeapListState(self, table)
        if isinstance(d, MapStateDescriptor):
            return hs.TtlMapState(self, table, ttl) if ttl else hs.HeapMapState(self, table)
        if isinstance(d, ReducingStateDescriptor):
            fn = d.reduce_function.reduce
            return hs.TtlReducingState(self, table, ttl, fn) if ttl else hs.HeapReducingState(self, table, fn)
        if isinstance(d, AggregatingStateDescriptor):
            agg = d.agg_function
            return hs.TtlAggregatingState(self, table, ttl, agg) if ttl else hs.HeapAggregatingState(self, table, agg)
        raise StateAccessError(f"unsupported state descriptor {d!r}")

    # -- key groups -----------------------------------------------------------------------------
    def entries_by_key_group(self) -> dict[int, dict[str, list[tuple[Any, Any, Any]]]]:
        """{key_group: {state name: [(key, namespace, value), ...]}} for every entry."""
        out: dict[int, dict[str, list[tuple[Any, Any, Any]]]] = {}
        kg = self.key_groups.key_group
        for name, table in self.tables.items():
            for key, ns, value in table.entries():
                group = kg(key)
                if group not in self.key_group_range:
                    raise StateAccessError(
                        f"operator {self.operator_name!r}: key {key!r} of key group {group} is outside this "
                        f"subtask's range {self.key_group_range}"
                    )
                out.setdefault(group, {}).setdefault(name, []).append((key, ns, value))
        return out

    def keys(self, state_name: str, namespace: Any = hs.VOID) -> list[Any]:
        table = self.tables.get(state_name)
        if table is None:
            return []
        return list(table.maps.get(namespace, {}).keys())

    def num_entries(self) -> int:
        return sum(len(m) for t in self.tables.values() for m in t.maps.values())

    def close(self) -> None:
        """Nothing to release: the dicts go with the backend."""
