"""Keyed reduce and built-in aggregations in BATCH mode: one final value per key.

In STREAMING mode `key_by(...).reduce(f)` emits a running result for every record; in BATCH mode,
as in Flink, it emits each key's result once the input ended (with the timestamp of the key's last
record). The reduce function and the aggregations are the engine's own; only when they emit
changes.
"""

from __future__ import annotations

from typing import Any

from strom.common.time import MAX_WATERMARK
from strom.runtime.operators.basic import AggregationOperator, ReduceOperator
from strom.runtime.operators.registry import register_operator_kind


class _FinalValues:
    """Mixin over ReduceOperator: fold per key without emitting; emit the finals before the last watermark."""

    _fn: Any
    _acc: dict[Any, Any]
    backend: Any
    output: Any

    def open(self) -> None:
        super().open()  # type: ignore[misc]
        self._last_ts: dict[Any, Any] = {}

    # hot path: called per batch, one user call per record
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        fn, acc, last_ts, backend = self._fn, self._acc, self._last_ts, self.backend
        ks = self.keys_for(values, keys)  # type: ignore[attr-defined]
        for i, (k, v) in enumerate(zip(ks, values, strict=True)):
            backend.current_key = k
            acc[k] = fn(acc[k], v) if k in acc else v
            if timestamps is not None:
                last_ts[k] = timestamps[i]

    def process_watermark(self, timestamp: int) -> None:
        if timestamp >= MAX_WATERMARK and self._acc:
            keys = list(self._acc)
            ts = [self._last_ts.get(k) for k in keys]
            self.output.collect([self._acc[k] for k in keys], ts if any(t is not None for t in ts) else None)
            self._acc.clear()
        super().process_watermark(timestamp)  # type: ignore[misc]


class FinalReduceOperator(_FinalValues, ReduceOperator):
    pass


class FinalAggregationOperator(_FinalValues, AggregationOperator):
    pass


register_operator_kind("batch_reduce", f"{__name__}:FinalReduceOperator")
register_operator_kind("batch_aggregation", f"{__name__}:FinalAggregationOperator")
