"""`JobManagerCheckpointStorage`: snapshot objects in memory, for jobs without a checkpoint directory.

Flink gives every streaming job a checkpoint coordinator; a job whose configuration names no
`state.checkpoints.dir` keeps its snapshots in the JobManager (JobManagerCheckpointStorage), so
`flink savepoint JOBID DIR` works for it: the state travels to the JobManager inside the tasks'
acknowledgements and is written to DIR from there. Strom does the same. A slot process stages a
task's state files in one of these (`ships_state_inline`), and `AsyncSnapshotWriter` moves them
into the acknowledgement (`inline_state_handle`); the JobManager's coordinator stages them in its
own instance (`JobCheckpointing`), from which a savepoint copies them into its target directory.
Staged files are removed once the savepoint was copied or failed, so memory holds only snapshots
in flight. Periodic checkpoints still need a directory (`validate_cluster_checkpointing`): a
JobManager's memory survives no failover.
"""

from __future__ import annotations

import threading

from strom.runtime.checkpoint.errors import StorageObjectNotFoundError
from strom.runtime.checkpoint.layout import normalize_path, normalize_prefix


class JobManagerCheckpointStorage:
    """Objects in a dict under a lock (task threads, the writer pool and the coordinator share it)."""

    ships_state_inline = True  # a slot process's writer moves these objects into its acknowledgements

    def __init__(self, name: str = "memory") -> None:
        self._name = name
        self._objects: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JobManagerCheckpointStorage({self._name!r})"

    @property
    def root_uri(self) -> str:
        return f"jobmanager://{self._name}"

    def uri_of(self, path: str) -> str:
        return f"{self.root_uri}/{normalize_path(path)}"

    def write_bytes(self, path: str, data: bytes) -> None:
        with self._lock:
            self._objects[normalize_path(path)] = bytes(data)

    def read_bytes(self, path: str) -> bytes:
        key = normalize_path(path)
        with self._lock:
            data = self._objects.get(key)
        if data is None:
            raise StorageObjectNotFoundError(f"{self.uri_of(key)} does not exist")
        return data

    def exists(self, path: str) -> bool:
        with self._lock:
            return normalize_path(path) in self._objects

    def list(self, prefix: str = "") -> list[str]:
        start = normalize_prefix(prefix) if prefix else ""
        with self._lock:
            return sorted(k for k in self._objects if k.startswith(start))

    def delete(self, path: str) -> None:
        with self._lock:
            self._objects.pop(normalize_path(path), None)

    def delete_prefix(self, prefix: str) -> None:
        start = normalize_prefix(prefix)
        with self._lock:
            for key in [k for k in self._objects if k.startswith(start)]:
                del self._objects[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)
