"""The consumer side of a chunked shuffle: every producer's chunks, read in the consumer's order.

The order is the one Flink's batch mode gives an operator, and it is exact (the differential tests
pin it):

1. where broadcast state is built, the whole broadcast side (input 2) first;
2. then, for keyed consumers (`sort_by_time`), records by timestamp, records without one first;
   equal timestamps, and every consumer that does not sort, in producer order: input 1 before
   input 2, producer partition 0 before 1 (of streams united into one input, the route first
   planned before the next), and each producer's records in the order it sent them.

Chunks arrive in whatever order Spark fetched them; they are grouped into runs by their headers
and kept serialized (`chunk_store`: in memory up to a budget, then in a local file), and only
decoded one chunk per run at a time. Runs of a sorting consumer are merged a slice at a time: every record earlier
than the earliest end of a decoded chunk can be emitted, and a stable sort of those slices (C code,
not a heap step per record) puts them in order.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import Any

from strom.batch.chunk_store import ChunkRef, ChunkStore, spill_directory
from strom.batch.chunks import Chunk, decode_columns, sort_times
from strom.batch.plan import StageSpec

Batch = tuple[int, list[Any], list[Any] | None]  # (input index, values, timestamps or None)


class RunCursor:
    """A run's chunks (serialized, in order) and the one decoded at the moment."""

    __slots__ = ("input_index", "_store", "_pending", "values", "stamps", "times", "pos")

    def __init__(self, input_index: int, chunks: list[ChunkRef], store: ChunkStore) -> None:
        self.input_index = input_index
        self._store = store
        self._pending = chunks[::-1]  # popped from the end; a decoded chunk's bytes are dropped
        self.values: list[Any] = []
        self.stamps: list[Any] | None = None
        self.times: list[Any] = []
        self.pos = 0

    def load(self, *, with_times: bool) -> bool:
        """Decode the next chunk; False (and nothing loaded) when the run is done."""
        while self._pending:
            values, stamps = decode_columns(self._store.get(self._pending.pop()))
            if values:
                self.values, self.stamps, self.pos = values, stamps, 0
                if with_times:
                    self.times = sort_times(stamps, len(values))
                    if self.stamps is None:
                        self.stamps = [None] * len(values)
                return True
        self.values, self.stamps, self.times, self.pos = [], None, [], 0
        return False


def group_runs(consumer: StageSpec, records: Iterable[tuple[int, Chunk]], store: ChunkStore) -> list[list[RunCursor]]:
    """The runs of each phase (broadcast side first where it applies), each phase's in producer order."""
    grouped: dict[tuple[int, int, int, int, int], list[tuple[int, ChunkRef]]] = {}
    broadcast_first = consumer.broadcast_first
    put = store.put
    for _target, (input_index, producer, route, run, seq, data) in records:
        phase = 0 if broadcast_first and input_index == 2 else 1
        grouped.setdefault((phase, input_index, producer, route, run), []).append((seq, put(data)))
    phases: dict[int, list[RunCursor]] = {}
    for key in sorted(grouped):
        chunks = sorted(grouped.pop(key), key=itemgetter(0))
        phases.setdefault(key[0], []).append(RunCursor(key[1], [ref for _seq, ref in chunks], store))
    return [phases[p] for p in sorted(phases)]


def read_shuffle(
    consumer: StageSpec, records: Iterable[tuple[int, Chunk]], *, batch_records: int, memory_bytes: int
) -> Iterator[Batch]:
    """A consumer partition's input as batches of at most `batch_records` records of one input;
    past `memory_bytes` of chunks, the rest wait in a local file."""
    store = ChunkStore(memory_bytes, spill_directory())
    try:
        for runs in group_runs(consumer, records, store):
            if consumer.sort_by_time:
                yield from merge_runs(runs, batch_records=batch_records)
            else:
                for run in runs:
                    while run.load(with_times=False):
                        yield from _batches(run.input_index, run.values, run.stamps, batch_records)
    finally:
        store.close()


def merge_runs(runs: list[RunCursor], *, batch_records: int) -> Iterator[Batch]:
    """The records of runs sorted by time, merged by time; equal times in the order of `runs`."""
    active = [r for r in runs if r.load(with_times=True)]
    while len(active) > 1:
        # Nothing still encoded is earlier than a decoded chunk's last time, so every record before the
        # earliest such time is decoded now and can go.
        bound = min(r.times[-1] for r in active)
        taken = []
        for r in active:
            end = bisect_left(r.times, bound, r.pos)
            if end > r.pos:
                taken.append((r.input_index, r.values[r.pos : end], r.stamps[r.pos : end], r.times[r.pos : end]))  # type: ignore[index]
                r.pos = end
        if taken:
            yield from _merged(taken, batch_records)
        else:
            # Every record left is at `bound` or later: those at `bound` go run after run, including
            # those in a run's next chunks.
            for r in active:
                while True:
                    end = bisect_right(r.times, bound, r.pos)
                    if end > r.pos:
                        yield from _batches(r.input_index, r.values[r.pos : end], r.stamps[r.pos : end], batch_records)  # type: ignore[index]
                        r.pos = end
                    if r.pos < len(r.times) or not r.load(with_times=True):
                        break
        active = [r for r in active if r.pos < len(r.times) or r.load(with_times=True)]
    for r in active:  # the last run needs no merging: the rest of it, chunk after chunk
        while True:
            stamps = None if r.stamps is None else r.stamps[r.pos :]
            yield from _batches(r.input_index, r.values[r.pos :], stamps, batch_records)
            if not r.load(with_times=False):
                break


def _merged(taken: list[tuple[int, list[Any], list[Any], list[Any]]], batch_records: int) -> Iterator[Batch]:
    """Slices (each sorted by time), stably sorted together by time and cut into one-input batches."""
    if len(taken) == 1:
        input_index, values, stamps, _times = taken[0]
        yield from _batches(input_index, values, stamps, batch_records)
        return
    values, stamps, times, inputs = [], [], [], []
    for input_index, vs, ss, ts in taken:
        values += vs
        stamps += ss
        times += ts
        inputs += [input_index] * len(vs)
    order = sorted(range(len(times)), key=times.__getitem__)  # stable: ties stay in run order
    values = [values[i] for i in order]
    stamps = [stamps[i] for i in order]
    if len({t[0] for t in taken}) == 1:
        yield from _batches(taken[0][0], values, stamps, batch_records)
        return
    inputs = [inputs[i] for i in order]
    start = 0
    for i in range(1, len(inputs) + 1):
        if i == len(inputs) or inputs[i] != inputs[start]:
            yield from _batches(inputs[start], values[start:i], stamps[start:i], batch_records)
            start = i


def _batches(input_index: int, values: list[Any], stamps: list[Any] | None, size: int) -> Iterator[Batch]:
    for i in range(0, len(values), size):
        ss = None if stamps is None else stamps[i : i + size]
        yield input_index, values[i : i + size], None if ss is None or ss.count(None) == len(ss) else ss
