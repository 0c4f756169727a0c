"""Where a Kafka split starts and stops: PyFlink's `KafkaOffsetsInitializer` and its resolution.

An initializer is a description (picklable, shipped with the job); `resolve` turns it into a
concrete offset per partition when a split is created, asking the brokers through a small client
protocol (`OffsetClient`: low/high watermarks, committed offsets, offsets for a timestamp), so that
a split's start offset is a number a checkpoint can keep, never "latest" resolved again later.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class KafkaOffsetResetStrategy(Enum):
    """What a committed-offsets initializer does for a partition without a committed offset."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2


@dataclass(frozen=True, slots=True)
class KafkaTopicPartition:
    topic: str
    partition: int


class OffsetClient(Protocol):
    def watermarks(self, topic: str, partition: int) -> tuple[int, int]: ...

    def committed(self, topic: str, partition: int) -> int | None: ...

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None: ...


class KafkaOffsetsInitializer:
    """`earliest()`, `latest()`, `committed_offsets(reset)`, `timestamp(ms)`, `offsets({tp: offset}, reset)`."""

    def __init__(
        self,
        kind: str,
        *,
        reset: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
        timestamp_ms: int = 0,
        offsets: dict[KafkaTopicPartition, int] | None = None,
    ) -> None:
        self.kind = kind
        self.reset = reset
        self.timestamp_ms = timestamp_ms
        self.offsets = dict(offsets or {})

    def __repr__(self) -> str:
        return f"KafkaOffsetsInitializer.{self.kind}"

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("earliest")

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("latest")

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("committed", reset=offset_reset_strategy)

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("timestamp", timestamp_ms=int(timestamp))

    @staticmethod
    def offsets(
        offsets: dict[KafkaTopicPartition, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        for tp in offsets:
            if not isinstance(tp, KafkaTopicPartition):
                raise TypeError(f"KafkaOffsetsInitializer.offsets: keys must be KafkaTopicPartition, got {tp!r}")
        return KafkaOffsetsInitializer("specific", reset=offset_reset_strategy, offsets=offsets)

    def resolve(self, client: OffsetClient, topic: str, partition: int) -> int:
        """The concrete offset of the first record to read from (or, as a stopping initializer, the
        offset before which to stop) for `topic`/`partition`."""
        low, high = client.watermarks(topic, partition)
        if self.kind == "earliest":
            return low
        if self.kind == "latest":
            return high
        if self.kind == "timestamp":
            found = client.offset_for_time(topic, partition, self.timestamp_ms)
            return high if found is None or found < 0 else found  # no record at/after it: the end
        if self.kind == "specific":
            given = self.offsets.get(KafkaTopicPartition(topic, partition))
            if given is not None:
                return min(max(given, low), high)
            return self._reset(client, topic, partition, low, high)
        if self.kind == "committed":
            committed = client.committed(topic, partition)
            if committed is not None and committed >= 0:
                return committed
            return self._reset(client, topic, partition, low, high)
        raise ValueError(f"unknown offsets initializer {self.kind!r}")

    def _reset(self, client: OffsetClient, topic: str, partition: int, low: int, high: int) -> int:
        if self.kind == "specific" and self.reset is KafkaOffsetResetStrategy.NONE:
            raise ValueError(f"no starting offset given for {topic}-{partition} and reset strategy NONE")
        if self.reset is KafkaOffsetResetStrategy.EARLIEST:
            return low
        if self.reset is KafkaOffsetResetStrategy.LATEST:
            return high
        raise ValueError(
            f"partition {topic}-{partition} has no committed offset for the group and the reset strategy is NONE; "
            "use KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST) or LATEST"
        )
