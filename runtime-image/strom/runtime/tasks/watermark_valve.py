"""Combines the watermarks of one input's channels: min over active channels, never backwards.

Idle channels are left out of the minimum; finished channels count as the maximum
watermark. When every channel is idle the input is idle.
"""

from __future__ import annotations

from strom.common.time import MAX_WATERMARK, MIN_WATERMARK


class StatusWatermarkValve:
    def __init__(self, num_channels: int) -> None:
        self.watermarks = [MIN_WATERMARK] * num_channels
        self.idle = [False] * num_channels
        self.output_watermark = MIN_WATERMARK
        self.output_idle = False

    def _active_min(self) -> int | None:
        active = [wm for wm, idle in zip(self.watermarks, self.idle, strict=True) if not idle]
        return min(active) if active else None

    def input_watermark(self, channel: int, timestamp: int) -> int | None:
        """New combined watermark to forward, or None."""
        if timestamp > self.watermarks[channel]:
            self.watermarks[channel] = timestamp
        return self._advance()

    def input_status(self, channel: int, idle: bool) -> tuple[int | None, bool | None]:
        """(watermark to forward or None, status change to forward or None)."""
        self.idle[channel] = idle
        new_idle = all(self.idle)
        status = None
        if new_idle != self.output_idle:
            self.output_idle = new_idle
            status = new_idle
        if not new_idle:
            return self._advance(), status
        # Every channel is idle, so none will advance its watermark for now: flush the highest
        # watermark seen on any channel (Flink's findAndOutputMaxWatermarkAcrossAllChannels).
        highest = max(self.watermarks)
        if highest > self.output_watermark:
            self.output_watermark = highest
            return highest, status
        return None, status

    def channel_finished(self, channel: int) -> int | None:
        self.idle[channel] = False
        self.watermarks[channel] = MAX_WATERMARK
        return self._advance()

    def _advance(self) -> int | None:
        m = self._active_min()
        if m is not None and m > self.output_watermark:
            self.output_watermark = m
            return m
        return None
