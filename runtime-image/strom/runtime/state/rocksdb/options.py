"""Configuration of the RocksDB state backend, with Flink's keys and defaults.

Registered in the option registry at import; a configuration built earlier keeps `state.*`
values unparsed (the registry passes that namespace through), so they are parsed on reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strom.common.config_options import ConfigError, ConfigOption, option

INCREMENTAL = option(
    "state.backend.incremental",
    "bool",
    False,
    "RocksDB: checkpoints upload only the SST files that are new since the last checkpoint.",
)
LOCAL_DIR = option(
    "state.backend.rocksdb.localdir",
    "str",
    "",
    "RocksDB: directory of the subtasks' working directories; empty = the system's temporary directory.",
)
TIMER_SERVICE_FACTORY = option(
    "state.backend.rocksdb.timer-service.factory",
    "enum",
    "HEAP",
    "RocksDB: where timers live. Strom keeps them in the heap (Flink's HEAP) and snapshots them with the state.",
    allowed=("HEAP", "ROCKSDB"),
)
NAMESPACE_CACHE_ENTRIES = option(
    "state.backend.rocksdb.namespace-cache.max-entries",
    "int",
    100_000,
    "RocksDB (Strom): entries of a window operator's open panes kept in memory in front of RocksDB and written "
    "through at every checkpoint (aligned windows with an incremental function run at heap speed while they "
    "fit); past the bound the operator goes on per record through RocksDB. 0 disables the cache.",
    minimum=0,
)


@dataclass(frozen=True, slots=True)
class RocksDBSettings:
    incremental: bool
    local_dir: str
    namespace_cache_entries: int = NAMESPACE_CACHE_ENTRIES.default


def read_option(config: Any, opt: ConfigOption[Any]) -> Any:
    raw = config.get(opt.key) if config is not None else None
    return opt.default if raw is None else opt.parse(raw)


def rocksdb_settings(config: Any) -> RocksDBSettings:
    if read_option(config, TIMER_SERVICE_FACTORY) != "HEAP":
        raise ConfigError(
            f"invalid value 'ROCKSDB' for {TIMER_SERVICE_FACTORY.key!r}: Strom keeps timers in the heap and "
            "snapshots them with the RocksDB state; expected HEAP"
        )
    return RocksDBSettings(
        bool(read_option(config, INCREMENTAL)),
        str(read_option(config, LOCAL_DIR)),
        int(read_option(config, NAMESPACE_CACHE_ENTRIES)),
    )
