"""Routing records between stages: the engine's partitioners, as Spark shuffle keys.

A producer partition's records on one route become `(shuffle key, (input index, value, timestamp))`
pairs. The shuffle key starts with the target partition (which Spark partitions by) and goes on
with what the consumer sorts by: the broadcast side first where broadcast state is built, then the
timestamp for keyed consumers, then input, producer and sequence number, so the order within a
partition is deterministic and a producer's records keep their order. Target partitions follow the
engine's RecordWriter exactly: key groups by `stable_hash` for hash edges (so a key lands on the
subtask it would in STREAMING mode), round-robin from the producer's index for rebalance, pointwise
for forward and rescale.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from typing import Any

from strom.batch.plan import StageInput, StageSpec
from strom.common.key_groups import KeyGroupAssigner
from strom.common.time import MIN_WATERMARK
from strom.runtime.execution_graph import pointwise_targets

Record = tuple[int, Any, Any]  # (route, value, timestamp) as stages emit them
ShuffleKey = tuple[int, int, int, int, int, int]  # (target, phase, time, input, producer, sequence)


def target_partition(key: ShuffleKey) -> int:
    """Spark's partition function over shuffle keys."""
    return key[0]


def route_records(
    inp: StageInput, consumer: StageSpec, producer: int, records: Iterable[Record]
) -> Iterator[tuple[ShuffleKey, tuple[int, Any, Any]]]:
    """The records of `producer`'s partition on route `inp.route`, keyed for the consumer's shuffle."""
    # hot path: called per record
    n = consumer.parallelism
    route, index = inp.route, inp.input_index
    phase = 0 if consumer.broadcast_first and index == 2 else 1
    by_time = consumer.sort_by_time
    kind = inp.partitioner
    select = _target_selector(inp, consumer, producer)
    seq = 0
    for r, value, ts in records:
        if r != route:
            continue
        seq += 1
        t = (ts if ts is not None else MIN_WATERMARK) if by_time else 0
        payload = (index, value, ts)
        if kind == "broadcast":
            for target in range(n):
                yield (target, phase, t, index, producer, seq), payload
        else:
            yield (select(value), phase, t, index, producer, seq), payload


def _target_selector(inp: StageInput, consumer: StageSpec, producer: int) -> Any:
    kind, n = inp.partitioner, consumer.parallelism
    if kind == "hash":
        key_of = inp.key_selector.get_key
        assigner = KeyGroupAssigner(consumer.max_parallelism)
        max_p = consumer.max_parallelism

        def by_key(value: Any) -> int:
            return assigner.key_group(key_of(value)) * n // max_p

        return by_key
    if kind == "custom":
        key_of, part = inp.key_selector.get_key, inp.custom_partitioner.partition

        def by_custom(value: Any) -> int:
            t = part(key_of(value), n)
            if not 0 <= t < n:
                raise ValueError(f"custom partitioner returned partition {t}, expected 0..{n - 1}")
            return t

        return by_custom
    if kind == "broadcast":
        return lambda value: 0  # unused: route_records sends broadcast records to every partition itself
    if kind == "global" or n == 1:
        return lambda value: 0
    if kind in ("forward", "rescale"):
        targets = pointwise_targets(producer, inp.producer_parallelism, n)
        return _round_robin(targets, 0)
    if kind == "rebalance":
        return _round_robin(list(range(n)), producer % n)
    if kind == "shuffle":
        rnd = random.Random(producer)
        return lambda value: rnd.randrange(n)
    raise ValueError(f"unknown partitioner {kind!r}")


def _round_robin(targets: list[int], start: int) -> Any:
    if len(targets) == 1:
        only = targets[0]
        return lambda value: only
    state = [start]
    k = len(targets)

    def next_target(value: Any) -> int:
        i = state[0]
        state[0] = (i + 1) % k
        return targets[i]

    return next_target
