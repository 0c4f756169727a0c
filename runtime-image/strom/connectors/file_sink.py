"""`FileSink`: PyFlink's row-format file sink, exactly-once when the job checkpoints.

Each subtask writes one in-progress part file per bucket,
`.<prefix>-<uuid>-<subtask>-<n><suffix>.inprogress.<owner>.<uuid>`, and publishes it by renaming
it to `<prefix>-<uuid>-<subtask>-<n><suffix>`. In-progress files stay hidden (readers such
as FileSource skip names starting with '.'), also after a failure or cancellation. `<owner>` names
the sink within one submission of the job; a subtask that starts again (a restart, a JobManager
failover) first removes the in-progress files its earlier attempts left behind (a killed process
cannot), after it committed what the checkpoint it restores holds (`file_sink_policies`).

With checkpointing (Flink's two-phase commit): a part rolled by the rolling policy, and every
open part at each checkpoint barrier, is closed and becomes *pending* — a committable (its
in-progress and final paths) kept in the checkpoint — and is renamed to its final name only once
that checkpoint completed (`FileCommitter`). A restored job commits the pending files of its
checkpoint again (a rename already done is skipped), and the in-progress files of records after
the checkpoint are never published: the output holds every record exactly once.
Without checkpointing, a rolled part is published at once (the engine's at-most-once default).
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

from strom.common.serialization import Encoder
from strom.common.unsupported import UnsupportedFeatureError
from strom.connectors.file_enumeration import local_path
from strom.connectors.file_sink_policies import (
    BucketAssigner,
    DateTimeBucketAssigner,
    OutputFileConfig,
    RollingPolicy,
    in_progress_name,
    in_progress_owner,
    is_leftover_of_earlier_attempt,
)
from strom.connectors.sink_base import (
    Committer,
    PrecommittingSinkWriter,
    SinkInitContext,
    SinkWriterContext,
    TwoPhaseCommittingSink,
)

log = logging.getLogger(__name__)

DEFAULT_BUCKET_CHECK_INTERVAL_MS = 60_000


class InProgressPart:
    """An open part file; what a rolling policy sees as PartFileInfo."""

    __slots__ = ("bucket_id", "creation_time", "last_update_time", "size", "_file", "in_progress_path", "final_path")

    def __init__(self, bucket_id: str, directory: str, final_name: str, now: int, owner: str) -> None:
        self.bucket_id = bucket_id
        self.creation_time = now
        self.last_update_time = now
        self.size = 0
        self.final_path = os.path.join(directory, final_name)
        self.in_progress_path = os.path.join(directory, in_progress_name(final_name, owner, uuid.uuid4().hex))
        self._file = open(self.in_progress_path, "wb")  # noqa: SIM115 - lives until publish/abandon

    def get_bucket_id(self) -> str:
        return self.bucket_id

    def get_creation_time(self) -> int:
        return self.creation_time

    def get_last_update_time(self) -> int:
        return self.last_update_time

    def get_size(self) -> int:
        return self.size

    # hot path: called per record
    def write(self, data: bytes, now: int) -> None:
        self._file.write(data)
        self.size += len(data)
        self.last_update_time = now

    def flush(self) -> None:
        self._file.flush()

    def publish(self) -> str:
        self._file.close()
        os.replace(self.in_progress_path, self.final_path)
        return self.final_path

    def close_for_commit(self) -> tuple[str, str]:
        """Close the file durably, unpublished: the committable (in-progress path, final path)."""
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        return (self.in_progress_path, self.final_path)

    def abandon(self) -> None:
        self._file.close()


class Bucket:
    """One bucket directory of one subtask: its in-progress part and its part counter."""

    __slots__ = (
        "bucket_id", "directory", "part", "_unique_id", "_counter", "_subtask", "_config", "_pending", "_owner"
    )

    def __init__(
        self,
        bucket_id: str,
        directory: str,
        subtask_index: int,
        config: OutputFileConfig,
        pending: list[tuple[str, str]] | None = None,
        owner: str = "",
    ) -> None:
        self.bucket_id = bucket_id
        self.directory = directory
        self.part: InProgressPart | None = None
        # Flink's naming: a fresh uuid per bucket keeps names unique across restarts and subtasks.
        self._unique_id = str(uuid.uuid4())
        self._counter = 0
        self._subtask = subtask_index
        self._config = config
        # two-phase commit: closed parts go here (the writer's list) instead of being published
        self._pending = pending
        self._owner = owner

    def roll(self, now: int) -> InProgressPart:
        self.close_part()
        os.makedirs(self.directory, exist_ok=True)
        c = self._config
        name = f"{c.part_prefix}-{self._unique_id}-{self._subtask}-{self._counter}{c.part_suffix}"
        self._counter += 1
        self.part = InProgressPart(self.bucket_id, self.directory, name, now, self._owner)
        return self.part

    def close_part(self) -> None:
        if self.part is not None:
            if self._pending is None:
                self.part.publish()
            else:
                self._pending.append(self.part.close_for_commit())
            self.part = None


class _AssignerContext:
    """BucketAssigner.Context over the current record; reused for every record."""

    __slots__ = ("_writer_ctx", "_now")

    def __init__(self) -> None:
        self._writer_ctx: SinkWriterContext | None = None
        self._now = 0

    def current_processing_time(self) -> int:
        return self._now

    def current_watermark(self) -> int:
        assert self._writer_ctx is not None
        return self._writer_ctx.current_watermark()

    def timestamp(self) -> int | None:
        assert self._writer_ctx is not None
        return self._writer_ctx.timestamp()


class FileSinkWriter(PrecommittingSinkWriter):
    def __init__(self, sink: FileSink, context: SinkInitContext) -> None:
        # with checkpointing, closed parts wait here for prepare_commit
        self._pending: list[tuple[str, str]] | None = [] if context.checkpointing else None
        self._base = local_path(sink.base_path)
        # Java's string form of the declared type
        self._encode = sink.encoder.encoder_for(getattr(sink, "input_type", None))
        self._assigner = sink.bucket_assigner
        self._policy = sink.rolling_policy
        self._config = sink.output_file_config
        self._subtask = context.subtask_index
        self._pts = context.processing_time_service
        self._now = context.processing_time_service.now
        self._check_interval = sink.bucket_check_interval_ms
        self._buckets: dict[str, Bucket] = {}
        self._actx = _AssignerContext()
        self._closed = False
        self._owner = in_progress_owner(sink.sink_id, context.operator_uid)
        # before this writer opens any part, and after the subtask committed its restored checkpoint's files
        self._remove_leftovers(context.parallelism)
        self._pts.register_timer(self._now() + self._check_interval, self._on_bucket_check)

    def _remove_leftovers(self, parallelism: int) -> None:
        """Remove the in-progress files this subtask's earlier attempts left (a killed TaskManager never
        closes its parts): hidden, never committed, and referenced by nothing that will commit them."""
        removed = 0
        for directory, _, names in os.walk(self._base):
            for name in names:
                if name.startswith(".") and is_leftover_of_earlier_attempt(
                    name, config=self._config, owner=self._owner, subtask_index=self._subtask, parallelism=parallelism
                ):
                    try:
                        os.remove(os.path.join(directory, name))
                        removed += 1
                    except FileNotFoundError:
                        pass
        if removed:
            log.info("FileSink subtask %d removed %d in-progress file(s) of earlier attempts", self._subtask, removed)

    def _bucket(self, bucket_id: str) -> Bucket:
        directory = os.path.join(self._base, bucket_id) if bucket_id else self._base
        bucket = Bucket(bucket_id, directory, self._subtask, self._config, self._pending, self._owner)
        self._buckets[bucket_id] = bucket
        return bucket

    # hot path: called per record
    def write(self, value: Any, context: SinkWriterContext) -> None:
        now = self._now()
        actx = self._actx
        actx._writer_ctx = context
        actx._now = now
        bucket_id = self._assigner.get_bucket_id(value, actx)
        bucket = self._buckets.get(bucket_id)
        if bucket is None:
            bucket = self._bucket(bucket_id)
        part = bucket.part
        if part is None or self._policy.should_roll_on_event(part, value):
            part = bucket.roll(now)
        part.write(self._encode(value), now)

    def _on_bucket_check(self, now: int) -> None:
        if self._closed:
            return
        for bucket_id, bucket in list(self._buckets.items()):
            part = bucket.part
            if part is not None and self._policy.should_roll_on_processing_time(part, now):
                bucket.close_part()
                # An idle bucket (e.g. a past hour) is dropped; a later record starts a new one.
                del self._buckets[bucket_id]
        self._pts.register_timer(now + self._check_interval, self._on_bucket_check)

    def flush(self, end_of_input: bool) -> None:
        for bucket in self._buckets.values():
            part = bucket.part
            if part is None:
                continue
            if end_of_input or self._policy.should_roll_on_checkpoint(part):
                bucket.close_part()
            else:
                part.flush()

    def prepare_commit(self) -> list[tuple[str, str]]:
        """Roll every open part (Flink rolls row-format parts on checkpoint when it cannot resume
        them) and hand over every closed, unpublished part."""
        if self._pending is None:
            return []
        for bucket in self._buckets.values():
            bucket.close_part()
        committables, self._pending[:] = list(self._pending), []
        return committables

    def close(self) -> None:
        self._closed = True
        for bucket in self._buckets.values():
            if bucket.part is not None:
                bucket.part.abandon()
                bucket.part = None
        self._buckets.clear()


class FileCommitter(Committer):
    """Publishes pending part files by renaming them to their final names."""

    def commit(self, committables: list[tuple[str, str]]) -> None:
        for in_progress, final in committables:
            try:
                os.replace(in_progress, final)
            except FileNotFoundError:
                if not os.path.exists(final):
                    raise FileNotFoundError(
                        f"FileSink cannot commit {final}: its pending file {in_progress} is gone (was the output "
                        "directory cleaned while the job restored?)"
                    ) from None
                # committed before (a restored job commits its checkpoint's pending files again)


class FileSink(TwoPhaseCommittingSink):
    sink_name = "FileSink"

    def __init__(
        self,
        base_path: str,
        encoder: Encoder,
        *,
        bucket_assigner: BucketAssigner,
        rolling_policy: RollingPolicy,
        output_file_config: OutputFileConfig,
        bucket_check_interval_ms: int,
    ) -> None:
        self.base_path = base_path
        self.encoder = encoder
        self.bucket_assigner = bucket_assigner
        self.rolling_policy = rolling_policy
        self.output_file_config = output_file_config
        self.bucket_check_interval_ms = bucket_check_interval_ms
        # one id per sink object, i.e. per submission of the program: it travels in the job graph, so every
        # attempt (and a JobManager that recovers the job) knows its own in-progress files by it
        self.sink_id = uuid.uuid4().hex
        self.input_type: Any = None  # the declared type of the stream written (bind_input_type)

    def bind_input_type(self, type_info: Any) -> None:
        """Called by `DataStream.sink_to`: records are written as Java's string form of this type."""
        self.input_type = type_info

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> RowFormatBuilder:
        return RowFormatBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: Any) -> Any:
        raise UnsupportedFeatureError(
            "FileSink.for_bulk_format: Strom has no bulk (Parquet/ORC/Avro) writers; use "
            "FileSink.for_row_format(base_path, Encoder.simple_string_encoder())"
        )

    def create_writer(self, context: SinkInitContext) -> FileSinkWriter:
        return FileSinkWriter(self, context)

    def create_committer(self) -> FileCommitter:
        return FileCommitter()


class RowFormatBuilder:
    def __init__(self, base_path: str, encoder: Encoder) -> None:
        self._base_path = base_path
        self._encoder = encoder
        self._assigner: BucketAssigner = DateTimeBucketAssigner()
        self._policy: RollingPolicy = RollingPolicy.default_rolling_policy()
        self._config = OutputFileConfig()
        self._check_interval = DEFAULT_BUCKET_CHECK_INTERVAL_MS

    def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> RowFormatBuilder:
        self._assigner = bucket_assigner
        return self

    def with_rolling_policy(self, rolling_policy: RollingPolicy) -> RowFormatBuilder:
        self._policy = rolling_policy
        return self

    def with_output_file_config(self, output_file_config: OutputFileConfig) -> RowFormatBuilder:
        self._config = output_file_config
        return self

    def with_bucket_check_interval(self, interval: int) -> RowFormatBuilder:
        if interval <= 0:
            raise ValueError(f"with_bucket_check_interval: interval must be positive, got {interval} ms")
        self._check_interval = interval
        return self

    def build(self) -> FileSink:
        return FileSink(
            self._base_path,
            self._encoder,
            bucket_assigner=self._assigner,
            rolling_policy=self._policy,
            output_file_config=self._config,
            bucket_check_interval_ms=self._check_interval,
        )
