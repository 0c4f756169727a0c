"""Operator (non-keyed) state: list state with even-split or union redistribution, and
broadcast state. Held per subtask; snapshots (fault-tolerance issue) record the mode
so a restore at another parallelism redistributes correctly."""

from __future__ import annotations

from typing import Any

from strom.datastream.state import (
    BroadcastState,
    ListState,
    ListStateDescriptor,
    MapStateDescriptor,
    OperatorStateStore,
)

SPLIT_DISTRIBUTE = "SPLIT_DISTRIBUTE"
UNION = "UNION"
BROADCAST = "BROADCAST"


class OperatorListState(ListState[Any]):
    def __init__(self, name: str, mode: str) -> None:
        self.name = name
        self.mode = mode
        self.values: list[Any] = []

    def get(self) -> list[Any]:
        return list(self.values)

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError(f"operator list state {self.name!r}: cannot add None")
        self.values.append(value)

    def add_all(self, values: list[Any]) -> None:
        for v in values:
            self.add(v)

    def update(self, values: list[Any]) -> None:
        self.values = list(values or [])

    def clear(self) -> None:
        self.values = []


class HeapBroadcastState(BroadcastState[Any, Any]):
    def __init__(self, name: str) -> None:
        self.name = name
        self.map: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return self.map.get(key)

    def contains(self, key: Any) -> bool:
        return key in self.map

    def items(self) -> list[tuple[Any, Any]]:
        return list(self.map.items())

    def keys(self) -> list[Any]:
        return list(self.map.keys())

    def values(self) -> list[Any]:
        return list(self.map.values())

    def is_empty(self) -> bool:
        return not self.map

    def put(self, key: Any, value: Any) -> None:
        self.map[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self.map.update(dict_value)

    def remove(self, key: Any) -> None:
        self.map.pop(key, None)

    def clear(self) -> None:
        self.map.clear()


class ReadOnlyView(BroadcastState[Any, Any]):
    """Broadcast state as the non-broadcast side sees it: writes are errors."""

    def __init__(self, state: HeapBroadcastState) -> None:
        self._s = state

    def get(self, key: Any) -> Any:
        return self._s.get(key)

    def contains(self, key: Any) -> bool:
        return self._s.contains(key)

    def items(self) -> list[tuple[Any, Any]]:
        return self._s.items()

    def keys(self) -> list[Any]:
        return self._s.keys()

    def values(self) -> list[Any]:
        return self._s.values()

    def is_empty(self) -> bool:
        return self._s.is_empty()

    def _ro(self, *_: Any) -> None:
        raise TypeError(
            f"broadcast state {self._s.name!r} is read-only in process_element; modify it in process_broadcast_element"
        )

    put = put_all = remove = clear = _ro  # type: ignore[assignment]


class DefaultOperatorStateStore(OperatorStateStore):
    def __init__(self, restored: dict[str, tuple[str, Any]] | None = None) -> None:
        self.list_states: dict[str, OperatorListState] = {}
        self.broadcast_states: dict[str, HeapBroadcastState] = {}
        self._restored = restored or {}

    @property
    def restored(self) -> dict[str, tuple[str, Any]]:
        """The state this store was restored with (name -> (mode, values)), registered since or not."""
        return self._restored

    @property
    def is_restored(self) -> bool:
        return bool(self._restored)

    def _list(self, d: ListStateDescriptor, mode: str) -> OperatorListState:
        s = self.list_states.get(d.name)
        if s is None:
            s = self.list_states[d.name] = OperatorListState(d.name, mode)
            if d.name in self._restored:
                s.values = list(self._restored[d.name][1])
        elif s.mode != mode:
            raise TypeError(f"operator state {d.name!r} was registered with mode {s.mode}, not {mode}")
        return s

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState[Any]:
        return self._list(state_descriptor, SPLIT_DISTRIBUTE)

    def get_union_list_state(self, state_descriptor: ListStateDescriptor) -> ListState[Any]:
        return self._list(state_descriptor, UNION)

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> HeapBroadcastState:
        s = self.broadcast_states.get(state_descriptor.name)
        if s is None:
            s = self.broadcast_states[state_descriptor.name] = HeapBroadcastState(state_descriptor.name)
            if state_descriptor.name in self._restored:
                s.map = dict(self._restored[state_descriptor.name][1])
        return s

    def snapshot(self) -> dict[str, tuple[str, Any]]:
        out: dict[str, tuple[str, Any]] = {n: (s.mode, list(s.values)) for n, s in self.list_states.items()}
        out.update({n: (BROADCAST, dict(s.map)) for n, s in self.broadcast_states.items()})
        return out


def redistribute(snapshots: list[dict[str, tuple[str, Any]]], new_parallelism: int) -> list[dict[str, tuple[str, Any]]]:
    """Operator state of all old subtasks -> state per new subtask, by each state's mode."""
    out: list[dict[str, tuple[str, Any]]] = [{} for _ in range(new_parallelism)]
    names = {n for snap in snapshots for n in snap}
    for name in sorted(names):
        parts = [snap[name] for snap in snapshots if name in snap]
        mode = parts[0][0]
        if mode == SPLIT_DISTRIBUTE:
            items = [v for _, vs in parts for v in vs]
            for i in range(new_parallelism):
                out[i][name] = (
                    mode,
                    items[i * len(items) // new_parallelism : (i + 1) * len(items) // new_parallelism],
                )
        elif mode == UNION:
            items = [v for _, vs in parts for v in vs]
            for i in range(new_parallelism):
                out[i][name] = (mode, list(items))
        else:  # broadcast: every subtask holds the same map; take the first
            for i in range(new_parallelism):
                out[i][name] = (mode, dict(parts[0][1]))
    return out
