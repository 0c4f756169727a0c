"""State backends (`pyflink.datastream.state_backend`): where a job's keyed state lives, as Flink's keys.

`env.set_state_backend(...)` writes the backend's keys into the job's configuration, and the
runtime builds each keyed operator's backend from them:
* `HashMapStateBackend()` -> `state.backend.type: hashmap` (state as Python objects in the heap).
* `EmbeddedRocksDBStateBackend(enable_incremental_checkpointing)` -> `state.backend.type: rocksdb`,
  `state.backend.incremental`; `set_db_storage_paths(path)` -> `state.backend.rocksdb.localdir`
  (each subtask's RocksDB directory is created under it). Needs `pip install 'strom[rocksdb]'`.
* The deprecated backends of Flink 1.12 keep their meaning as Flink's migration guide gives it:
  `MemoryStateBackend` = hashmap + JobManager checkpoint storage, `FsStateBackend(uri)` = hashmap +
  file checkpoint storage at `uri`, `RocksDBStateBackend(uri)` = rocksdb + file checkpoint storage.
RocksDB tuning that Flink passes to its JNI library (predefined options, options factories,
transfer threads) is accepted and read back; rocksdict's defaults apply, so it changes nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Any

from strom.datastream.checkpoint_storage import FileSystemCheckpointStorage, JobManagerCheckpointStorage

_TYPE = "state.backend.type"
_INCREMENTAL = "state.backend.incremental"
_LOCAL_DIR = "state.backend.rocksdb.localdir"
_SAVEPOINTS_DIR = "state.savepoints.dir"


class PredefinedOptions(Enum):
    """Flink's predefined RocksDB option sets (accepted; rocksdict's defaults apply in Strom)."""

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


class StateBackend(ABC):
    """Base of the state backends; `_apply` writes the backend's keys into a Configuration."""

    @abstractmethod
    def _apply(self, conf: Any) -> None:
        """Write this backend's keys (state.backend.type, ...) into `conf`."""


class HashMapStateBackend(StateBackend):
    """Working state as objects in the TaskManager's memory (Strom: the slot process's heap)."""

    def _apply(self, conf: Any) -> None:
        conf.set(_TYPE, "hashmap")

    def __repr__(self) -> str:
        return "HashMapStateBackend"


class _RocksDBSettings:
    """What both RocksDB backends configure."""

    def __init__(self, enable_incremental_checkpointing: bool | None) -> None:
        self._incremental = enable_incremental_checkpointing
        self._paths: list[str] = []
        self._predefined = PredefinedOptions.DEFAULT
        self._options_factory: str | None = None
        self._transfer_threads = 4

    def is_incremental_checkpoints_enabled(self) -> bool:
        return bool(self._incremental)

    def set_db_storage_paths(self, *paths: str) -> None:
        """Where RocksDB keeps its working files. Flink spreads subtasks over several paths; Strom takes one."""
        if len(paths) > 1:
            raise ValueError(
                f"set_db_storage_paths: Strom puts every subtask's RocksDB directory under one path, got {len(paths)} "
                f"({', '.join(paths)}); pass one"
            )
        self._paths = [p for p in paths if p]

    def get_db_storage_paths(self) -> list[str]:
        return list(self._paths)

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        if not isinstance(options, PredefinedOptions):
            raise TypeError(f"set_predefined_options expects a PredefinedOptions, got {options!r}")
        self._predefined = options

    def get_predefined_options(self) -> PredefinedOptions:
        return self._predefined

    def set_options(self, options_factory_class_name: str) -> None:
        self._options_factory = options_factory_class_name

    def get_options(self) -> str | None:
        return self._options_factory

    def set_number_of_transfer_threads(self, number_of_transfering_threads: int) -> None:
        self._transfer_threads = int(number_of_transfering_threads)

    def get_number_of_transfer_threads(self) -> int:
        return self._transfer_threads

    # the names of Flink < 1.13
    set_number_of_transfering_threads = set_number_of_transfer_threads
    get_number_of_transfering_threads = get_number_of_transfer_threads

    def _apply_rocksdb(self, conf: Any) -> None:
        conf.set(_TYPE, "rocksdb")
        if self._incremental is not None:
            conf.set(_INCREMENTAL, bool(self._incremental))
        if self._paths:
            conf.set(_LOCAL_DIR, self._paths[0])


class EmbeddedRocksDBStateBackend(_RocksDBSettings, StateBackend):
    """Working state in an embedded RocksDB per keyed operator subtask (Strom: through rocksdict)."""

    def __init__(self, enable_incremental_checkpointing: bool | None = None) -> None:
        super().__init__(enable_incremental_checkpointing)

    def _apply(self, conf: Any) -> None:
        self._apply_rocksdb(conf)

    def __repr__(self) -> str:
        return f"EmbeddedRocksDBStateBackend(incremental={self.is_incremental_checkpoints_enabled()})"


class MemoryStateBackend(StateBackend):
    """Deprecated in Flink: HashMapStateBackend with JobManagerCheckpointStorage."""

    DEFAULT_MAX_STATE_SIZE = JobManagerCheckpointStorage.DEFAULT_MAX_STATE_SIZE

    def __init__(
        self,
        checkpoint_path: str | None = None,
        savepoint_path: str | None = None,
        max_state_size: int | None = None,
        using_asynchronous_snapshots: bool | None = None,
    ) -> None:
        self._storage = JobManagerCheckpointStorage(checkpoint_path, max_state_size)
        self._savepoint_path = savepoint_path
        self._async = True if using_asynchronous_snapshots is None else bool(using_asynchronous_snapshots)

    def get_max_state_size(self) -> int:
        return self._storage.get_max_state_size()

    def is_using_asynchronous_snapshots(self) -> bool:
        return self._async

    def _apply(self, conf: Any) -> None:
        conf.set(_TYPE, "hashmap")
        self._storage._apply(conf)
        if self._savepoint_path:
            conf.set(_SAVEPOINTS_DIR, self._savepoint_path)

    def __repr__(self) -> str:
        return f"MemoryStateBackend (data in heap memory / checkpoints to JobManager) (maxStateSize: " \
               f"{self.get_max_state_size()})"


class FsStateBackend(StateBackend):
    """Deprecated in Flink: HashMapStateBackend with FileSystemCheckpointStorage(checkpoint_directory_uri)."""

    def __init__(
        self,
        checkpoint_directory_uri: str | None = None,
        default_savepoint_directory_uri: str | None = None,
        file_state_size_threshold: int | None = None,
        write_buffer_size: int | None = None,
        using_asynchronous_snapshots: bool | None = None,
    ) -> None:
        if not checkpoint_directory_uri:
            raise ValueError("FsStateBackend needs checkpoint_directory_uri (where checkpoints are written)")
        self._storage = FileSystemCheckpointStorage(
            checkpoint_directory_uri, file_state_size_threshold, -1 if write_buffer_size is None else write_buffer_size
        )
        self._savepoint_path = default_savepoint_directory_uri
        self._async = True if using_asynchronous_snapshots is None else bool(using_asynchronous_snapshots)

    def get_checkpoint_path(self) -> str:
        return self._storage.get_checkpoint_path()

    def get_min_file_size_threshold(self) -> int:
        return self._storage.get_min_file_size_threshold()

    def get_write_buffer_size(self) -> int:
        return self._storage.get_write_buffer_size()

    def is_using_asynchronous_snapshots(self) -> bool:
        return self._async

    def _apply(self, conf: Any) -> None:
        conf.set(_TYPE, "hashmap")
        self._storage._apply(conf)
        if self._savepoint_path:
            conf.set(_SAVEPOINTS_DIR, self._savepoint_path)

    def __repr__(self) -> str:
        return f"FsStateBackend (data in heap memory / checkpoints to {self.get_checkpoint_path()})"


class RocksDBStateBackend(_RocksDBSettings, StateBackend):
    """Deprecated in Flink: EmbeddedRocksDBStateBackend with FileSystemCheckpointStorage(checkpoint_data_uri)."""

    def __init__(
        self,
        checkpoint_data_uri: str | None = None,
        enable_incremental_checkpointing: bool | None = None,
        checkpoint_stream_backend: StateBackend | None = None,
    ) -> None:
        super().__init__(enable_incremental_checkpointing)
        if checkpoint_data_uri is None and isinstance(checkpoint_stream_backend, FsStateBackend):
            checkpoint_data_uri = checkpoint_stream_backend.get_checkpoint_path()
        if not checkpoint_data_uri:
            raise ValueError("RocksDBStateBackend needs checkpoint_data_uri (where checkpoints are written)")
        self._storage = FileSystemCheckpointStorage(checkpoint_data_uri)

    def get_checkpoint_backend(self) -> FsStateBackend:
        return FsStateBackend(self._storage.get_checkpoint_path())

    def _apply(self, conf: Any) -> None:
        self._apply_rocksdb(conf)
        self._storage._apply(conf)

    def __repr__(self) -> str:
        return f"RocksDBStateBackend (checkpoints to {self._storage.get_checkpoint_path()})"


class CustomStateBackend(StateBackend):
    """PyFlink wraps a Java StateBackend object here; Strom runs no JVM."""

    def __new__(cls, j_custom_state_backend: Any) -> CustomStateBackend:  # refused before the abstract check
        raise TypeError(
            "CustomStateBackend wraps a Java StateBackend, and Strom runs no JVM: use HashMapStateBackend() or "
            "EmbeddedRocksDBStateBackend()"
        )
