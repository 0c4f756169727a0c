"""A map over bundles of records: the function sees many rows at once (pandas UDFs, columnar Calc).

`function.map_bundle(values) -> list` returns one result per input row, None for a row it drops (a
filter); timestamps follow their rows. Rows are buffered across input batches up to `bundle_size` and
flushed then, `bundle_time_ms` after the first buffered row, before a watermark is forwarded, before a
checkpoint barrier, and when the input ends: no record is ever held across a watermark or a checkpoint
(Flink's python.fn-execution.bundle.size / bundle.time do the same for its Python operators).
"""

from __future__ import annotations

from typing import Any

from strom.runtime.operators.base import StreamOperator


class BundledMapOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._fn = self.function.map_bundle
        self._size = max(1, int(self.params.get("bundle_size", 100_000)))
        self._time_ms = int(self.params.get("bundle_time_ms", 1000))
        self._values: list[Any] = []
        self._timestamps: list[Any] = []
        self._timed = False
        self._timer_armed = False

    # hot path: called per batch; the function runs once per bundle
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._values.extend(values)
        if timestamps is not None:
            self._timed = True
            self._timestamps.extend(timestamps)
        else:
            self._timestamps.extend([None] * len(values))
        if len(self._values) >= self._size:
            self._flush()
        elif not self._timer_armed and self._time_ms > 0 and self.ctx is not None:
            self._timer_armed = True
            service = self.ctx.processing_time_service
            service.register_timer(service.now() + self._time_ms, self._on_bundle_time)

    def _on_bundle_time(self, _now: int) -> None:
        self._timer_armed = False
        self._flush()

    def _flush(self) -> None:
        values, timestamps = self._values, self._timestamps
        if not values:
            return
        self._values, self._timestamps = [], []
        out = self._fn(values)
        if len(out) != len(values):
            raise RuntimeError(f"operator {self.ctx.operator_name if self.ctx else ''!r}: map_bundle returned "
                               f"{len(out)} results for {len(values)} rows")
        kept = [i for i, v in enumerate(out) if v is not None]
        ts = [timestamps[i] for i in kept] if self._timed else None
        if kept:
            self.output.collect([out[i] for i in kept] if len(kept) != len(out) else out, ts)

    def process_watermark(self, timestamp: int) -> None:
        self._flush()
        super().process_watermark(timestamp)

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self._flush()

    def end_input(self, input_index: int = 1) -> None:
        self._flush()

    def finish(self) -> None:
        self._flush()
