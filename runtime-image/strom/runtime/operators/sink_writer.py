"""The Sink V2 operator behind `ds.sink_to(sink)`: feeds records to the sink's writer.

It owns the writer's lifecycle: created in open(), flushed with end_of_input=True when
the input ends, closed in every case. It knows nothing about what the sink writes.

For a `TwoPhaseCommittingSink` in a job that takes snapshots it is also Flink's committer
operator: before each barrier the writer's committables are taken (`prepare_commit`) and kept
by checkpoint id in the operator's snapshot; `notify_checkpoint_complete(n)` commits those of
checkpoints <= n. A restored subtask commits the committables of the snapshot it restores from
(they were prepared for a checkpoint that completed, whether or not the commit happened before
the failure), each old subtask's by exactly one new subtask, also at another parallelism.
"""

from __future__ import annotations

from typing import Any

from strom.connectors.sink_base import SinkInitContext, TwoPhaseCommittingSink
from strom.runtime.checkpoint.options import takes_snapshots
from strom.runtime.operators.base import StreamOperator
from strom.runtime.operators.sinks import write_each


class _WriterContext:
    """The per-record context; one object reused for every record of the subtask."""

    __slots__ = ("_ts", "_op")

    def __init__(self, op: StreamOperator) -> None:
        self._ts: int | None = None
        self._op = op

    def timestamp(self) -> int | None:
        return self._ts

    def current_watermark(self) -> int:
        return self._op.current_watermark


COMMITTABLES = "committables"


class SinkWriterOperator(StreamOperator):
    def setup(self, ctx: Any, output: Any) -> None:
        super().setup(ctx, output)
        sink = self.params["sink"]
        self._two_phase = (
            isinstance(sink, TwoPhaseCommittingSink) and ctx.config is not None and takes_snapshots(ctx.config)
        )
        self._committer = sink.create_committer() if self._two_phase else None
        self._pending: dict[int, list[Any]] = {}  # checkpoint id -> committables prepared for it

    def open(self) -> None:
        super().open()
        ctx = self.ctx
        assert ctx is not None
        init = SinkInitContext(
            subtask_index=ctx.subtask_index,
            parallelism=ctx.parallelism,
            attempt_number=ctx.attempt,
            processing_time_service=ctx.processing_time_service,
            config=ctx.config,
            checkpointing=self._two_phase,
            operator_uid=ctx.operator_uid,
            metric_group=ctx.metrics,
        )
        self.writer = self.params["sink"].create_writer(init)
        self._write = self.writer.write
        self._wctx = _WriterContext(self)

    # -- two-phase commit ------------------------------------------------------------------------------
    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        if self._two_phase:
            committables = self.writer.prepare_commit()
            if committables:
                self._pending[checkpoint_id] = committables

    def snapshot_state(self) -> dict[str, Any]:
        if not self._two_phase:
            return {}
        return {COMMITTABLES: (self.ctx.subtask_index, dict(self._pending))}

    def restore_state(self, parts: list[dict[str, Any]]) -> None:
        restored = [p[COMMITTABLES] for p in parts if COMMITTABLES in p]
        if restored and self._committer is None:
            return  # the job no longer checkpoints: nothing will ever commit them here
        me, parallelism = self.ctx.subtask_index, self.ctx.parallelism
        for old_subtask, pending in restored:
            if old_subtask % parallelism == me:
                for cid in sorted(pending):
                    self._committer.commit(pending[cid])  # type: ignore[union-attr]

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self._committer is None:
            return
        for cid in sorted(c for c in self._pending if c <= checkpoint_id):
            self._committer.commit(self._pending.pop(cid))

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        write_each(self._write, self._wctx, values, timestamps)

    def finish(self) -> None:
        self.writer.flush(True)
        if self._committer is not None:
            # end of a bounded input: no checkpoint follows the last records, so they commit now
            for cid in sorted(self._pending):
                self._committer.commit(self._pending.pop(cid))
            self._committer.commit(self.writer.prepare_commit())

    def close(self) -> None:
        writer = getattr(self, "writer", None)
        committer = getattr(self, "_committer", None)
        try:
            if writer is not None:
                writer.close()
        finally:
            try:
                if committer is not None:
                    committer.close()
            finally:
                super().close()
