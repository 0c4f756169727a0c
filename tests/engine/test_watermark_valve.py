"""The watermark valve: min over active channels, idle channels excluded, never backwards."""

from strom.common.time import MAX_WATERMARK
from strom.runtime.tasks.watermark_valve import StatusWatermarkValve


def test_min_over_channels_and_never_backwards():
    v = StatusWatermarkValve(2)
    assert v.input_watermark(0, 10) is None
    assert v.input_watermark(1, 5) == 5
    assert v.input_watermark(1, 3) is None  # a channel's watermark never goes back
    assert v.input_watermark(1, 20) == 10


def test_idle_channel_is_excluded_and_rejoins():
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 10)
    assert v.input_status(1, True) == (10, None)
    assert v.input_watermark(0, 15) == 15
    assert v.input_status(1, False) == (None, None)
    v.input_watermark(1, 12)
    assert v.input_watermark(0, 30) is None  # min is now channel 1 again
    assert v.input_watermark(1, 31) == 30


def test_all_idle_flushes_highest_watermark_and_reports_idle():
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 99)
    assert v.input_status(0, True) == (None, None)
    assert v.input_status(1, True) == (99, True)
    assert v.input_status(1, False) == (None, False)


def test_finished_channel_counts_as_max():
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 7)
    assert v.channel_finished(1) == 7
    assert v.channel_finished(0) == MAX_WATERMARK
