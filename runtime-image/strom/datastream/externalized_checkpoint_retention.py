"""`ExternalizedCheckpointRetention` (`pyflink.datastream.externalized_checkpoint_retention`, Flink 1.20).

Flink 1.20's name for ExternalizedCheckpointCleanup, with the same members and the same key
(`execution.checkpointing.externalized-checkpoint-retention`).
"""

from __future__ import annotations

from enum import Enum


class ExternalizedCheckpointRetention(Enum):
    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


__all__ = ["ExternalizedCheckpointRetention"]
