"""Routing records between stages: the engine's partitioners, applied to a batch of records at once.

A `BatchRouter` answers, for a batch of values a producer partition sends on one route, which
consumer partition each value goes to. Targets follow the engine's RecordWriter exactly: key groups
by `stable_hash` for hash edges (so a key lands on the subtask it would in STREAMING mode),
round-robin from the producer's index for rebalance, pointwise for forward and rescale. A batch
that goes to one partition as a whole (global, forward, a single consumer) is answered with that
partition's number instead of a list, and a broadcast batch with `EVERY_PARTITION`, so that the
shuffle writer does no per-record work for them.
"""

from __future__ import annotations

import random
from typing import Any

from strom.batch.plan import StageInput, StageSpec
from strom.common.key_groups import KeyGroupAssigner, describe_key_selector
from strom.runtime.execution_graph import pointwise_targets

EVERY_PARTITION = -1  # a broadcast batch goes to every consumer partition

Targets = int | list[int]  # one partition for the whole batch, or one per value


class BatchRouter:
    """The target partitions of batches of values on one route, from one producer partition."""

    def __init__(self, inp: StageInput, consumer: StageSpec, producer: int) -> None:
        self.partitions = n = consumer.parallelism
        kind = inp.partitioner
        self._per_value: Any = None
        self._whole: int | None = None
        self._cycle: list[int] = []
        self._next = 0
        if kind == "custom":  # called even for one partition: an out-of-range answer is an error
            self._per_value = _by_custom_partitioner(inp, n)
        elif kind == "broadcast":
            self._whole = EVERY_PARTITION
        elif kind == "global" or n == 1:
            self._whole = 0
        elif kind == "hash":
            self._per_value = _by_key_group(inp, consumer)
        elif kind in ("forward", "rescale", "rebalance"):
            if kind == "rebalance":
                self._cycle, self._next = list(range(n)), producer % n
            else:
                self._cycle = pointwise_targets(producer, inp.producer_parallelism, n)
            if len(self._cycle) == 1:
                self._whole = self._cycle[0]
        elif kind == "shuffle":
            rnd = random.Random(producer)
            self._per_value = lambda value: rnd.randrange(n)
        else:
            raise ValueError(f"unknown partitioner {kind!r}")

    def targets(self, values: list[Any]) -> Targets:
        """The partition of every value (a list), or the one partition of all of them (an int)."""
        # hot path: called per batch, one partitioner call per record
        if self._whole is not None:
            return self._whole
        if self._per_value is not None:
            return list(map(self._per_value, values))
        cycle, k, start = self._cycle, len(self._cycle), self._next
        self._next = (start + len(values)) % k
        return [cycle[(start + i) % k] for i in range(len(values))]


def _by_key_group(inp: StageInput, consumer: StageSpec) -> Any:
    key_of = inp.key_selector.get_key
    owner = f"{describe_key_selector(inp.key_selector)} of {consumer.name!r}"
    key_group = KeyGroupAssigner(consumer.max_parallelism, owner=owner).key_group
    n, max_p = consumer.parallelism, consumer.max_parallelism

    def by_key(value: Any) -> int:
        return key_group(key_of(value)) * n // max_p

    return by_key


def _by_custom_partitioner(inp: StageInput, n: int) -> Any:
    key_of, part = inp.key_selector.get_key, inp.custom_partitioner.partition

    def by_custom(value: Any) -> int:
        t = part(key_of(value), n)
        if not 0 <= t < n:
            raise ValueError(f"custom partitioner returned partition {t}, expected 0..{n - 1}")
        return t

    return by_custom
