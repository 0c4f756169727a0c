"""The keyed state API: what operators, timers, snapshots and the TTL layer may rely on of any backend.

Nothing here knows a backend. `heap/` and `rocksdb/` implement `KeyedStateBackend`; `backends`
picks one by configuration; `ttl` wraps any backend's states; `restore` is the one restore path.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from strom.common.key_groups import KeyGroupRange
from strom.datastream.state import StateDescriptor, StateTtlConfig

VOID = None  # the namespace of state outside windows

# (key, namespace, value) of one stored entry in canonical form; TTL values are (value, last_access_ms)
Entry = tuple[Any, Any, Any]
Timer = tuple[int, Any, Any]  # (timestamp, key, namespace)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class StateAccessError(RuntimeError):
    """State used where it is not allowed, or redeclared with another kind."""


class StateRestoreError(StateAccessError):
    """A snapshot that cannot be restored into this operator: incompatible, mismatched or corrupt."""


def describe_state(kind: str, ttl: bool) -> str:
    return f"{kind} (TTL)" if ttl else kind


def ttl_config_of(descriptor: StateDescriptor) -> StateTtlConfig | None:
    """The descriptor's TTL configuration when TTL is enabled, else None."""
    ttl = descriptor.ttl_config
    return ttl if ttl is not None and ttl.is_enabled() else None


class StateTableInfo(Protocol):
    """What a backend knows of one declared state: name, kind and whether values are TTL-stamped.

    A snapshot records kind and TTL flag because a restore under another declaration would
    misread every value."""

    name: str
    kind: str  # value | list | map | reducing | aggregating
    ttl: bool

    def drop_namespace_if_empty(self, namespace: Any) -> None:
        """Forget the namespace's container once it holds nothing (a cleaned-up window)."""


class KeyedSnapshotPhase(Protocol):
    """The synchronous phase of a keyed snapshot (taken at the barrier): made durable later."""

    operator_uid: str
    max_parallelism: int
    key_group_range: KeyGroupRange

    def materialize(self, uploader: Any) -> Any:
        """The asynchronous phase: the snapshot as it is written to checkpoint storage."""


class TimerRegistry(Protocol):
    """What a restore needs of the timer service: register a timer for the backend's current key."""

    backend: Any

    def register_event_time_timer(self, namespace: Any, timestamp: int) -> None: ...

    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None: ...

    def timer_entries(self) -> tuple[list[Timer], list[Timer]]: ...


class KeyedStateBackend(Protocol):
    """What operators, timers and snapshots use of a keyed state backend (heap or RocksDB).

    `current_key` is a plain attribute: operators set it per record without a call."""

    max_parallelism: int
    key_group_range: KeyGroupRange
    clock: Callable[[], int]
    operator_name: str
    operator_uid: str
    current_key: Any
    tables: dict[str, Any]  # state name -> StateTableInfo

    def set_current_key(self, key: Any) -> None:
        """Make `key` the key that state accesses address."""

    def get_current_key(self) -> Any:
        """The key that state accesses address."""

    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The state object for a descriptor; the same object for the same name."""

    def create_namespaced_state(self, descriptor: StateDescriptor) -> Any:
        """A separate state object of the same state, for use with its own namespace."""

    def keys(self, state_name: str, namespace: Any = VOID) -> list[Any]:
        """The keys with an entry of the state in the namespace (a copy)."""

    def entries_by_key_group(self) -> dict[int, dict[str, list[Entry]]]:
        """{key_group: {state name: [(key, namespace, value), ...]}} for every entry."""

    def num_entries(self) -> int:
        """Entries counted one per (state, namespace, key)."""

    # -- TTL: how the backend finds expired entries in its own storage -------------------------------
    def ttl_cleanup_on_access(self, table: Any, ttl: StateTtlConfig, now: int) -> None:
        """Flink's incremental cleanup, run on a TTL state access: look at a few more entries of
        `table` and drop the expired ones (never the current key's: the access handles it)."""

    # -- snapshots and the one restore path (`restore.restore_keyed`) --------------------------------
    def snapshot(self, timer_service: TimerRegistry | None, *, operator_uid: str | None = None) -> Any:
        """The synchronous phase of a checkpoint: a `KeyedSnapshotPhase`."""

    def new_table(self, name: str, kind: str, ttl: bool) -> Any:
        """A table for a state declared by a snapshot."""

    def restore_native(self, snapshot: Any, *, whole: bool) -> tuple[list[Timer], list[Timer]] | None:
        """Take a snapshot of this backend's own format directly (e.g. RocksDB files), returning its
        timers; None when the snapshot must go through the canonical form instead. `whole`: it is the
        only snapshot and covers exactly this backend's key groups."""

    def write_key_group(self, key_group: int, entries: dict[str, list[Entry]], *, copy: bool) -> None:
        """Put canonical entries of one key group (of declared states); `copy`: values are shared with
        an in-memory snapshot and must not be stored as they are."""

    def close(self) -> None:
        """Release what the backend holds (files, handles); idempotent."""


@runtime_checkable
class InMemoryNamespaces(Protocol):
    """A state whose entries of one namespace are a live dict (the heap backend's states).

    Hot loops (the aligned-window fast path, the rolling reduce) read and write the dict
    directly, which is what keeps them as fast as a plain-Python loop; states of other
    backends do not offer it, and those callers go through the state API instead."""

    def namespace_map(self, namespace: Any) -> dict[Any, Any]:
        """key -> stored value of `namespace` (created empty when missing), live."""

    def namespace_maps(self) -> Sequence[tuple[Any, dict[Any, Any]]]:
        """(namespace, live map) of every namespace with a map."""


@runtime_checkable
class NamespaceCache(InMemoryNamespaces, Protocol):
    """Live dicts of one state's namespaces kept in memory in front of a backend that stores elsewhere
    (RocksDB), within a bound. The owner says what every batch touches (`fetch_missing` before it,
    `mark_written` and `trim` after it), so the cache may evict past its bound and read evicted entries
    back; the backend writes the marked entries through at every snapshot, so a snapshot sees every entry."""

    def over_limit(self) -> bool:
        """More entries in memory than the bound that the owner must handle (a cache that evicts: never)."""

    def tracking(self) -> bool:
        """Whether a batch must be told (`fetch_missing`, `mark_written`); False while every entry is in memory
        only (the owner may skip both; `trim` is still due after every batch)."""

    def fetch_missing(self, namespace: Any, keys: list[Any]) -> None:
        """Before a batch: bring the keys' entries that were evicted back into the namespace's dict (a key
        still missing after it has no value)."""

    def mark_written(self, namespace: Any, keys: list[Any]) -> None:
        """After a batch: these keys of `namespace` were written (the next write-through writes them, and only
        them)."""

    def trim(self) -> None:
        """After a batch's `mark_written` calls: past the bound, write through and evict (never before every
        written key is marked: an unmarked entry would be evicted unwritten)."""

    def namespace_entries(self, namespace: Any, *, keys: bool = True) -> Iterable[tuple[Any, Any]]:
        """(key, value) of every entry of `namespace`, the evicted ones too (a window that fires); `keys=False`:
        the caller reads the values only (a key may then be None)."""

    def close(self) -> None:
        """Write every entry through to the backend and stop caching; the dicts are no longer live."""


@runtime_checkable
class CachingNamespaces(Protocol):
    """A state that can put a bounded `NamespaceCache` in front of its storage (RocksDB)."""

    def open_namespace_cache(self, *, fetches: bool = False) -> NamespaceCache | None:
        """The cache, or None when this state or configuration does not allow one. `fetches`: the caller
        calls `fetch_missing`, `mark_written` and `trim` around every batch (a cache is offered only then)."""
