"""Configuration of the RocksDB state backend, with Flink's keys and defaults.

RocksDB's own tuning (block cache, block size, write buffers, predefined options) follows Flink's
`state.backend.rocksdb.*` keys; as in Flink, an option set explicitly overrides the predefined
profile's value. Flink's default `state.backend.rocksdb.memory.managed` (memory from the
TaskManager's managed memory) has no counterpart: the sizes here are per subtask's database.

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
    1_000_000,
    "RocksDB (Strom): entries (open window panes, running values of a rolling reduce; roughly 100-200 bytes "
    "each) an operator subtask keeps in memory in front of RocksDB, written through before every snapshot: "
    "aligned windows with an incremental function and the rolling reduce run at heap speed while they fit; "
    "past the bound the oldest half is written through and evicted, and read back in one multi-get per batch "
    "when needed. 0 disables the cache.",
    minimum=0,
)
VALUE_CACHE_SIZE = option(
    "state.backend.rocksdb.value-cache.size",
    "memory",
    256 * 1024 * 1024,
    "RocksDB (Strom): memory an operator subtask may use to keep, per key of its value, reducing and aggregating "
    "states, the value last read or written as an object in front of RocksDB (writes held until the next snapshot), "
    "split evenly among those states; a state's bound in entries follows the measured size of its entries, and past "
    "it the held writes go to RocksDB in one write batch and its cache starts over. With RocksDB's own block cache "
    "and write buffers (8 MB + 2 x 64 MB) this stays within the 512 MB of managed memory Flink gives a slot's "
    "RocksDB by default. 0: every write goes to RocksDB at once.",
    minimum=0,
)


BLOCK_CACHE_SIZE = option(
    "state.backend.rocksdb.block.cache-size",
    "memory",
    8 * 1024 * 1024,
    "RocksDB: size of the block cache (uncompressed blocks read from SST files) of each subtask's database.",
    minimum=0,
)
BLOCK_SIZE = option(
    "state.backend.rocksdb.block.blocksize",
    "memory",
    4 * 1024,
    "RocksDB: approximate size of a data block in SST files (larger: fewer index entries, coarser reads).",
    minimum=1,
)
WRITE_BUFFER_SIZE = option(
    "state.backend.rocksdb.writebuffer.size",
    "memory",
    64 * 1024 * 1024,
    "RocksDB: size of a memtable before it is flushed to an SST file.",
    minimum=1,
)
WRITE_BUFFER_COUNT = option(
    "state.backend.rocksdb.writebuffer.count",
    "int",
    2,
    "RocksDB: most memtables in memory at once (the active one and those waiting to be flushed).",
    minimum=1,
)
USE_BLOOM_FILTER = option(
    "state.backend.rocksdb.use-bloom-filter",
    "bool",
    False,
    "RocksDB: a bloom filter (10 bits per key) in every SST file, so a read of a key the state does not hold "
    "skips the files instead of reading their blocks (a rolling reduce past its namespace cache, new keys).",
)
PREDEFINED_OPTIONS = option(
    "state.backend.rocksdb.predefined-options",
    "enum",
    "DEFAULT",
    "RocksDB: a profile of options, as Flink's PredefinedOptions: DEFAULT, SPINNING_DISK_OPTIMIZED, "
    "SPINNING_DISK_OPTIMIZED_HIGH_MEM or FLASH_SSD_OPTIMIZED; explicitly set options override the profile's.",
    allowed=("DEFAULT", "SPINNING_DISK_OPTIMIZED", "SPINNING_DISK_OPTIMIZED_HIGH_MEM", "FLASH_SSD_OPTIMIZED"),
)


@dataclass(frozen=True, slots=True)
class RocksDBTuning:
    """RocksDB's own options for a subtask's database (Flink's defaults unless configured)."""

    block_cache_size: int = BLOCK_CACHE_SIZE.default
    block_size: int = BLOCK_SIZE.default
    write_buffer_size: int = WRITE_BUFFER_SIZE.default
    write_buffer_count: int = WRITE_BUFFER_COUNT.default
    bloom_filter: bool = False
    background_threads: int = 0  # 0: RocksDB's default
    max_open_files: int = 0  # 0: RocksDB's default; -1: keep every file open


# what each predefined profile sets (a subset of Flink's PredefinedOptions that rocksdict exposes)
_PROFILES: dict[str, dict[str, Any]] = {
    "DEFAULT": {},
    "SPINNING_DISK_OPTIMIZED": {"background_threads": 4, "max_open_files": -1},
    "FLASH_SSD_OPTIMIZED": {"background_threads": 4, "max_open_files": -1},
    "SPINNING_DISK_OPTIMIZED_HIGH_MEM": {
        "background_threads": 4,
        "max_open_files": -1,
        "block_cache_size": 256 * 1024 * 1024,
        "block_size": 128 * 1024,
        "write_buffer_count": 4,
        "bloom_filter": True,
    },
}
_EXPLICIT: dict[str, ConfigOption[Any]] = {
    "block_cache_size": BLOCK_CACHE_SIZE,
    "block_size": BLOCK_SIZE,
    "write_buffer_size": WRITE_BUFFER_SIZE,
    "write_buffer_count": WRITE_BUFFER_COUNT,
    "bloom_filter": USE_BLOOM_FILTER,
}


def _is_set(config: Any, key: str) -> bool:
    """Configured explicitly (a Configuration answers every registered key with its default)."""
    if config is None:
        return False
    contains = getattr(config, "contains_key", None)
    return bool(contains(key)) if contains is not None else config.get(key) is not None


def rocksdb_tuning(config: Any) -> RocksDBTuning:
    """The predefined profile, then every explicitly configured option over it."""
    values: dict[str, Any] = dict(_PROFILES[str(read_option(config, PREDEFINED_OPTIONS))])
    for field, opt in _EXPLICIT.items():
        if _is_set(config, opt.key):
            value = read_option(config, opt)
            values[field] = value if isinstance(value, bool) else int(value)
    return RocksDBTuning(**values)


@dataclass(frozen=True, slots=True)
class RocksDBSettings:
    incremental: bool
    local_dir: str
    namespace_cache_entries: int = NAMESPACE_CACHE_ENTRIES.default
    tuning: RocksDBTuning = RocksDBTuning()
    value_cache_bytes: int = VALUE_CACHE_SIZE.default


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
        rocksdb_tuning(config),
        int(read_option(config, VALUE_CACHE_SIZE)),
    )
