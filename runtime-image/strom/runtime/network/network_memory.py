"""Network memory in bytes: buffer sizes, credits per channel, and the budget of one slot worker.

A network buffer holds `taskmanager.memory.segment-size` bytes of serialized records (Flink's memory
segment). Credits count buffers, so what a channel may hold in flight is credits x segment size, whatever
the size of a record: a record larger than a segment spans several buffers (several credits), as in Flink.

Each input channel has `buffers-per-channel` exclusive credits; the gate's `floating-buffers-per-gate`
are spread evenly over its channels (Flink lends floating buffers to channels that announce a backlog; our
consumer does not see the producer's backlog, so they are shared out up front and the gate's total is the
same). Every output channel holds at most one partly filled buffer. A slot worker's subtasks together must
fit in `taskmanager.memory.network.max`, checked before they are deployed.

Records are Python objects until a remote channel serializes them, so the producer side cuts its buffers
by an estimate: the serialized size of a sampled record (`RecordSizeEstimator`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strom.common import config_options as opts
from strom.common.config_options import ConfigError, format_memory_size
from strom.common.record_size import RecordSizeEstimator, record_size

__all__ = ["NetworkBuffers", "RecordSizeEstimator", "record_size"]


@dataclass(frozen=True, slots=True)
class NetworkBuffers:
    """The network memory settings of a job, read once from its configuration."""

    segment_size: int
    exclusive: int  # credits of each input channel
    floating: int  # credits of each input gate, spread over its channels
    max_bytes: int  # network memory of one slot worker
    buffer_records: int  # most records per buffer (small records: a cap on latency and batch size)

    @classmethod
    def from_config(cls, config: Any) -> NetworkBuffers:
        if config is None:
            return cls(32 * 1024, 2, 8, 64 * 1024 * 1024, 1024)
        return cls(
            segment_size=config.get(opts.SEGMENT_SIZE),
            exclusive=config.get(opts.BUFFERS_PER_CHANNEL),
            floating=config.get(opts.FLOATING_BUFFERS),
            max_bytes=config.get(opts.NETWORK_MEMORY_MAX),
            buffer_records=config.get(opts.BUFFER_RECORDS),
        )

    def channel_credits(self, channels_in_gate: int, channel_position: int) -> int:
        """Credits of the channel at `channel_position` in a gate of `channels_in_gate` channels: its
        exclusive buffers and its share of the floating ones (the first channels get the remainder)."""
        share, rest = divmod(self.floating, max(1, channels_in_gate))
        return self.exclusive + share + (1 if channel_position < rest else 0)

    def gate_buffers(self, channels_in_gate: int) -> int:
        return self.exclusive * channels_in_gate + self.floating

    def check_budget(self, *, input_buffers: int, output_channels: int, where: str) -> None:
        """Refuse a deployment whose buffers do not fit in the network memory of a slot worker."""
        needed = (input_buffers + output_channels) * self.segment_size
        if needed > self.max_bytes:
            raise ConfigError(
                f"insufficient network memory for {where}: {input_buffers} input and {output_channels} output "
                f"buffers of {format_memory_size(self.segment_size)} need {format_memory_size(needed)}, but "
                f"'taskmanager.memory.network.max' is {format_memory_size(self.max_bytes)}: raise it, or lower "
                "'taskmanager.network.memory.buffers-per-channel', 'taskmanager.network.memory.floating-buffers-"
                "per-gate' or 'taskmanager.memory.segment-size'"
            )

    def segments(self, nbytes: int) -> int:
        """Buffers `nbytes` of serialized records fill (at least one)."""
        return max(1, -(-nbytes // self.segment_size))
