"""The watermark fast path: `rowtime - INTERVAL ..` read as record timestamp less an offset must give the
milliseconds that evaluating the expression gives (checked against datetime arithmetic), and anything else
must keep the per-row evaluation."""

from __future__ import annotations

import datetime

from strom.common.watermark_strategy import Watermark
from strom.table.expressions import col, lit
from strom.table.planner.event_time import SqlWatermarkGenerator, rowtime_offset_ms

EPOCH = datetime.datetime(1970, 1, 1)


class _Out:
    def __init__(self) -> None:
        self.marks: list[int] = []

    def emit_watermark(self, watermark: Watermark) -> None:
        self.marks.append(watermark.timestamp)


def test_rowtime_minus_interval_is_an_offset_equal_to_datetime_arithmetic() -> None:
    delay = datetime.timedelta(seconds=4, milliseconds=7)
    assert rowtime_offset_ms(col("ts") - lit(delay), "ts") == 4007
    times = [EPOCH + datetime.timedelta(milliseconds=ms, microseconds=us)
             for ms, us in [(5, 0), (10_000, 999), (9_000, 1), (-3, 500), (25_000, 0)]]
    fast, slow = _Out(), _Out()
    gen_fast = SqlWatermarkGenerator(lambda row: None, 0, 4007)
    gen_slow = SqlWatermarkGenerator(lambda row: row - delay, 0)
    for t in times:
        ts = (t - EPOCH) // datetime.timedelta(milliseconds=1)
        gen_fast.on_event(t, ts, fast)
        gen_slow.on_event(t, ts, slow)
    reference = []
    for t in times:  # plain Python: floor of (t - delay) in ms, kept at its running maximum
        ms = (t - delay - EPOCH) // datetime.timedelta(milliseconds=1)
        if not reference or ms > reference[-1]:
            reference.append(ms)
    assert fast.marks == slow.marks == reference


def test_other_watermark_expressions_are_evaluated_per_row() -> None:
    assert rowtime_offset_ms(col("ts"), "ts") is None
    assert rowtime_offset_ms(col("other") - lit(datetime.timedelta(seconds=1)), "ts") is None
    assert rowtime_offset_ms(col("ts") - lit(datetime.timedelta(microseconds=1500)), "ts") is None
    assert rowtime_offset_ms(col("ts") + lit(datetime.timedelta(seconds=1)), "ts") is None
