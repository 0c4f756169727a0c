"""The serialized size of records, estimated cheaply: what buffers and source batches are cut by.

Network buffers and source batches are bounded in bytes (`taskmanager.memory.segment-size`), but records
are Python objects until a remote channel pickles them. Sizing every record would cost a pickling per
record, so a stream's size is sampled once per batch: exact for bytes and strings (their length),
pickled for other records.
"""

from __future__ import annotations

import pickle
from typing import Any

_FIXED_SIZES = {int: 9, float: 9, bool: 1, type(None): 1}


def record_size(value: Any) -> int:
    """Serialized size of one record: exact for bytes and strings, pickled otherwise."""
    t = type(value)
    if t is bytes or t is bytearray or t is str:
        return len(value) + 5
    fixed = _FIXED_SIZES.get(t)
    if fixed is not None:
        return fixed
    try:
        return len(pickle.dumps(value, 5))
    except Exception:  # noqa: BLE001 - cloudpickle will carry it; any estimate beats none
        return 64


class RecordSizeEstimator:
    """Bytes per record of one stream, from the first record of each batch (one sample per batch keeps
    the per-record path free of sizing). `records_for(budget)` is how many records fill `budget` bytes."""

    __slots__ = ("record_bytes",)

    def __init__(self) -> None:
        self.record_bytes = 1

    # hot path: called per batch
    def sample(self, values: list[Any]) -> int:
        if values:
            self.record_bytes = max(1, record_size(values[0]))
        return self.record_bytes

    def records_for(self, budget_bytes: int, cap: int) -> int:
        return max(1, min(cap, budget_bytes // self.record_bytes))
