"""The producer side of a chunked shuffle: one partition's records on one route, as a few chunks.

Records are routed into a bucket per consumer partition (`routing.BatchRouter`). What a bucket
becomes depends on the order the consumer reads in (`shuffle_read`):

* arrival order (most consumers): the producer's records form one run, cut into chunks as the
  bucket fills; nothing is sorted.
* by timestamp (keyed consumers, Flink's batch rule): buckets fill up to a memory budget, then each
  is sorted by timestamp (stably, so equal times keep arrival order) and written as one run; the
  consumer merges the runs. A producer therefore holds about `RUN_BYTES` of records at a time.

Chunk and run sizes are set in serialized bytes (`CHUNK_BYTES`, `RUN_BYTES`) and converted to
record counts from the measured size of what was written, so small records make big chunks, and a
record larger than a chunk makes a chunk of its own. A broadcast batch is encoded once and the same
chunk is sent to every consumer partition.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from typing import Any

from strom.batch.chunks import PICKLE_PROTOCOL, Chunk, encode_columns, sort_times
from strom.batch.plan import StageInput, StageSpec
from strom.batch.routing import EVERY_PARTITION, BatchRouter

CHUNK_BYTES = 1 << 20  # big enough that per-chunk costs vanish, small enough to decode one per run
RUN_BYTES = 32 << 20  # serialized bytes a sorting producer buffers before it writes its runs
_SAMPLE = 16  # records pickled to guess the record size before anything was written
_FIRST_GUESS = 64  # bytes per record assumed for an empty sample

ShuffleRecord = tuple[int, Chunk]  # (target partition, chunk): one Spark record


class ShuffleWriter:
    """Buckets, sorts (when the consumer needs it) and chunks one producer partition's records."""

    def __init__(
        self,
        *,
        partitions: int,
        input_index: int,
        producer: int,
        route: int = 0,
        sort_by_time: bool,
        chunk_bytes: int = CHUNK_BYTES,
        run_bytes: int = RUN_BYTES,
    ) -> None:
        self.partitions = partitions
        self.input_index = input_index
        self.producer = producer
        self.route = route
        self.sort_by_time = sort_by_time
        self.chunk_bytes = chunk_bytes
        self.run_bytes = run_bytes
        # bucket EVERY_PARTITION (index -1 = the last one) holds broadcast records
        self._values: list[list[Any]] = [[] for _ in range(partitions + 1)]
        self._stamps: list[list[Any]] = [[] for _ in range(partitions + 1)]
        self._buffered = 0
        self._record_bytes: float | None = None  # measured serialized bytes per record
        self._run = 0
        self._seq = 0

    def add(self, targets: int | list[int], values: list[Any], stamps: list[Any] | None) -> Iterator[ShuffleRecord]:
        """Take a batch routed to `targets` (one partition for all, or one per value); yield full chunks."""
        # hot path: called per batch, one append per record when values go to different partitions
        if not values:
            return
        if self._record_bytes is None:
            self._record_bytes = _guess_record_bytes(values)
        if stamps is None:
            stamps = [None] * len(values)
        vb, sb = self._values, self._stamps
        if isinstance(targets, int):
            vb[targets].extend(values)
            sb[targets].extend(stamps)
        else:
            for t, v, s in zip(targets, values, stamps, strict=True):
                vb[t].append(v)
                sb[t].append(s)
        if self.sort_by_time:
            self._buffered += len(values)
            if self._buffered * self._record_bytes >= self.run_bytes:
                yield from self._write_runs()
        else:
            limit = self._chunk_records()
            for target in range(-1, self.partitions):
                if len(vb[target]) >= limit:
                    yield from self._write_chunks(target, vb[target], sb[target])
                    vb[target], sb[target] = [], []

    def finish(self) -> Iterator[ShuffleRecord]:
        """Write what is buffered: the last chunks (and, when sorting, the last runs)."""
        if self.sort_by_time:
            yield from self._write_runs()
            return
        for target in range(-1, self.partitions):
            if self._values[target]:
                yield from self._write_chunks(target, self._values[target], self._stamps[target])
        self._values = self._stamps = []

    def _write_runs(self) -> Iterator[ShuffleRecord]:
        for target in range(-1, self.partitions):
            values, stamps = self._values[target], self._stamps[target]
            if not values:
                continue
            self._values[target], self._stamps[target] = [], []
            times = sort_times(stamps, len(stamps))
            order = sorted(range(len(values)), key=times.__getitem__)  # stable: equal times keep arrival order
            yield from self._write_chunks(target, [values[i] for i in order], [stamps[i] for i in order])
            del values, stamps, order
        self._buffered = 0
        self._run += 1
        self._seq = 0

    def _write_chunks(self, target: int, values: list[Any], stamps: list[Any]) -> Iterator[ShuffleRecord]:
        """Cut one bucket's records (in the order given) into chunks of about `chunk_bytes`."""
        start = 0
        while start < len(values):
            end = start + self._chunk_records()
            data = encode_columns(values[start:end], stamps[start:end])
            self._learn(len(data), min(end, len(values)) - start)
            chunk = Chunk(self.input_index, self.producer, self.route, self._run, self._seq, data)
            self._seq += 1
            if target == EVERY_PARTITION:
                for p in range(self.partitions):
                    yield p, chunk
            else:
                yield target, chunk
            start = end

    def _chunk_records(self) -> int:
        return max(1, int(self.chunk_bytes / (self._record_bytes or _FIRST_GUESS)))

    def _learn(self, size: int, records: int) -> None:
        measured = size / records
        # weighted towards what was just written, so a change in record size is followed within a few chunks
        self._record_bytes = measured if self._record_bytes is None else (self._record_bytes + 3 * measured) / 4


def _guess_record_bytes(values: list[Any]) -> float:
    sample = values[:_SAMPLE]
    return max(1.0, len(pickle.dumps(sample, protocol=PICKLE_PROTOCOL)) / len(sample)) if sample else _FIRST_GUESS


def write_shuffle(
    inp: StageInput, consumer: StageSpec, producer: int, batches: Iterable[tuple[int, list[Any], list[Any] | None]]
) -> Iterator[ShuffleRecord]:
    """The chunks of `producer`'s partition on route `inp.route` for `consumer`'s partitions.

    `batches` are the producer stage's output: (route, values, timestamps or None)."""
    router = BatchRouter(inp, consumer, producer)
    writer = ShuffleWriter(
        partitions=consumer.parallelism,
        input_index=inp.input_index,
        producer=producer,
        route=inp.route,
        sort_by_time=consumer.sort_by_time,
    )
    route = inp.route
    for r, values, stamps in batches:
        if r == route:
            yield from writer.add(router.targets(values), values, stamps)
    yield from writer.finish()
