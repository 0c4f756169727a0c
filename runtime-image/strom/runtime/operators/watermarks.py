"""Drives a WatermarkStrategy inside a source or timestamp-assigner operator.

Timestamps are extracted per record; the built-in generators see each batch's maximum
(one call per batch instead of per record); custom generators get `on_event` per
record, and a watermark they emit mid-batch cuts the batch there so that records and
watermarks stay in order. Periodic emission and idleness run on the task's
processing-time service.
"""

from __future__ import annotations

from typing import Any

from strom.common import config_options as opts
from strom.common.time import MAX_WATERMARK, MIN_WATERMARK
from strom.common.watermark_strategy import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    Watermark,
    WatermarkStrategy,
)


class WatermarkEmitter:
    def __init__(self, strategy: WatermarkStrategy, output: Any, processing_time_service: Any, config: Any) -> None:
        self.output = output
        self.pts = processing_time_service
        assigner = strategy.timestamp_assigner
        self.extract = assigner.extractor() if assigner is not None else None
        self.generator = strategy.create_watermark_generator()
        self.batched = type(self.generator) in (BoundedOutOfOrdernessWatermarks, AscendingTimestampsWatermarks)
        self.no_watermarks = type(self.generator) is NoWatermarksGenerator
        self.interval = config.get(opts.AUTO_WATERMARK_INTERVAL) if config is not None else 200
        self.idleness_ms = strategy.idleness_ms
        self.last_emitted = MIN_WATERMARK
        self.idle = False
        self._last_record_at = processing_time_service.now()
        self._pending: list[int] = []
        self._stopped = False

    # -- WatermarkOutput, as generators see it --------------------------------------------------
    def emit_watermark(self, watermark: Watermark) -> None:
        self._pending.append(watermark.timestamp)

    def mark_idle(self) -> None:
        if not self.idle:
            self.idle = True
            self.output.emit_status(True)

    def mark_active(self) -> None:
        if self.idle:
            self.idle = False
            self.output.emit_status(False)

    def _flush_pending(self) -> None:
        pending, self._pending = self._pending, []
        for ts in pending:
            if ts > self.last_emitted:
                self.last_emitted = ts
                self.output.emit_watermark(ts)

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        if self.interval > 0 and not self.no_watermarks or self.idleness_ms:
            period = self.interval if self.interval > 0 else 200
            self.pts.register_timer(self.pts.now() + period, self._on_periodic)

    def stop(self) -> None:
        self._stopped = True

    def _on_periodic(self, now: int) -> None:
        if self._stopped:
            return
        if not self.no_watermarks and self.interval > 0:
            self.generator.on_periodic_emit(self)
        if self.idleness_ms and not self.idle and now - self._last_record_at >= self.idleness_ms:
            self.mark_idle()
        if self._pending:
            if self.idle and any(ts > self.last_emitted for ts in self._pending):
                self.mark_active()
            self._flush_pending()
        period = self.interval if self.interval > 0 else 200
        self.pts.register_timer(now + period, self._on_periodic)

    # -- records ------------------------------------------------------------------------------------
    # hot path: called per batch
    def emit_batch(self, values: list[Any], timestamps: list[Any] | None) -> None:
        if not values:
            return
        if self.idleness_ms:
            self._last_record_at = self.pts.now()
        if self.idle:
            self.mark_active()
        extract = self.extract
        if extract is not None:
            if timestamps is None:
                ts = [extract(v, MIN_WATERMARK) for v in values]
            else:
                ts = [
                    extract(v, t if t is not None else MIN_WATERMARK) for v, t in zip(values, timestamps, strict=True)
                ]
        else:
            ts = timestamps
        if self.batched:
            if ts is not None:
                self.generator.observe_max(max(ts))
            self.output.collect(values, ts)
            return
        if self.no_watermarks or ts is None:
            self.output.collect(values, ts)
            return
        on_event = self.generator.on_event
        start = 0
        for i, v in enumerate(values):
            on_event(v, ts[i], self)
            if self._pending:
                self.output.collect(values[start : i + 1], ts[start : i + 1])
                start = i + 1
                self._flush_pending()
        if start < len(values):
            self.output.collect(values[start:], ts[start:])

    def emit_final(self) -> None:
        """End of a bounded input: the maximum watermark."""
        self._stopped = True
        if self.last_emitted < MAX_WATERMARK:
            self.last_emitted = MAX_WATERMARK
            self.output.emit_watermark(MAX_WATERMARK)
