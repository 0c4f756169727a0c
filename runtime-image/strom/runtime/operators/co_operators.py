"""Two-input operators of ConnectedStreams: co-map, co-flat-map and (keyed) co-process.

Each input has its own user method (`map1`/`map2`, `flat_map1`/`flat_map2`,
`process_element1`/`process_element2`). On keyed connected streams every record sets
the current key from its own input's key selector, so state and timers of both inputs
meet under the same key. The two inputs' watermarks combine as their minimum
(StreamOperator), and event-time timers fire before that watermark is forwarded.
"""

from __future__ import annotations

from typing import Any

from strom.common.row import Row, copy_row
from strom.runtime.operators.base import StreamOperator
from strom.runtime.operators.basic import ProcessOperator, _converter, emits_fresh_rows
from strom.runtime.operators.contexts import ProcessContext, SideOutputBuffer


class CoMapOperator(StreamOperator):
    """CoMapFunction: one output per record of either input."""

    num_inputs = 2

    def open(self) -> None:
        super().open()
        self._fns = (self.function.map1, self.function.map2)
        self._convert = _converter(self.params.get("output_type"))

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._map(values, timestamps, keys, 0)

    def process_batch1(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._map(values, timestamps, keys, 0)

    def process_batch2(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._map(values, timestamps, keys, 1)

    # hot path: called per batch, one user call per record
    def _map(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None, index: int) -> None:
        fn = self._fns[index]
        backend = self.backend
        if backend is None:
            out = [fn(v) for v in values]
        else:
            out = []
            append = out.append
            for k, v in zip(self.keys_for(values, keys, index), values, strict=True):
                backend.current_key = k
                append(fn(v))
        if self._convert is not None:
            conv = self._convert
            out = [conv(v) for v in out]
        self.output.collect(out, timestamps)


class CoFlatMapOperator(StreamOperator):
    """CoFlatMapFunction: zero or more outputs per record of either input, keeping its timestamp."""

    num_inputs = 2

    def open(self) -> None:
        super().open()
        self._fns = (self.function.flat_map1, self.function.flat_map2)
        self._convert = _converter(self.params.get("output_type"))

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._flat_map(values, timestamps, keys, 0)

    def process_batch1(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._flat_map(values, timestamps, keys, 0)

    def process_batch2(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._flat_map(values, timestamps, keys, 1)

    # hot path: called per batch, one user call per record
    def _flat_map(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None, index: int) -> None:
        fn = self._fns[index]
        backend = self.backend
        ks = self.keys_for(values, keys, index) if backend is not None else None
        out: list[Any] = []
        out_ts: list[Any] | None = [] if timestamps is not None else None
        for i, v in enumerate(values):
            if ks is not None:
                backend.current_key = ks[i]  # type: ignore[union-attr]
            r = fn(v)
            if r is None:
                continue
            before = len(out)
            out.extend(r)
            if out_ts is not None:
                out_ts.extend([timestamps[i]] * (len(out) - before))  # type: ignore[index]
        if self._convert is not None:
            conv = self._convert
            out = [conv(v) for v in out]
        if out:
            self.output.collect(out, out_ts)


class CoProcessOperator(ProcessOperator):
    """CoProcessFunction and KeyedCoProcessFunction.

    Timers exist only on keyed connected streams; on non-keyed ones the timer service
    raises an error naming the operator (OperatorTimerService). Timer firing, output
    conversion and side outputs are ProcessOperator's.
    """

    num_inputs = 2

    def open(self) -> None:
        # ProcessOperator.open binds `process_element`, which a co-process function lacks
        StreamOperator.open(self)
        self._side = SideOutputBuffer()
        self._pctx = ProcessContext(self, self._side)
        self._fns = (self.function.process_element1, self.function.process_element2)
        self._convert = _converter(self.params.get("output_type"))
        self._fresh = emits_fresh_rows(self.function)

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._process(values, timestamps, keys, 0)

    def process_batch1(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._process(values, timestamps, keys, 0)

    def process_batch2(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._process(values, timestamps, keys, 1)

    # hot path: called per batch, one user call per record
    def _process(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None, index: int) -> None:
        fn, ctx, fresh = self._fns[index], self._pctx, self._fresh
        out: list[Any] = []
        out_ts: list[Any] = []
        append, append_ts = out.append, out_ts.append
        backend = self.backend
        ks = self.keys_for(values, keys, index) if backend is not None else None
        for i, v in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            ctx._timestamp = ts
            if ks is not None:
                backend.current_key = ks[i]  # type: ignore[union-attr]
            r = fn(v, ctx)
            if r is not None:
                for o in r:
                    # as emitted (PyFlink serializes it then), unless the function emits fresh rows
                    append(o if fresh or type(o) is not Row else copy_row(o))
                    append_ts(ts)
        self._emit(out, out_ts)
