"""Helpers for testing Strom jobs in a few lines (as `bytewax.testing` / `kopf.testing`).

    from strom.testing import collect, punctuated_watermarks
    result = collect(env.from_collection(events, ...).key_by(...).window(...).reduce(...))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strom.common.watermark_strategy import Watermark, WatermarkGenerator, WatermarkOutput, WatermarkStrategy


def collect(stream: Any, limit: int | None = None) -> list[Any]:
    """Run the stream's job and return every record it produced (at most `limit`)."""
    if limit is not None:
        return stream.execute_and_collect(limit=limit)
    with stream.execute_and_collect() as results:
        return list(results)


class PunctuatedBoundedOutOfOrderness(WatermarkGenerator):
    """Emits `max timestamp - bound - 1` after every event: deterministic watermarks for tests,
    independent of wall-clock timing (unlike the periodic generators)."""

    def __init__(self, bound_ms: int) -> None:
        self.bound_ms = bound_ms
        self.max_ts: int | None = None

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if self.max_ts is None or event_timestamp > self.max_ts:
            self.max_ts = event_timestamp
            output.emit_watermark(Watermark(event_timestamp - self.bound_ms - 1))


def punctuated_watermarks(
    bound_ms: int, timestamp_of: Callable[[Any], int] | None = None
) -> WatermarkStrategy:
    """A WatermarkStrategy with a per-event watermark `max_ts - bound - 1`."""
    strategy = WatermarkStrategy.for_generator(lambda ctx: PunctuatedBoundedOutOfOrderness(bound_ms))
    if timestamp_of is not None:
        strategy = strategy.with_timestamp_assigner(lambda e, _ts: timestamp_of(e))
    return strategy
