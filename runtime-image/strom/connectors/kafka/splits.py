"""Kafka partitions as splits: which subtask owns a partition, and a split's progress.

A split is `(topic, partition, next_offset, stop_offset)`: the offset of the next record to read and,
for a bounded source, the offset before which it ends (None: unbounded). Ownership is Flink's
KafkaSourceEnumerator rule, `(java_hash(topic) * 31 & 0x7FFFFFFF) % p + partition) % p`: every
subtask computes it alone, so partitions discovered later go to the same subtask that restored
splits would go to, at any parallelism (the rescaling dealing uses the same rule).
"""

from __future__ import annotations

from collections.abc import Iterable

Split = tuple[str, int, int, int | None]


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (UTF-16 code units, 32-bit wrap-around), as Flink uses it."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def owner(topic: str, partition: int, parallelism: int) -> int:
    start = ((java_string_hash(topic) * 31) & 0x7FFFFFFF) % parallelism
    return (start + partition) % parallelism


def redistribute(splits: Iterable[Split], subtask_index: int, parallelism: int) -> list[Split]:
    """This subtask's share of the pooled splits of all old subtasks."""
    return sorted(s for s in splits if owner(s[0], s[1], parallelism) == subtask_index)


def is_finished(split: Split) -> bool:
    return split[3] is not None and split[2] >= split[3]
