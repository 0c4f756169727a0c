"""`'connector' = 'filesystem'`: a table stored as files under `path`, in a line format (csv, json, raw).

Reading (Flink's FileSource): the files under `path` (a file or a directory, recursively; names
starting with '.' or '_' are skipped, as in-progress files and `_SUCCESS` markers are), bounded, or
watching for new files every `source.monitor-interval` (unbounded). A partitioned table
(`PARTITIONED BY (dt, hr)`) keeps its partition columns in the directory names (`dt=2026-11-26/hr=10/`),
not in the files; `partition.default-name` (`__DEFAULT_PARTITION__`) stands for NULL or ''.

Writing goes through Strom's exactly-once FileSink: part files `part-<uuid>-<subtask>-<n>` under the
partition's directory, written in progress (hidden) and published when the checkpoint that holds them
completes (or at the end of a job without checkpoints). Rolling: `sink.rolling-policy.file-size`
(128 MB), `.rollover-interval` (30 min), `.inactivity-interval` (30 min), `.check-interval` (1 min);
every part is also rolled at a checkpoint, as Flink's filesystem sink rolls row formats. Partition commit
(`sink.partition-commit.policy.kind` = success-file): a partition whose files a checkpoint published gets
an empty `sink.partition-commit.success-file.name` (`_SUCCESS`) file, Flink's process-time trigger with
no delay. The sink consumes inserts only.
"""

from __future__ import annotations

import os
import shutil
import uuid
from typing import Any
from urllib.parse import quote, unquote

from strom.common.config_options import parse_duration_ms, parse_memory_size
from strom.common.row import Row, make_row
from strom.common.serialization import Encoder
from strom.common.watermark_strategy import WatermarkStrategy
from strom.connectors.file_enumeration import local_path
from strom.connectors.file_sink import FileCommitter, FileSink, FileSinkWriter
from strom.connectors.file_sink_policies import BucketAssigner, DefaultRollingPolicy, OutputFileConfig
from strom.connectors.file_source import FileSource, StreamFormat, TextFileReader
from strom.table.connectors import formats
from strom.table.connectors.registry import ConnectorFactory, SinkMode, TableContext, register
from strom.table.errors import NotSupportedYet

DEFAULT_PARTITION = "__DEFAULT_PARTITION__"
_SINK_OPTIONS = {
    "sink.rolling-policy.file-size", "sink.rolling-policy.rollover-interval", "sink.rolling-policy.check-interval",
    "sink.rolling-policy.inactivity-interval", "sink.partition-commit.trigger", "sink.partition-commit.delay",
    "sink.partition-commit.policy.kind", "sink.partition-commit.success-file.name", "sink.parallelism",
    "sink.shuffle-by-partition.enable", "auto-compaction", "partition.time-extractor.timestamp-pattern",
    "sink.partition-commit.watermark-time-zone",
}
_SOURCE_OPTIONS = {"source.monitor-interval", "partition.default-name", "lookup.join.cache.ttl"}
# Hive's escaping of partition values in directory names (FileUtils.escapePathName), as Flink uses
_SAFE = "".join(chr(c) for c in range(32, 127) if chr(c) not in '"#%\'*/:=?\\\x7f{[]^')


def escape_partition_value(value: str) -> str:
    return quote(value, safe=_SAFE)


def partition_path(names: list[str], values: list[Any], default_name: str) -> str:
    """`dt=2026-11-26/hr=10`: the directory of a row's partition (NULL or '' -> the default name)."""
    parts = []
    for n, v in zip(names, values, strict=True):
        text = default_name if v is None or v == "" else escape_partition_value(formats.text_of(v))
        parts.append(f"{n}={text}")
    return "/".join(parts)


def partition_values_of(path: str, base: str) -> dict[str, str]:
    """The `k=v` directory names between `base` and the file (unescaped)."""
    rel = os.path.relpath(os.path.dirname(path), base)
    out = {}
    for segment in [] if rel == "." else rel.split(os.sep):
        k, eq, v = segment.partition("=")
        if eq:
            out[unquote(k)] = unquote(v)
    return out


class FileSystemFactory(ConnectorFactory):
    identifier = "filesystem"
    supports_overwrite = True  # INSERT OVERWRITE in BATCH mode (Flink's FileSystemTableSink: SupportsOverwrite)
    format_option = "format"
    bounded_hint = " (unset 'source.monitor-interval')"

    def required_options(self, ctx: TableContext) -> set[str]:
        return {"path", "format"}

    def optional_options(self, ctx: TableContext) -> set[str]:
        return _SINK_OPTIONS | _SOURCE_OPTIONS

    def _format(self, ctx: TableContext) -> tuple[formats.FormatFactory, dict[str, str]]:
        name = ctx.options["format"]
        factory = formats.format_factory(ctx.name, name)
        return factory, formats.format_options(ctx.options, name)

    def _file_columns(self, ctx: TableContext) -> list[tuple[str, Any]]:
        return [(n, t) for n, t in ctx.columns if n not in ctx.partition_keys]

    def validate(self, ctx: TableContext) -> None:
        factory, options = self._format(ctx)
        factory.validate(ctx.name, self._file_columns(ctx), options)
        for key in ("sink.rolling-policy.rollover-interval", "sink.rolling-policy.check-interval",
                    "sink.rolling-policy.inactivity-interval", "source.monitor-interval",
                    "sink.partition-commit.delay", "lookup.join.cache.ttl"):
            if key in ctx.options:
                try:
                    parse_duration_ms(ctx.options[key])
                except ValueError as e:
                    raise ctx.error(f"option {key!r}: {e}") from None
        if "sink.rolling-policy.file-size" in ctx.options:
            try:
                parse_memory_size(ctx.options["sink.rolling-policy.file-size"])
            except ValueError as e:
                raise ctx.error(f"option 'sink.rolling-policy.file-size': {e}") from None
        kinds = _commit_policies(ctx)
        unknown = sorted(kinds - {"success-file", "metastore"})
        if unknown:
            raise ctx.error(f"sink.partition-commit.policy.kind {unknown[0]!r} is not supported; use success-file "
                            "(metastore is accepted and does nothing: there is no metastore)")
        if ctx.bool_option("auto-compaction", False):
            raise NotSupportedYet(f"'auto-compaction' = 'true' (table {ctx.name!r})")
        trigger = ctx.options.get("sink.partition-commit.trigger", "process-time")
        if trigger != "process-time":
            raise NotSupportedYet(f"sink.partition-commit.trigger {trigger!r} (table {ctx.name!r}); process-time")
        ctx.int_option("sink.parallelism")

    # -- source ------------------------------------------------------------------------------------
    def is_bounded(self, ctx: TableContext) -> bool:
        return "source.monitor-interval" not in ctx.options

    def build_source(self, ctx: TableContext, env: Any, uid: str, *, batch: bool) -> Any:
        factory, options = self._format(ctx)
        decode = factory.decoder(ctx.name, self._file_columns(ctx), options)
        line_format = _TableLineFormat(decode, ctx, local_path(ctx.options["path"]))
        builder = FileSource.for_record_stream_format(line_format, ctx.options["path"])
        if not self.is_bounded(ctx):
            builder = builder.monitor_continuously(parse_duration_ms(ctx.options["source.monitor-interval"]))
        return env.from_source(builder.build(), WatermarkStrategy.no_watermarks(),
                               f"TableSourceScan[{ctx.display_name}]").uid(uid)

    def lookup_function(self, ctx: TableContext, key_columns: list[str]) -> Any:
        """The whole table in memory, read again after `lookup.join.cache.ttl` (filesystem_lookup.py)."""
        from strom.table.connectors.filesystem_lookup import DEFAULT_CACHE_TTL_MS, FileSystemLookupSource

        factory, options = self._format(ctx)
        decode = factory.decoder(ctx.name, self._file_columns(ctx), options)
        line_format = _TableLineFormat(decode, ctx, local_path(ctx.options["path"]))
        ttl = ctx.options.get("lookup.join.cache.ttl")
        names = ctx.column_names()
        return FileSystemLookupSource(ctx.name, ctx.options["path"], line_format, [names.index(k) for k in key_columns],
                                      ttl_ms=DEFAULT_CACHE_TTL_MS if ttl is None else parse_duration_ms(ttl))

    # -- sink --------------------------------------------------------------------------------------
    def sink_mode(self, ctx: TableContext) -> SinkMode:
        return SinkMode.INSERT_ONLY

    def build_sink(self, ctx: TableContext, ds: Any, uid: str) -> Any:
        factory, options = self._format(ctx)
        names = ctx.column_names()
        file_positions = [i for i, n in enumerate(names) if n not in ctx.partition_keys]
        partition_positions = [names.index(k) for k in ctx.partition_keys]
        encode = factory.encoder(ctx.name, self._file_columns(ctx), options)
        o = ctx.options
        size = parse_memory_size(o.get("sink.rolling-policy.file-size", "128mb"))
        rollover = parse_duration_ms(o.get("sink.rolling-policy.rollover-interval", "30 min"))
        inactivity = parse_duration_ms(o.get("sink.rolling-policy.inactivity-interval", "30 min"))
        check = parse_duration_ms(o.get("sink.rolling-policy.check-interval", "1 min"))
        success = "success-file" in _commit_policies(ctx) and bool(ctx.partition_keys)
        overwrite_id = uuid.uuid4().hex if ctx.overwrite else ""
        # INSERT OVERWRITE writes into a hidden staging directory (readers skip it), published at the end
        base = os.path.join(local_path(o["path"]), f".staging-{overwrite_id}") if ctx.overwrite else o["path"]
        sink = TableFileSink(
            base, _RowEncoder(encode, file_positions),
            bucket_assigner=_PartitionAssigner(list(ctx.partition_keys), partition_positions,
                                               o.get("partition.default-name", DEFAULT_PARTITION)),
            rolling_policy=DefaultRollingPolicy(size, rollover, inactivity),
            output_file_config=OutputFileConfig(),
            bucket_check_interval_ms=check,
        )
        sink.success_file = o.get("sink.partition-commit.success-file.name", "_SUCCESS") if success else None
        if ctx.overwrite:  # the files there before the job, replaced when it ends
            sink.replaced = existing_files(local_path(o["path"]))
            sink.partitioned = bool(ctx.partition_keys)
            sink.overwrite_id = overwrite_id
            sink.final_base = local_path(o["path"])
        out = ds.sink_to(sink).name(f"Sink[{ctx.display_name}]").uid(uid)
        parallelism = ctx.int_option("sink.parallelism")
        if parallelism is not None:
            out.set_parallelism(parallelism)
        return out


def _commit_policies(ctx: TableContext) -> set[str]:
    kinds = ctx.options.get("sink.partition-commit.policy.kind", "")
    return {k.strip() for k in kinds.split(",") if k.strip()}


class _TableLineFormat(StreamFormat):
    """Lines -> Rows of the table: the format reads the file's columns, the path gives the partition's."""

    def __init__(self, decode: formats.Decoder, ctx: TableContext, base: str) -> None:
        super().__init__("UTF-8")
        self.decode = decode
        self.names = tuple(ctx.column_names())
        self.types = dict(ctx.columns)
        self.partition_keys = ctx.partition_keys
        self.default_name = ctx.options.get("partition.default-name", DEFAULT_PARTITION)
        self.base = base if os.path.isdir(base) else os.path.dirname(base)

    def open(self, path: str, raw: Any = None) -> _TableFileReader:  # type: ignore[override]
        partition: dict[str, Any] = {}
        if self.partition_keys:
            found = partition_values_of(path, self.base)
            for k in self.partition_keys:
                text = found.get(k)
                partition[k] = None if text is None or text == self.default_name else formats.parse_text(
                    text, self.types[k])
        return _TableFileReader(TextFileReader(path, self.charset, raw), self, partition)


class _TableFileReader:
    def __init__(self, lines: TextFileReader, fmt: _TableLineFormat, partition: dict[str, Any]) -> None:
        self._lines = lines
        self._fmt = fmt
        self._partition = partition
        self.path = lines.path

    @property
    def lines_read(self) -> int:
        return self._lines.lines_read

    def skip(self, lines: int) -> None:
        self._lines.skip(lines)

    # hot path: called per batch
    def read_batch(self, max_records: int) -> list[Row]:
        decode, names, partition = self._fmt.decode, self._fmt.names, self._partition
        while True:
            lines = self._lines.read_batch(max_records)
            if not lines:
                return []
            rows = [r for r in (decode(line.encode("utf-8")) for line in lines if line) if r is not None]
            if partition:
                rows = [make_row([partition[n] if n in partition else r[n] for n in names], tuple(names)) for r in rows]
            if rows:
                return rows

    def close(self) -> None:
        self._lines.close()


class _RowEncoder(Encoder):
    """A row's file columns in the table's format, one line each."""

    def __init__(self, encode: formats.Encoder, positions: list[int]) -> None:
        super().__init__("utf-8")
        self._encode = encode
        self._positions = positions

    def encode(self, value: Any) -> bytes:  # hot path: called per record
        return self._encode(Row(*[value[i] for i in self._positions])) + b"\n"


class _PartitionAssigner(BucketAssigner):
    def __init__(self, names: list[str], positions: list[int], default_name: str) -> None:
        self.names = names
        self.positions = positions
        self.default_name = default_name

    def get_bucket_id(self, element: Any, context: Any) -> str:
        if not self.positions:
            return ""
        return partition_path(self.names, [element[i] for i in self.positions], self.default_name)


class TableFileSink(FileSink):
    """FileSink plus Flink's partition commit: `success_file` written into each partition whose files were
    published (by the committer after a checkpoint, or by the writer at the end without checkpoints); and
    INSERT OVERWRITE (as Flink's staging commit): the writers write into a hidden staging directory; once
    EVERY writer reached the end of its input (then every source finished reading, even one reading this
    table), the files listed in `replaced` (there before the job) are removed, all of them for an
    unpartitioned table, those of the partitions written otherwise (Flink's dynamic partition overwrite),
    and the staged files move into the table. Each writer leaves a marker naming the directories it wrote;
    the one that finds all markers publishes."""

    success_file: str | None = None
    replaced: dict[str, list[str]] | None = None
    partitioned: bool = False
    overwrite_id = ""
    final_base = ""

    def create_writer(self, context: Any) -> FileSinkWriter:
        return _PartitionCommittingWriter(self, context)

    def create_committer(self) -> FileCommitter:
        return _PartitionCommitter(self.success_file)


def _write_success_files(directories: set[str], name: str) -> None:
    for d in directories:
        with open(os.path.join(d, name), "wb"):
            pass


class _PartitionCommitter(FileCommitter):
    def __init__(self, success_file: str | None) -> None:
        self.success_file = success_file

    def commit(self, committables: list[tuple[str, str]]) -> None:
        super().commit(committables)
        if self.success_file:
            _write_success_files({os.path.dirname(final) for _, final in committables}, self.success_file)


def existing_files(base: str) -> dict[str, list[str]]:
    """Directory -> its visible (committed) files under `base`."""
    found: dict[str, list[str]] = {}
    for directory, dirs, names in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]  # staging and in-progress stay
        visible = [n for n in names if not n.startswith((".", "_"))]
        if visible:
            found[directory] = visible
    return found


def _remove_replaced(replaced: dict[str, list[str]], directories: set[str] | None) -> None:
    """Remove the files that were there before an INSERT OVERWRITE (in `directories` only, when given)."""
    for directory, names in replaced.items():
        if directories is not None and os.path.normpath(directory) not in directories:
            continue
        for name in names:
            try:
                os.remove(os.path.join(directory, name))
            except FileNotFoundError:  # another subtask removed it first
                pass


def _publish_staged(staging: str, final: str, marker_prefix: str) -> None:
    """Move the staged files into the table's directories and remove the staging directory."""
    for directory, _, names in os.walk(staging):
        target = os.path.join(final, os.path.relpath(directory, staging))
        for name in names:
            if name.startswith(marker_prefix):
                continue
            os.makedirs(target, exist_ok=True)
            try:
                os.replace(os.path.join(directory, name), os.path.join(target, name))
            except FileNotFoundError:  # another writer published it
                pass
    shutil.rmtree(staging, ignore_errors=True)


class _PartitionCommittingWriter(FileSinkWriter):
    def __init__(self, sink: TableFileSink, context: Any) -> None:
        super().__init__(sink, context)
        self._success_file = sink.success_file
        self._written: set[str] = set()
        self._replaced = sink.replaced
        self._partitioned = sink.partitioned
        self._final_base = sink.final_base
        self._parallelism = context.parallelism
        self._directories: set[str] = set()

    def _finish_overwrite(self) -> None:
        assert self._replaced is not None
        prefix = ".overwrite-marker-"
        os.makedirs(self._base, exist_ok=True)
        marker = os.path.join(self._base, f"{prefix}{self._subtask}")
        with open(marker + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(sorted(os.path.relpath(d, self._base) for d in self._directories)))
        os.replace(marker + ".tmp", marker)  # a marker is seen whole or not at all
        markers = [n for n in os.listdir(self._base) if n.startswith(prefix) and not n.endswith(".tmp")]
        if len(markers) < self._parallelism:
            return  # a writer still runs: the last one to finish publishes
        written: set[str] = set()
        for name in markers:
            try:
                with open(os.path.join(self._base, name), encoding="utf-8") as f:
                    written |= {os.path.normpath(os.path.join(self._final_base, rel))
                                for rel in f.read().splitlines() if rel}
            except FileNotFoundError:  # another writer finished at the same moment and published
                return
        _remove_replaced(self._replaced, written if self._partitioned else None)
        _publish_staged(self._base, self._final_base, prefix)


    def _bucket(self, bucket_id: str) -> Any:
        bucket = super()._bucket(bucket_id)
        self._directories.add(os.path.normpath(bucket.directory))
        return bucket

    def flush(self, end_of_input: bool) -> None:
        if self._success_file and self._pending is None:
            self._written |= {os.path.join(self._base, b) for b in self._buckets}
        super().flush(end_of_input)
        if end_of_input and self._replaced is not None:
            self._finish_overwrite()
            self._replaced = None
        if end_of_input and self._success_file and self._pending is None:
            _write_success_files(self._written, self._success_file)


register(FileSystemFactory())
