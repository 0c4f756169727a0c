"""The choice of keyed state backend by configuration: `state.backend.type` HASHMAP (heap, the default) or ROCKSDB.

The only module that knows both backends; RocksDB is imported only when chosen, so the engine runs
without the `rocksdb` extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strom.common import config_options as opts
from strom.common.config_options import ConfigError
from strom.common.key_groups import KeyGroupRange
from strom.runtime.state.api import KeyedStateBackend, wall_clock_ms
from strom.runtime.state.heap.backend import HeapKeyedStateBackend
from strom.runtime.state.heap.memory_guard import watch_heap_state


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
        from strom.runtime.state.rocksdb.options import rocksdb_settings

        settings = rocksdb_settings(config)
        try:
            from strom.runtime.state.rocksdb.backend import RocksDBKeyedStateBackend
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
            namespace_cache_entries=settings.namespace_cache_entries,
            tuning=settings.tuning,
            value_cache_bytes=settings.value_cache_bytes,
        )
    raise ConfigError(f"invalid value {raw!r} for '{opts.STATE_BACKEND.key}': expected hashmap or rocksdb")


def watch_memory(ctx: Any, backend: KeyedStateBackend) -> None:
    """Heap state is watched against its slot's share of the TaskManager's memory (`heap.memory_guard`): the task
    fails with a one-line error before the machine swaps. RocksDB state lives on disk and is not watched."""
    if isinstance(backend, HeapKeyedStateBackend):
        watch_heap_state(ctx, backend)
