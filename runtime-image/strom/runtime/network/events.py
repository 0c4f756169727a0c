"""What travels through a channel besides record batches.

A record batch is a plain tuple `(values, timestamps, keys)`: `timestamps` is a list
parallel to `values` or None when the records carry none, `keys` is a list when the
producer already computed the keys (hash partitioning) or None. Everything else is an
event object below; a consumer tells them apart with `type(item) is tuple`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WatermarkEvent:
    timestamp: int


@dataclass(frozen=True, slots=True)
class StreamStatusEvent:
    idle: bool


@dataclass(frozen=True, slots=True)
class EndOfPartition:
    pass


@dataclass(frozen=True, slots=True)
class CheckpointBarrier:
    """Separates the records before checkpoint `checkpoint_id` from those after it (in-band, in order)."""

    checkpoint_id: int
    timestamp: int  # when the coordinator triggered the checkpoint, epoch milliseconds
    # Unaligned (Flink's priority barrier): it overtakes the buffers queued before it, which are stored
    # with the checkpoint as channel state. Savepoints and aligned checkpoints: False.
    unaligned: bool = False
    # An aligned barrier of a checkpoint that may become unaligned: the alignment timeout, measured from
    # `timestamp` (execution.checkpointing.aligned-checkpoint-timeout); -1: stays aligned (savepoints).
    alignment_timeout_ms: int = -1


END_OF_PARTITION = EndOfPartition()
IDLE = StreamStatusEvent(True)
ACTIVE = StreamStatusEvent(False)
