"""The source operator: pulls batches from a SourceReader and applies the watermark strategy.

A reader keeps its progress in checkpoints (through the operator's extra-state hooks), so a
restored source resumes where the checkpoint was taken, in one of two ways:
- `snapshot_splits()` / `restore_splits(splits)`: its remaining work as splits (Flink's FLIP-27
  reader state). Restored at another parallelism, the splits of all old subtasks are pooled and
  dealt out again by the source's `redistribute_splits(splits, subtask, parallelism)` (else round
  robin), so a savepoint rescales the source too.
- `snapshot_position()` / `restore_position(p)`: an opaque per-subtask position, restorable only
  at the same parallelism (refused otherwise, naming the operator).
"""

from __future__ import annotations

from typing import Any

from strom.common import config_options as opts
from strom.common.record_size import RecordSizeEstimator
from strom.connectors.base import SourceReaderContext
from strom.runtime.operators.base import StreamOperator
from strom.runtime.operators.split_watermarks import SplitWatermarkEmitter
from strom.runtime.operators.watermarks import WatermarkEmitter
from strom.runtime.state.api import StateRestoreError

_POSITION = "reader_position"
_SPLITS = "reader_splits"


class SourceOperator(StreamOperator):
    _restored_position: Any = None
    _restored_splits: list[Any] | None = None
    reader: Any = None

    # -- snapshots: the reader's splits or position -------------------------------------------------
    def snapshot_state(self) -> dict[str, Any]:
        ctx = self.ctx
        assert ctx is not None
        splits = getattr(self.reader, "snapshot_splits", None)
        if splits is not None:
            return {_SPLITS: (ctx.subtask_index, ctx.parallelism, list(splits()))}
        snapshot = getattr(self.reader, "snapshot_position", None)
        if snapshot is None:
            return {}  # a reader without a position starts over after a restore (replays its input)
        return {_POSITION: (ctx.subtask_index, ctx.parallelism, snapshot())}

    def restore_state(self, parts: list[dict[str, Any]]) -> None:
        """Before open(): keep this subtask's reader splits or position for the reader open() creates."""
        ctx = self.ctx
        assert ctx is not None
        split_parts = [p[_SPLITS] for p in parts if _SPLITS in p]
        if split_parts:
            if all(parallelism == ctx.parallelism for _, parallelism, _ in split_parts):
                mine = [splits for subtask, _, splits in split_parts if subtask == ctx.subtask_index]
                self._restored_splits = list(mine[0]) if mine else []
            else:
                pooled = [s for _, _, splits in sorted(split_parts, key=lambda x: x[0]) for s in splits]
                deal = getattr(self.params["source"], "redistribute_splits", None)
                if deal is not None:
                    self._restored_splits = list(deal(pooled, ctx.subtask_index, ctx.parallelism))
                else:
                    self._restored_splits = pooled[ctx.subtask_index :: ctx.parallelism]
        for part in parts:
            if _POSITION not in part:
                continue
            subtask, parallelism, position = part[_POSITION]
            if parallelism != ctx.parallelism:
                raise StateRestoreError(
                    f"operator uid {ctx.operator_uid!r}: source positions were taken at parallelism {parallelism} "
                    f"and cannot be restored at parallelism {ctx.parallelism}; keep the source's parallelism"
                )
            if subtask == ctx.subtask_index:
                self._restored_position = position

    def open(self) -> None:
        super().open()
        ctx = self.ctx
        assert ctx is not None
        source = self.params["source"]
        self.reader = source.create_reader(
            SourceReaderContext(
                subtask_index=ctx.subtask_index,
                parallelism=ctx.parallelism,
                config=ctx.config,
                runtime_context=self.runtime_context(),
            )
        )
        if self._restored_splits is not None:
            restore_splits = getattr(self.reader, "restore_splits", None)
            if restore_splits is None:
                raise StateRestoreError(
                    f"operator uid {ctx.operator_uid!r}: the checkpoint has reader splits but "
                    f"{type(self.reader).__name__} cannot restore them"
                )
            restore_splits(self._restored_splits)
        if self._restored_position is not None:
            restore = getattr(self.reader, "restore_position", None)
            if restore is None:
                raise StateRestoreError(
                    f"operator uid {ctx.operator_uid!r}: the checkpoint has a reader position but "
                    f"{type(self.reader).__name__} cannot restore one"
                )
            restore(self._restored_position)
        # Readers of timestamped records (SourceFunction's collect_with_timestamp) expose them per batch.
        self._timestamped = hasattr(self.reader, "last_timestamps")
        # a batch is at most one network buffer of bytes (by the size of the last batch's first record)
        # and at most buffer-records records, so a chain's batches do not grow with the record size
        self.max_batch = ctx.config.get(opts.BUFFER_RECORDS) if ctx.config is not None else 1024
        self.batch_bytes = ctx.config.get(opts.SEGMENT_SIZE) if ctx.config is not None else 32 * 1024
        self.sizes = RecordSizeEstimator()
        self.batch_size = 1  # until the first record is sized
        if hasattr(self.reader, "last_splits"):  # a split-aware reader: a watermark per split (split_watermarks)
            self.emitter = SplitWatermarkEmitter(
                self.params["watermark_strategy"], self.output, ctx.processing_time_service, ctx.config, self.reader
            )
        else:
            self.emitter = WatermarkEmitter(
                self.params["watermark_strategy"], self.output, ctx.processing_time_service, ctx.config
            )
        self.emitter.start()
        type_info = self.params.get("output_type")
        self._convert = type_info.convert if type_info is not None and type_info.needs_conversion else None
        self.records_out = 0

    def emit_next(self) -> bool | None:
        """Emit one batch. True: emitted; False: nothing available now; None: input ended."""
        batch = self.reader.poll(self.batch_size)
        if batch is None:
            return None
        if not batch:
            return False
        self.sizes.sample(batch)
        self.batch_size = self.sizes.records_for(self.batch_bytes, self.max_batch)
        if self._convert is not None and not getattr(self.params["source"], "converts_types", False):
            conv = self._convert
            batch = [conv(v) for v in batch]
        self.records_out += len(batch)
        self.emitter.emit_batch(batch, self.reader.last_timestamps if self._timestamped else None)
        return True

    def finish_input(self) -> None:
        self.emitter.emit_final()

    # a reader may follow checkpoints (e.g. Kafka commits the offsets of a completed one to its group)
    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        prepare = getattr(self.reader, "prepare_snapshot", None)
        if prepare is not None:
            prepare(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        notify = getattr(self.reader, "notify_checkpoint_complete", None)
        if notify is not None:
            notify(checkpoint_id)

    def close(self) -> None:
        # also after an open() that failed half-way: a reader that exists is closed (its clients, e.g. a
        # Kafka consumer, would otherwise live on in this process)
        emitter, reader = getattr(self, "emitter", None), getattr(self, "reader", None)
        try:
            if emitter is not None:
                emitter.stop()
        finally:
            try:
                if reader is not None:
                    reader.close()
            finally:
                super().close()

    def cancel(self) -> None:
        cancel: Any = getattr(self.reader, "cancel", None)
        if cancel is not None:
            cancel()
