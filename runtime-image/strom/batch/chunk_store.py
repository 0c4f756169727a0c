"""Where a consumer partition keeps the chunks it received until it reads them: memory, then disk.

A consumer must receive every chunk of its partition before it can read in order (the last chunk
to arrive may hold the earliest record). Chunks stay in memory up to a budget (Spark's
`spark.python.worker.memory`, which PySpark's own sorter spills at too); past it they are appended
to a file in Spark's local directories and read back, one chunk at a time, when their run needs
them. The file is deleted when the store is closed (or the process ends).
"""

from __future__ import annotations

import os
import tempfile
from typing import IO

ChunkRef = bytes | tuple[int, int]  # the chunk itself, or (offset, length) in the spill file


def spill_directory() -> str | None:
    """The first of Spark's local directories for this worker (None: the system's temp directory)."""
    dirs = [d for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if d]
    return dirs[0] if dirs and os.path.isdir(dirs[0]) else None


class ChunkStore:
    """Serialized chunks kept in memory up to `memory_bytes`, the rest in an anonymous local file."""

    def __init__(self, memory_bytes: int, directory: str | None = None) -> None:
        self.memory_bytes = memory_bytes
        self.directory = directory
        self.in_memory = 0
        self.spilled = 0
        self._file: IO[bytes] | None = None

    def put(self, data: bytes) -> ChunkRef:
        if self.in_memory + len(data) <= self.memory_bytes:
            self.in_memory += len(data)
            return data
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="strom-shuffle-", dir=self.directory)
        offset = self._file.seek(0, os.SEEK_END)
        self._file.write(data)
        self.spilled += len(data)
        return (offset, len(data))

    def get(self, ref: ChunkRef) -> bytes:
        if isinstance(ref, bytes):
            return ref
        assert self._file is not None
        self._file.flush()
        offset, length = ref
        return os.pread(self._file.fileno(), length, offset)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
