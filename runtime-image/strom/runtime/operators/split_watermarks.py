"""Per-split watermarks in a source (Flink's split-aware watermark generation, e.g. per Kafka partition).

A reader that says which split each record of a batch came from (`last_splits`, parallel to the
batch) and which splits it currently reads (`current_splits()`) gets one watermark generator per
split instead of one for the merged stream. The source's watermark is the minimum over the splits
that are not idle: a split without records for the strategy's idleness timeout (`with_idleness`)
stops holding the others back, and the source is idle only when all its splits are. A split the
reader no longer reads (e.g. one that reached its stopping offset) no longer counts.
"""

from __future__ import annotations

from typing import Any

from strom.common import config_options as opts
from strom.common.time import MAX_WATERMARK, MIN_WATERMARK
from strom.common.watermark_strategy import NoWatermarksGenerator, Watermark, WatermarkStrategy


class _Split:
    __slots__ = ("generator", "watermark", "last_record_at", "idle")

    def __init__(self, generator: Any, now: int) -> None:
        self.generator = generator
        self.watermark = MIN_WATERMARK
        self.last_record_at = now
        self.idle = False

    # WatermarkOutput, as this split's generator sees it
    def emit_watermark(self, watermark: Watermark) -> None:
        if watermark.timestamp > self.watermark:
            self.watermark = watermark.timestamp

    def mark_idle(self) -> None:
        self.idle = True

    def mark_active(self) -> None:
        self.idle = False


class SplitWatermarkEmitter:
    def __init__(
        self, strategy: WatermarkStrategy, output: Any, processing_time_service: Any, config: Any, reader: Any
    ) -> None:
        self.strategy = strategy
        self.output = output
        self.pts = processing_time_service
        self.reader = reader
        assigner = strategy.timestamp_assigner
        self.extract = assigner.extractor() if assigner is not None else None
        self.no_watermarks = isinstance(strategy.create_watermark_generator(), NoWatermarksGenerator)
        self.interval = config.get(opts.AUTO_WATERMARK_INTERVAL) if config is not None else 200
        self.idleness_ms = strategy.idleness_ms
        self.splits: dict[Any, _Split] = {}
        self.last_emitted = MIN_WATERMARK
        self.idle = False
        self._stopped = False

    def _split(self, split_id: Any, now: int) -> _Split:
        split = self.splits.get(split_id)
        if split is None:
            split = self.splits[split_id] = _Split(self.strategy.create_watermark_generator(), now)
        return split

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        if self.interval > 0 and not self.no_watermarks or self.idleness_ms:
            self.pts.register_timer(self.pts.now() + self._period(), self._on_periodic)

    def _period(self) -> int:
        return self.interval if self.interval > 0 else 200

    def stop(self) -> None:
        self._stopped = True

    def _on_periodic(self, now: int) -> None:
        if self._stopped:
            return
        current = getattr(self.reader, "current_splits", None)
        if current is not None:
            live = set(current())
            for split_id in live:
                self._split(split_id, now)
            for gone in [s for s in self.splits if s not in live]:
                del self.splits[gone]
        for split in self.splits.values():
            if not self.no_watermarks and self.interval > 0:
                split.generator.on_periodic_emit(split)
            if self.idleness_ms and now - split.last_record_at >= self.idleness_ms:
                split.idle = True
        self._combine()
        self.pts.register_timer(now + self._period(), self._on_periodic)

    def _combine(self) -> None:
        active = [s for s in self.splits.values() if not s.idle]
        if not active:
            if self.splits and not self.idle:
                self.idle = True
                self.output.emit_status(True)
            return
        if self.no_watermarks:
            return
        watermark = min(s.watermark for s in active)
        if watermark > self.last_emitted:
            if self.idle:
                self.idle = False
                self.output.emit_status(False)
            self.last_emitted = watermark
            self.output.emit_watermark(watermark)

    # -- records ------------------------------------------------------------------------------------
    def emit_batch(self, values: list[Any], timestamps: list[Any] | None) -> None:
        if not values:
            return
        now = self.pts.now()
        split_ids = self.reader.last_splits
        extract = self.extract
        if extract is not None:
            base = timestamps if timestamps is not None else [MIN_WATERMARK] * len(values)
            ts = [extract(v, t if t is not None else MIN_WATERMARK) for v, t in zip(values, base, strict=True)]
        else:
            ts = timestamps
        if self.idle:
            self.idle = False
            self.output.emit_status(False)
        self.output.collect(values, ts)
        if ts is None:
            for split_id in set(split_ids):
                split = self._split(split_id, now)
                split.last_record_at, split.idle = now, False
            return
        for v, t, split_id in zip(values, ts, split_ids, strict=True):
            split = self._split(split_id, now)
            split.last_record_at, split.idle = now, False
            split.generator.on_event(v, t, split)
        self._combine()  # punctuated generators may have emitted (after the records: always safe)

    def emit_final(self) -> None:
        self._stopped = True
        if self.last_emitted < MAX_WATERMARK:
            self.last_emitted = MAX_WATERMARK
            self.output.emit_watermark(MAX_WATERMARK)
