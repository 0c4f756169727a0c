"""Checkpoint storage (`pyflink.datastream.checkpoint_storage`): where checkpoints go, as Flink's keys.

Strom has the two storages Flink has, chosen by the job's configuration:
* `JobManagerCheckpointStorage()` -> `state.checkpoint-storage: jobmanager` and no
  `state.checkpoints.dir`: a local job keeps its checkpoints in a private temporary directory
  (gone with the job); on a cluster the tasks ship their state to the JobManager, which stages it
  in memory for savepoints (periodic checkpoints on a cluster need a directory, as a JobManager's
  memory survives no failover; the job is refused naming the key). With `checkpoint_path`, Flink
  writes the checkpoint metadata there; Strom writes the whole checkpoint there (state included).
* `FileSystemCheckpointStorage(path)` -> `state.checkpoint-storage: filesystem` and
  `state.checkpoints.dir: path` (`file://`, a plain path, or `s3://bucket/prefix`).
Size thresholds and write buffers of Flink's stream factories are accepted and read back; Strom
writes one file per subtask and state, so they change nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

_STORAGE = "state.checkpoint-storage"
_CHECKPOINTS_DIR = "state.checkpoints.dir"
_SAVEPOINTS_DIR = "state.savepoints.dir"


class CheckpointStorage(ABC):
    """Base of the checkpoint storages; `_apply` writes the storage's keys into a Configuration."""

    @abstractmethod
    def _apply(self, conf: Any) -> None:
        """Write this storage's keys (state.checkpoint-storage, state.checkpoints.dir) into `conf`."""


class JobManagerCheckpointStorage(CheckpointStorage):
    # PyFlink: "The default maximal size that the snapshotted memory state may have (5 MiBytes)."
    DEFAULT_MAX_STATE_SIZE = 5 * 1024 * 1024

    def __init__(self, checkpoint_path: str | None = None, max_state_size: int | None = None) -> None:
        if max_state_size is not None and (not isinstance(max_state_size, int) or max_state_size <= 0):
            raise ValueError(f"max_state_size must be a positive number of bytes, got {max_state_size!r}")
        self._path = checkpoint_path
        self._max_state_size = max_state_size or self.DEFAULT_MAX_STATE_SIZE

    def get_checkpoint_path(self) -> str | None:
        return self._path

    def get_max_state_size(self) -> int:
        return self._max_state_size

    def _apply(self, conf: Any) -> None:
        conf.set(_STORAGE, "jobmanager")
        conf.set(_CHECKPOINTS_DIR, self._path or "")

    def __repr__(self) -> str:
        return f"JobManagerCheckpointStorage (checkpoints to JobManager) (maxStateSize: {self._max_state_size})"


class FileSystemCheckpointStorage(CheckpointStorage):
    # PyFlink: "Maximum size of state that is stored with the metadata, rather than in files (1 MiByte)."
    MAX_FILE_STATE_THRESHOLD = 1024 * 1024

    def __init__(
        self, checkpoint_path: str, file_state_size_threshold: int | None = None, write_buffer_size: int = -1
    ) -> None:
        if not checkpoint_path or not isinstance(checkpoint_path, str):
            raise ValueError(f"FileSystemCheckpointStorage needs a checkpoint path (a URI), got {checkpoint_path!r}")
        threshold = 20 * 1024 if file_state_size_threshold is None else file_state_size_threshold
        if not 0 <= threshold <= self.MAX_FILE_STATE_THRESHOLD:
            raise ValueError(
                f"file_state_size_threshold must be in [0, {self.MAX_FILE_STATE_THRESHOLD}], got {threshold!r}"
            )
        self._path = checkpoint_path
        self._threshold = threshold
        self._write_buffer_size = write_buffer_size

    def get_checkpoint_path(self) -> str:
        return self._path

    def get_savepoint_path(self) -> str | None:
        return None

    def get_min_file_size_threshold(self) -> int:
        return self._threshold

    def get_write_buffer_size(self) -> int:
        return self._write_buffer_size if self._write_buffer_size >= 0 else 4096

    def _apply(self, conf: Any) -> None:
        conf.set(_STORAGE, "filesystem")
        conf.set(_CHECKPOINTS_DIR, self._path)

    def __repr__(self) -> str:
        return f"FileSystemCheckpointStorage (checkpoints to {self._path})"


class CustomCheckpointStorage(CheckpointStorage):
    """PyFlink wraps a Java CheckpointStorage object here; Strom runs no JVM."""

    def __new__(cls, j_custom_checkpoint_storage: Any) -> CustomCheckpointStorage:  # refused before the abstract check
        raise TypeError(
            "CustomCheckpointStorage wraps a Java CheckpointStorage, and Strom runs no JVM: use "
            "FileSystemCheckpointStorage(uri) or JobManagerCheckpointStorage()"
        )


def checkpoint_storage_of(conf: Any) -> CheckpointStorage | None:
    """The storage a configuration describes, or None when it names none (PyFlink returns None then)."""
    kind = str(conf.get(_STORAGE) or "").strip().lower()
    path = conf.get(_CHECKPOINTS_DIR) or ""
    if kind == "jobmanager":
        return JobManagerCheckpointStorage(path or None)
    if path:
        return FileSystemCheckpointStorage(path)
    return None
