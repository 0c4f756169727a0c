"""The source operator: pulls batches from a SourceReader and applies the watermark strategy.

A reader with `snapshot_position()` / `restore_position(p)` keeps its position in checkpoints
(through the operator's extra-state hooks), so a restored source resumes where the checkpoint
was taken. Positions are per subtask: restoring one at another parallelism is refused.
"""

from __future__ import annotations

from typing import Any

from strom.common import config_options as opts
from strom.connectors.base import SourceReaderContext
from strom.runtime.operators.base import StreamOperator
from strom.runtime.operators.watermarks import WatermarkEmitter
from strom.runtime.state.snapshots import StateRestoreError

_POSITION = "reader_position"


class SourceOperator(StreamOperator):
    _restored_position: Any = None
    reader: Any = None

    # -- snapshots: the reader's position -----------------------------------------------------------
    def snapshot_state(self) -> dict[str, Any]:
        snapshot = getattr(self.reader, "snapshot_position", None)
        if snapshot is None:
            return {}  # a reader without a position starts over after a restore (replays its input)
        ctx = self.ctx
        assert ctx is not None
        return {_POSITION: (ctx.subtask_index, ctx.parallelism, snapshot())}

    def restore_state(self, parts: list[dict[str, Any]]) -> None:
        """Before open(): keep this subtask's reader position for the reader open() creates."""
        ctx = self.ctx
        assert ctx is not None
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
        self.batch_size = ctx.config.get(opts.BUFFER_RECORDS) if ctx.config is not None else 1024
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
        if self._convert is not None and not getattr(self.params["source"], "converts_types", False):
            conv = self._convert
            batch = [conv(v) for v in batch]
        self.records_out += len(batch)
        self.emitter.emit_batch(batch, self.reader.last_timestamps if self._timestamped else None)
        return True

    def finish_input(self) -> None:
        self.emitter.emit_final()

    def close(self) -> None:
        self.emitter.stop()
        try:
            self.reader.close()
        finally:
            super().close()

    def cancel(self) -> None:
        cancel: Any = getattr(self.reader, "cancel", None)
        if cancel is not None:
            cancel()
