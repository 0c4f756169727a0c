"""`FileSource`: PyFlink's file source over files and directories, bounded or monitored.

Bounded (`process_static_file_set`, the default): the files present at start are
divided among subtasks by `file_enumeration.static_share`. Monitored
(`monitor_continuously(interval)`): unbounded; every subtask rescans at the interval
and reads each new file it owns (`file_enumeration.owner_of`) exactly once. Files are
read whole, never split, like Flink's non-splittable stream formats. Paths are local
(`/data`, `file:///data`) or S3 URIs (`s3://bucket/prefix/`, `s3a://`, `s3p://`): objects are
listed and streamed through boto3 with the job's `s3.*` options (`s3_files`), in STREAMING and
in BATCH mode alike.

Checkpoints keep each reader's progress as (file, lines already read): a bounded reader's splits
are its current file with its offset and the files it has not opened; restored at another
parallelism they are dealt out again. A monitoring reader keeps the files it has seen, its queue
and its current file with its offset (restorable at the same parallelism: file ownership depends on it).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice
from typing import IO, Any

from strom.common.s3_client import is_s3_uri, split_s3_uri
from strom.common.time import Duration, to_millis
from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext
from strom.connectors.file_enumeration import enumerate_files, new_owned_files, static_share
from strom.connectors.s3_files import S3Files

# How long an idle reader may wait inside poll() before returning []: the contract's limit.
_MAX_POLL_WAIT_S = 0.05

# Flink decompresses by file extension; the same codecs that the standard library has.
_DECOMPRESSORS: dict[str, Callable[[IO[bytes]], IO[bytes]]] = {
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".gzip": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".bz2": bz2.BZ2File,
    ".xz": lzma.LZMAFile,
}


def _decompressed(path: str, raw: IO[bytes]) -> IO[bytes]:
    for ext, fn in _DECOMPRESSORS.items():
        if path.endswith(ext):
            return fn(raw)
    return raw


class TextFileReader:
    """Lines of one file without their line terminator (\\n, \\r\\n or \\r, as Java's readLine).

    Reads a binary stream (a local file or an S3 object's body), decompressed by the path's suffix."""

    def __init__(self, path: str, charset: str, raw: IO[bytes] | None = None) -> None:
        self._raw = open(path, "rb") if raw is None else raw  # closed by close()
        try:
            # errors="replace": Java's InputStreamReader replaces malformed input, it does not fail.
            self._file = io.TextIOWrapper(
                _decompressed(path, self._raw), encoding=charset, errors="replace", newline=None
            )
        except BaseException:
            self._raw.close()
            raise
        self.path = path
        self.lines_read = 0  # the offset a checkpoint keeps: lines, so compressed files resume too

    # hot path: called per batch
    def read_batch(self, max_records: int) -> list[str]:
        batch = [line.rstrip("\n") for line in islice(self._file, max_records)]
        self.lines_read += len(batch)
        return batch

    def skip(self, lines: int) -> None:
        """Resume after a restore: the first `lines` lines were read before the checkpoint."""
        for _ in islice(self._file, lines):
            self.lines_read += 1

    def close(self) -> None:
        try:
            self._file.close()
        finally:
            self._raw.close()  # a decompressor does not close the stream it was given


class StreamFormat:
    """How a file's bytes become records (PyFlink `StreamFormat`)."""

    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = charset

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        return StreamFormat(charset_name)

    def open(self, path: str, raw: IO[bytes] | None = None) -> TextFileReader:
        """A reader of the file `path`, over `raw` (its bytes) when given, else the local file."""
        return TextFileReader(path, self.charset, raw)


class FileSystems:
    """Where a reader's paths live: local files, or S3 objects through one client built on first use
    from the job's `s3.*` options (a job reading only local files never imports boto3)."""

    def __init__(self, config: Any = None) -> None:
        self._config = config
        self._s3: S3Files | None = None

    def _s3_files(self) -> S3Files:
        if self._s3 is None:
            self._s3 = S3Files.from_config(self._config)
        return self._s3

    def enumerate(self, paths: list[str]) -> list[str]:
        lister = self._s3_files().list_files if any(is_s3_uri(p) for p in paths) else None
        return enumerate_files(paths, lister)

    def open(self, path: str, stream_format: StreamFormat) -> TextFileReader:
        raw = self._s3_files().open(path) if is_s3_uri(path) else None
        return stream_format.open(path, raw)


FileSplit = tuple[str, int]  # (path or object URI, lines already read)


class StaticFileSourceReader(SourceReader):
    """Reads a fixed list of files one after the other, then ends.

    `files` may be a function that lists them: called on first use, so that a reader restored from
    its splits never lists the paths (an S3 prefix of many objects costs a request per thousand)."""

    def __init__(
        self,
        files: Sequence[str] | Callable[[], Sequence[str]],
        stream_format: StreamFormat,
        file_systems: FileSystems | None = None,
    ) -> None:
        self._listing = files if callable(files) else None
        self._files: deque[FileSplit] = deque() if callable(files) else deque((f, 0) for f in files)
        self._format = stream_format
        self._fs = file_systems or FileSystems()
        self._current: TextFileReader | None = None

    def _remaining(self) -> deque[FileSplit]:
        if self._listing is not None:
            self._files = deque((f, 0) for f in self._listing())
            self._listing = None
        return self._files

    def snapshot_splits(self) -> list[FileSplit]:
        current = [(self._current.path, self._current.lines_read)] if self._current is not None else []
        return current + list(self._remaining())

    def restore_splits(self, splits: list[FileSplit]) -> None:
        self.close()
        self._listing = None
        self._files = deque((str(path), int(offset)) for path, offset in splits)

    def poll(self, max_records: int) -> list[Any] | None:
        while True:
            if self._current is None:
                files = self._remaining()
                if not files:
                    return None
                path, offset = files.popleft()
                self._current = self._fs.open(path, self._format)
                if offset:
                    self._current.skip(offset)
            batch = self._current.read_batch(max_records)
            if batch:
                return batch
            self._current.close()
            self._current = None

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None


class MonitoringFileSourceReader(SourceReader):
    """Reads the files it owns, rescanning the paths every `interval_ms`; never ends."""

    def __init__(
        self,
        paths: list[str],
        stream_format: StreamFormat,
        *,
        interval_ms: int,
        subtask_index: int,
        parallelism: int,
        file_systems: FileSystems | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._paths = paths
        self._format = stream_format
        self._fs = file_systems or FileSystems()
        self._interval_s = interval_ms / 1000.0
        self._subtask = subtask_index
        self._parallelism = parallelism
        self._clock = clock
        self._seen: set[str] = set()
        self._pending: deque[str] = deque()
        self._current: TextFileReader | None = None
        self._next_scan = clock()
        self._cancelled = threading.Event()

    def poll(self, max_records: int) -> list[Any] | None:
        while True:
            if self._current is not None:
                batch = self._current.read_batch(max_records)
                if batch:
                    return batch
                self._current.close()
                self._current = None
            if self._pending:
                self._current = self._fs.open(self._pending.popleft(), self._format)
                continue
            now = self._clock()
            if now >= self._next_scan:
                self._next_scan = now + self._interval_s
                self._pending.extend(
                    new_owned_files(self._fs.enumerate(self._paths), self._seen, self._subtask, self._parallelism)
                )
                if self._pending:
                    continue
            # Event.wait rather than sleep: cancel() must not wait out the pause.
            self._cancelled.wait(max(0.0, min(_MAX_POLL_WAIT_S, self._next_scan - now)))
            return []

    def snapshot_position(self) -> tuple[list[str], list[str], FileSplit | None]:
        current = (self._current.path, self._current.lines_read) if self._current is not None else None
        return sorted(self._seen), list(self._pending), current

    def restore_position(self, position: tuple[list[str], list[str], FileSplit | None]) -> None:
        seen, pending, current = position
        self.close()
        self._seen = set(seen)
        self._pending = deque(pending)
        if current is not None:
            self._current = self._fs.open(current[0], self._format)
            self._current.skip(int(current[1]))

    def cancel(self) -> None:
        self._cancelled.set()

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None


class FileSource(Source):
    name = "FileSource"

    def __init__(self, stream_format: StreamFormat, paths: tuple[str, ...], monitor_interval_ms: int | None) -> None:
        if not paths:
            raise ValueError("FileSource needs at least one path")
        for path in paths:
            if is_s3_uri(path):
                split_s3_uri(path)  # a malformed URI fails when the job is built, not in a task
        self.stream_format = stream_format
        self.paths = list(paths)
        self.monitor_interval_ms = monitor_interval_ms

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        return FileSourceBuilder(stream_format, paths)

    def get_produced_type(self) -> Any:
        """The record type the format declares (CsvReaderFormat: its schema's Types.ROW_NAMED), else None."""
        return getattr(self.stream_format, "produced_type", None)

    def get_boundedness(self) -> Boundedness:
        if self.monitor_interval_ms is None:
            return Boundedness.BOUNDED
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        file_systems = FileSystems(context.config)
        if self.monitor_interval_ms is None:
            paths, subtask, parallelism = self.paths, context.subtask_index, context.parallelism

            def my_share() -> list[str]:
                return static_share(file_systems.enumerate(paths), subtask, parallelism)

            return StaticFileSourceReader(my_share, self.stream_format, file_systems)
        return MonitoringFileSourceReader(
            self.paths,
            self.stream_format,
            interval_ms=self.monitor_interval_ms,
            subtask_index=context.subtask_index,
            parallelism=context.parallelism,
            file_systems=file_systems,
        )


class FileSourceBuilder:
    def __init__(self, stream_format: StreamFormat, paths: tuple[str, ...]) -> None:
        self._format = stream_format
        self._paths = paths
        self._interval_ms: int | None = None

    def monitor_continuously(self, discovery_interval: Duration | int) -> FileSourceBuilder:
        interval = to_millis(discovery_interval, what="discovery interval")
        if interval <= 0:
            raise ValueError(f"monitor_continuously: discovery interval must be positive, got {interval} ms")
        self._interval_ms = interval
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        self._interval_ms = None
        return self

    def build(self) -> FileSource:
        return FileSource(self._format, tuple(self._paths), self._interval_ms)
