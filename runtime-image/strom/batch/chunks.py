"""Shuffle chunks: what one Spark shuffle record carries between two stages.

A stage's output crosses a shuffle as a few large records instead of one per engine record: each is
`(target partition, Chunk)`, where the chunk holds consecutive records of one *run* (a sequence the
producer already put in the consumer's order) from one producer partition on one input, as two
columns (values, timestamps) pickled together with protocol 5. Pickling a column costs one C call
instead of a Python round trip per record, and Spark moves a few byte strings instead of millions
of small objects. The header stays outside the pickled bytes so the consumer can put chunks in
order without decoding them.
"""

from __future__ import annotations

import pickle
from typing import Any, NamedTuple

from strom.common.time import MIN_WATERMARK

PICKLE_PROTOCOL = 5


class Chunk(NamedTuple):
    """The `seq`-th chunk of run `run` of `producer`'s partition on route `route` (input `input_index`).

    Several routes can feed one input (a union of streams), so a run is named by its route too."""

    input_index: int
    producer: int
    route: int
    run: int
    seq: int
    data: bytes  # pickled (values, timestamps or None when no record has one)


def encode_columns(values: list[Any], timestamps: list[Any]) -> bytes:
    """One chunk's payload; a timestamp column of only None is left out."""
    stamps = None if timestamps.count(None) == len(timestamps) else timestamps
    return pickle.dumps((values, stamps), protocol=PICKLE_PROTOCOL)


def decode_columns(data: bytes) -> tuple[list[Any], list[Any] | None]:
    values, stamps = pickle.loads(data)
    return values, stamps


def sort_times(stamps: list[Any] | None, count: int) -> list[Any]:
    """The times records sort by: their timestamps, records without one first (at MIN_WATERMARK)."""
    if stamps is None:
        return [MIN_WATERMARK] * count
    if None in stamps:
        return [MIN_WATERMARK if t is None else t for t in stamps]
    return stamps
