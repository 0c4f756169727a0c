"""Record-at-a-time operators: map, flat_map, filter, process, reduce, aggregations,
timestamp assignment. Stateless ones work on whole batches; keyed ones set the current
key per record so that user state and timers see it."""

from __future__ import annotations

from typing import Any

from strom.common.row import Row, copy_row, detached, make_row
from strom.common.time import MAX_WATERMARK
from strom.datastream.functions import TimeDomain
from strom.datastream.output_tag import OutputTag
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.operators.base import StreamOperator, results_of
from strom.runtime.operators.contexts import ProcessContext, SideOutputBuffer
from strom.runtime.operators.watermarks import WatermarkEmitter
from strom.runtime.state.api import VOID, CachingNamespaces, InMemoryNamespaces, NamespaceCache


def split_tagged_outputs(
    out: list[Any], out_ts: list[Any], side: SideOutputBuffer
) -> tuple[list[Any], list[Any]]:
    """PyFlink lets process functions `yield output_tag, value` for side outputs: move those."""
    # hot path: one type check per output record
    if not any(type(o) is tuple and len(o) == 2 and type(o[0]) is OutputTag for o in out):
        return out, out_ts
    main: list[Any] = []
    main_ts: list[Any] = []
    for o, t in zip(out, out_ts, strict=True):
        if type(o) is tuple and len(o) == 2 and type(o[0]) is OutputTag:
            side.add(o[0], o[1], t)
        else:
            main.append(o)
            main_ts.append(t)
    return main, main_ts


def _converter(descriptor_output_type: Any):
    if descriptor_output_type is not None and descriptor_output_type.needs_conversion:
        return descriptor_output_type.convert
    return None


class MapOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._fn = self.function.map
        self._convert = _converter(self.params.get("output_type"))

    # hot path: called per batch, one user call per record
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        fn = self._fn
        if self.backend is None:
            out = [fn(v) for v in values]
        else:
            backend = self.backend
            out = []
            append = out.append
            for k, v in zip(self.keys_for(values, keys), values, strict=True):
                backend.current_key = k
                append(fn(v))
        if self._convert is not None:
            conv = self._convert
            out = [conv(v) for v in out]
        self.output.collect(out, timestamps)


class FlatMapOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._fn = self.function.flat_map
        self._convert = _converter(self.params.get("output_type"))

    # hot path
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        fn = self._fn
        out: list[Any] = []
        backend = self.backend
        ks = self.keys_for(values, keys) if backend is not None else None
        if timestamps is None:
            extend = out.extend
            for i, v in enumerate(values):
                if ks is not None:
                    backend.current_key = ks[i]  # type: ignore[union-attr]
                r = fn(v)
                if r is not None:
                    extend(r)
            out_ts = None
        else:
            out_ts = []
            for i, v in enumerate(values):
                if ks is not None:
                    backend.current_key = ks[i]  # type: ignore[union-attr]
                r = fn(v)
                if r is not None:
                    before = len(out)
                    out.extend(r)
                    out_ts.extend([timestamps[i]] * (len(out) - before))
        if self._convert is not None:
            conv = self._convert
            out = [conv(v) for v in out]
        self.output.collect(out, out_ts)


class FilterOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._fn = self.function.filter

    # hot path
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        fn = self._fn
        if self.backend is not None:
            backend = self.backend
            ks = self.keys_for(values, keys)
            mask = []
            for k, v in zip(ks, values, strict=True):
                backend.current_key = k
                mask.append(fn(v))
        else:
            if timestamps is None:
                self.output.collect([v for v in values if fn(v)], None)
                return
            mask = [fn(v) for v in values]
        out = [v for v, m in zip(values, mask, strict=True) if m]
        out_ts = [t for t, m in zip(timestamps, mask, strict=True) if m] if timestamps is not None else None
        self.output.collect(out, out_ts)


def emits_fresh_rows(function: Any) -> bool:
    """True for a function that declares `emits_fresh_rows = True`: every Row it emits is built for that
    emission and never assigned to afterwards (the SQL operators' result rows), so the operator need not
    copy it as it must copy a user function's Row."""
    return getattr(function, "emits_fresh_rows", False) is True


class ProcessOperator(StreamOperator):
    """ProcessFunction (non-keyed) and KeyedProcessFunction."""

    def open(self) -> None:
        super().open()
        self._side = SideOutputBuffer()
        self._pctx = ProcessContext(self, self._side)
        self._fn = self.function.process_element
        self._convert = _converter(self.params.get("output_type"))
        self._fresh = emits_fresh_rows(self.function)

    # hot path
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        fn, ctx, fresh = self._fn, self._pctx, self._fresh
        out: list[Any] = []
        out_ts: list[Any] = []
        backend = self.backend
        ks = self.keys_for(values, keys) if backend is not None else None
        for i, v in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            ctx._timestamp = ts
            if ks is not None:
                backend.current_key = ks[i]  # type: ignore[union-attr]
            r = fn(v, ctx)
            if r is not None:
                for o in r:
                    # a Row is copied as emitted: a function that assigns to the Row it keeps (an accumulator)
                    # does not change what it emitted before, as PyFlink serializes each emitted record
                    out.append(o if fresh or type(o) is not Row else copy_row(o))
                    out_ts.append(ts)
        self._emit(out, out_ts)

    def _emit(self, out: list[Any], out_ts: list[Any]) -> None:
        if out:
            out, out_ts = split_tagged_outputs(out, out_ts, self._side)
        if self._convert is not None:
            conv = self._convert
            out = [conv(v) for v in out]
        if out:
            self.output.collect(out, out_ts if any(t is not None for t in out_ts) else None)
        self._side.drain(self.output)

    def _fire(self, timestamp: int, domain: int) -> None:
        ctx = self._pctx
        ctx._timestamp = timestamp if domain == TimeDomain.EVENT_TIME else None
        ctx._domain = domain
        r = self.function.on_timer(timestamp, ctx)
        out = detached(list(results_of(r)))
        self._emit(out, [ctx._timestamp] * len(out))
        ctx._domain = TimeDomain.EVENT_TIME

    def on_event_time(self, timer: Any) -> None:
        self._fire(timer.timestamp, TimeDomain.EVENT_TIME)

    def on_processing_time(self, timer: Any) -> None:
        self._fire(timer.timestamp, TimeDomain.PROCESSING_TIME)


class ReduceOperator(StreamOperator):
    """Rolling reduce per key: emits the running result for every record."""

    def open(self) -> None:
        super().open()
        self._fn = self._reduce_function()
        # the running value lives in the keyed backend, so snapshots see it per key group: in a value
        # state; the per-record loop uses its live dict when the backend offers one (the heap), or a
        # bounded namespace cache in front of it (RocksDB) that evicts past its bound and is told which keys a
        # batch reads (fetch_missing) and wrote (mark_written), so a snapshot writes only what changed
        self._running = self.backend.get_state(ValueStateDescriptor("_reduce"))  # type: ignore[union-attr]
        self._acc: dict[Any, Any] | None = None
        self._cache: NamespaceCache | None = None
        if isinstance(self._running, InMemoryNamespaces):
            self._acc = self._running.namespace_map(VOID)
        elif isinstance(self._running, CachingNamespaces):
            self._cache = self._running.open_namespace_cache(fetches=True)
            if self._cache is not None:
                self._acc = self._cache.namespace_map(VOID)

    def _reduce_function(self) -> Any:
        return self.function.reduce

    # hot path
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        fn, acc = self._fn, self._acc
        if acc is None:
            self._process_through_state(values, timestamps, keys)
            return
        out = []
        append = out.append
        backend = self.backend
        keys = self.keys_for(values, keys)
        cache = self._cache
        if cache is not None:
            cache.fetch_missing(VOID, keys)
        for k, v in zip(keys, values, strict=True):
            backend.current_key = k  # type: ignore[union-attr]
            cur = acc.get(k)
            if cur is None and k not in acc:
                new = v
            else:
                new = fn(cur, v)
            acc[k] = new
            append(copy_row(new) if type(new) is Row else new)  # the emitted value stays as it was emitted
        if cache is not None:
            cache.mark_written(VOID, keys)
            cache.trim()
        self.output.collect(out, timestamps)

    def _process_through_state(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        fn, running, backend = self._fn, self._running, self.backend
        out = []
        for k, v in zip(self.keys_for(values, keys), values, strict=True):
            backend.current_key = k  # type: ignore[union-attr]
            cur = running.value()
            new = v if cur is None else fn(cur, v)
            running.update(new)
            out.append(copy_row(new) if type(new) is Row else new)
        self.output.collect(out, timestamps)


def _field_getter(position: int | str) -> Any:
    def get(v: Any) -> Any:
        if isinstance(v, int | float) and position == 0:
            return v
        if isinstance(position, str):
            if isinstance(v, dict):
                return v[position]
            return v[position] if hasattr(v, "_fields") and v._fields else getattr(v, position)
        return v[position]

    return get


def _with_field(v: Any, position: int | str, new: Any) -> Any:
    if isinstance(v, int | float) and position == 0:
        return new
    if isinstance(v, Row):
        idx = position if isinstance(position, int) else v._fields.index(position)  # type: ignore[union-attr]
        vals = list(v)
        vals[idx] = new
        r = make_row(vals, tuple(v._fields)) if v._fields else Row(*vals)
        r.set_row_kind(v.get_row_kind())
        return r
    if isinstance(v, tuple):
        vals = list(v)
        vals[position] = new  # type: ignore[index]
        return tuple(vals) if type(v) is tuple else type(v)(*vals)
    if isinstance(v, list):
        vals = list(v)
        vals[position] = new  # type: ignore[index]
        return vals
    if isinstance(v, dict):
        d = dict(v)
        d[position] = new
        return d
    raise TypeError(f"cannot aggregate field {position!r} of {type(v).__name__} value {v!r}")


class AggregationOperator(ReduceOperator):
    """sum / min / max / min_by / max_by on a field, as Flink's built-in aggregations."""

    def _reduce_function(self) -> Any:
        position = self.params["position"]
        get = _field_getter(position)
        kind = self.params["agg"]

        def sum_(a: Any, b: Any) -> Any:
            return _with_field(a, position, get(a) + get(b))

        def min_(a: Any, b: Any) -> Any:
            # Flink's min keeps the other fields of the first record and updates only the field
            return _with_field(a, position, get(b)) if get(b) < get(a) else a

        def max_(a: Any, b: Any) -> Any:
            return _with_field(a, position, get(b)) if get(b) > get(a) else a

        def min_by(a: Any, b: Any) -> Any:
            return b if get(b) < get(a) else a  # ties keep the first

        def max_by(a: Any, b: Any) -> Any:
            return b if get(b) > get(a) else a

        return {"sum": sum_, "min": min_, "max": max_, "min_by": min_by, "max_by": max_by}[kind]


class TimestampsAndWatermarksOperator(StreamOperator):
    """assign_timestamps_and_watermarks: stamps records and generates watermarks mid-stream.

    Upstream watermarks are swallowed except the final MAX, as in Flink."""

    def open(self) -> None:
        super().open()
        self._emitter = WatermarkEmitter(
            self.params["watermark_strategy"], self.output, self.ctx.processing_time_service, self.ctx.config  # type: ignore[union-attr]
        )
        self._emitter.start()

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._emitter.emit_batch(values, timestamps)

    def process_watermark(self, timestamp: int) -> None:
        if timestamp == MAX_WATERMARK:
            self._emitter.emit_final()

    def close(self) -> None:
        self._emitter.stop()
        super().close()
