"""State descriptors and state interfaces (`pyflink.datastream.state`).

A descriptor names a piece of state and how to build it; the runtime hands back the
matching state object, scoped to the current key (and window, for window state).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from enum import Enum
from typing import Any, Generic, TypeVar

from strom.common.time import Duration, to_millis
from strom.common.typeinfo import TypeInformation


# -- TTL -----------------------------------------------------------------------------------------
class StateTtlConfig:
    """Time-to-live of keyed state entries (processing time, as in Flink)."""

    class UpdateType(Enum):
        Disabled = 0
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(Enum):
        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(Enum):
        ProcessingTime = 0

    def __init__(
        self,
        *,
        ttl_ms: int,
        update_type: StateTtlConfig.UpdateType,
        state_visibility: StateTtlConfig.StateVisibility,
        cleanup_full_snapshot: bool,
        incremental_cleanup_size: int,
        run_cleanup_for_every_record: bool,
        background_cleanup: bool,
    ) -> None:
        self.ttl_ms = ttl_ms
        self.update_type = update_type
        self.state_visibility = state_visibility
        self.cleanup_full_snapshot = cleanup_full_snapshot
        self.incremental_cleanup_size = incremental_cleanup_size
        self.run_cleanup_for_every_record = run_cleanup_for_every_record
        self.background_cleanup = background_cleanup

    def get_ttl(self) -> Duration:
        return Duration(self.ttl_ms)

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        return self.update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        return self.state_visibility

    def is_enabled(self) -> bool:
        return self.update_type != StateTtlConfig.UpdateType.Disabled

    @staticmethod
    def new_builder(ttl: Duration | int) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    class Builder:
        def __init__(self, ttl: Duration | int) -> None:
            self._ttl_ms = to_millis(ttl, what="ttl")
            if self._ttl_ms <= 0:
                raise ValueError(f"invalid ttl {self._ttl_ms} ms: expected a positive duration")
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._full_snapshot = False
            self._incremental_size = 5
            self._every_record = False
            self._background = True

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(self, visibility: StateTtlConfig.StateVisibility) -> StateTtlConfig.Builder:
            self._visibility = visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(self, characteristic: Any) -> StateTtlConfig.Builder:
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            self._full_snapshot = True
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool
        ) -> StateTtlConfig.Builder:
            self._incremental_size = cleanup_size
            self._every_record = run_cleanup_for_every_record
            return self

        def cleanup_in_rocksdb_compact_filter(self, query_time_after_num_entries: int) -> StateTtlConfig.Builder:
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            self._background = False
            return self

        def set_ttl(self, ttl: Duration | int) -> StateTtlConfig.Builder:
            self._ttl_ms = to_millis(ttl, what="ttl")
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(
                ttl_ms=self._ttl_ms,
                update_type=self._update_type,
                state_visibility=self._visibility,
                cleanup_full_snapshot=self._full_snapshot,
                incremental_cleanup_size=self._incremental_size,
                run_cleanup_for_every_record=self._every_record,
                background_cleanup=self._background,
            )


# -- descriptors ---------------------------------------------------------------------------------
class StateDescriptor:
    kind = "state"

    def __init__(self, name: str, type_info: TypeInformation | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a state descriptor needs a non-empty name")
        self.name = name
        self.type_info = type_info
        self.ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        self.ttl_config = ttl_config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    kind = "value"

    def __init__(self, name: str, value_type_info: TypeInformation | None = None) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    kind = "list"

    def __init__(self, name: str, elem_type_info: TypeInformation | None = None) -> None:
        super().__init__(name, elem_type_info)


class MapStateDescriptor(StateDescriptor):
    kind = "map"

    def __init__(
        self, name: str, key_type_info: TypeInformation | None = None, value_type_info: TypeInformation | None = None
    ) -> None:
        super().__init__(name, value_type_info)
        self.key_type_info = key_type_info


class ReducingStateDescriptor(StateDescriptor):
    kind = "reducing"

    def __init__(self, name: str, reduce_function: Any, type_info: TypeInformation | None = None) -> None:
        super().__init__(name, type_info)
        from strom.datastream.functions import as_reduce_function

        self.reduce_function = as_reduce_function(reduce_function)


class AggregatingStateDescriptor(StateDescriptor):
    kind = "aggregating"

    def __init__(self, name: str, agg_function: Any, state_type_info: TypeInformation | None = None) -> None:
        super().__init__(name, state_type_info)
        self.agg_function = agg_function


# -- state interfaces ----------------------------------------------------------------------------
# Generic as in PyFlink, so `ValueState[int]` and `MapState[str, int]` annotations work.
T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")


class State(ABC):
    @abstractmethod
    def clear(self) -> None:
        """Remove the value of the current key (and namespace)."""


class ValueState(State, Generic[T]):
    @abstractmethod
    def value(self) -> Any:
        """Current value or None."""

    @abstractmethod
    def update(self, value: Any) -> None:
        """Set the value."""


class AppendingState(State, Generic[IN, OUT]):
    @abstractmethod
    def get(self) -> Any:
        """Current value."""

    @abstractmethod
    def add(self, value: Any) -> None:
        """Add a value."""


class MergingState(AppendingState[IN, OUT]):
    pass


class ListState(MergingState[T, Iterable[T]]):
    @abstractmethod
    def get(self) -> Iterable[Any]:
        """The list (empty when unset)."""

    @abstractmethod
    def add_all(self, values: list[Any]) -> None:
        """Append values."""

    @abstractmethod
    def update(self, values: list[Any]) -> None:
        """Replace the list."""


class ReducingState(MergingState[T, T]):
    pass


class AggregatingState(MergingState[IN, OUT]):
    pass


class MapState(State, Generic[K, V]):
    @abstractmethod
    def get(self, key: Any) -> Any:
        """Value for key, or None."""

    @abstractmethod
    def put(self, key: Any, value: Any) -> None:
        """Set key to value."""

    @abstractmethod
    def put_all(self, dict_value: dict[Any, Any]) -> None:
        """Set several keys."""

    @abstractmethod
    def remove(self, key: Any) -> None:
        """Delete key."""

    @abstractmethod
    def contains(self, key: Any) -> bool:
        """Is key present."""

    @abstractmethod
    def items(self) -> Iterable[tuple[Any, Any]]:
        """(key, value) pairs."""

    @abstractmethod
    def keys(self) -> Iterable[Any]:
        """Keys."""

    @abstractmethod
    def values(self) -> Iterable[Any]:
        """Values."""

    @abstractmethod
    def is_empty(self) -> bool:
        """No entries."""

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())


class ReadOnlyBroadcastState(ABC, Generic[K, V]):
    @abstractmethod
    def get(self, key: Any) -> Any:
        """Value for key, or None."""

    @abstractmethod
    def contains(self, key: Any) -> bool:
        """Is key present."""

    @abstractmethod
    def items(self) -> Iterable[tuple[Any, Any]]:
        """(key, value) pairs."""

    @abstractmethod
    def keys(self) -> Iterable[Any]:
        """Keys."""

    @abstractmethod
    def values(self) -> Iterable[Any]:
        """Values."""

    @abstractmethod
    def is_empty(self) -> bool:
        """No entries."""


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    @abstractmethod
    def put(self, key: Any, value: Any) -> None:
        """Set key to value."""

    @abstractmethod
    def put_all(self, dict_value: dict[Any, Any]) -> None:
        """Set several keys."""

    @abstractmethod
    def remove(self, key: Any) -> None:
        """Delete key."""

    @abstractmethod
    def clear(self) -> None:
        """Remove all entries."""


class OperatorStateStore(ABC):
    @abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        """Even-split redistributed list state."""

    @abstractmethod
    def get_union_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        """Union redistributed list state."""

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
        """Broadcast state."""
