"""Interval join of two keyed streams, as Flink's IntervalJoinOperator.

A left element at `t` joins right elements of the same key with timestamps in
`[t + lower, t + upper]` (bounds already made inclusive by the API). Each side is
buffered per key in keyed MapState (timestamp -> list of elements) and removed by an
event-time cleanup timer once no element of the other side can still join it. The
output timestamp is the larger of the pair's timestamps. Elements behind the
operator's watermark are late: dropped, or sent to the side output for late data.
"""

from __future__ import annotations

from typing import Any

from strom.common.time import MIN_WATERMARK
from strom.datastream.state import MapStateDescriptor
from strom.runtime.operators.base import StreamOperator
from strom.runtime.operators.basic import _converter
from strom.runtime.operators.contexts import SideOutputBuffer
from strom.runtime.state.timers import InternalTimer

# timer namespaces: which buffer a cleanup timer empties
CLEANUP_LEFT = "CLEANUP_LEFT"
CLEANUP_RIGHT = "CLEANUP_RIGHT"


class IntervalJoinContext:
    """ProcessJoinFunction.Context: the pair's timestamps and side outputs."""

    __slots__ = ("_left_ts", "_right_ts", "_timestamp", "_side")

    def __init__(self, side: SideOutputBuffer) -> None:
        self._left_ts = MIN_WATERMARK
        self._right_ts = MIN_WATERMARK
        self._timestamp = MIN_WATERMARK
        self._side = side

    def get_left_timestamp(self) -> int:
        return self._left_ts

    def left_timestamp(self) -> int:
        return self._left_ts

    def get_right_timestamp(self) -> int:
        return self._right_ts

    def right_timestamp(self) -> int:
        return self._right_ts

    def timestamp(self) -> int:
        return self._timestamp

    def get_timestamp(self) -> int:
        return self._timestamp

    def output(self, output_tag: Any, value: Any) -> None:
        self._side.add(output_tag, value, self._timestamp)


class IntervalJoinOperator(StreamOperator):
    num_inputs = 2

    def open(self) -> None:
        super().open()
        name = self.ctx.operator_name if self.ctx is not None else "IntervalJoin"
        if self.backend is None or self.timer_service is None:
            raise TypeError(f"operator {name!r}: an interval join needs keyed streams on both sides")
        self._name = name
        self._lower = int(self.params["lower"])
        self._upper = int(self.params["upper"])
        self._late_tags = (self.params.get("left_late"), self.params.get("right_late"))
        # names cannot collide with user state: ProcessJoinFunction state uses the same backend
        self._left_buffer = self.backend.get_state(MapStateDescriptor("_interval_join_left_buffer"))
        self._right_buffer = self.backend.get_state(MapStateDescriptor("_interval_join_right_buffer"))
        self._side = SideOutputBuffer()
        self._jctx = IntervalJoinContext(self._side)
        self._fn = self.function.process_element
        self._convert = _converter(self.params.get("output_type"))

    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._process(values, timestamps, keys, True)

    def process_batch1(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._process(values, timestamps, keys, True)

    def process_batch2(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._process(values, timestamps, keys, False)

    def _missing_timestamp(self, is_left: bool, value: Any) -> TypeError:
        side = "left" if is_left else "right"
        return TypeError(
            f"operator {self._name!r}: {side} element {value!r} has no timestamp; an interval join needs "
            "event-time timestamps on both inputs (assign_timestamps_and_watermarks(...) with a timestamp assigner)"
        )

    # hot path: called per batch; per record one buffer insert and a scan of the other side's buckets
    def _process(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None, is_left: bool) -> None:
        if timestamps is None:
            raise self._missing_timestamp(is_left, values[0] if values else None)
        backend = self.backend
        ks = self.keys_for(values, keys, 0 if is_left else 1)
        if is_left:
            ours, other = self._left_buffer, self._right_buffer
            rel_lower, rel_upper = self._lower, self._upper
            namespace, late_tag = CLEANUP_LEFT, self._late_tags[0]
        else:
            ours, other = self._right_buffer, self._left_buffer
            rel_lower, rel_upper = -self._upper, -self._lower
            namespace, late_tag = CLEANUP_RIGHT, self._late_tags[1]
        # Flink: an element stays until the watermark passes the last timestamp it can join
        cleanup_delay = rel_upper if rel_upper > 0 else 0
        register_timer = self.timer_service.register_event_time_timer  # type: ignore[union-attr]
        watermark = self.current_watermark
        fn, ctx, side = self._fn, self._jctx, self._side
        get_bucket, put_bucket, other_items = ours.get, ours.put, other.items
        out: list[Any] = []
        out_ts: list[int] = []
        for i, v in enumerate(values):
            ts = timestamps[i]
            if ts is None:
                raise self._missing_timestamp(is_left, v)
            if ts < watermark:
                if late_tag is not None:
                    side.add(late_tag, v, ts)
                continue
            backend.current_key = ks[i]  # type: ignore[union-attr]
            bucket = get_bucket(ts)
            if bucket is None:
                put_bucket(ts, [v])
            else:
                bucket.append(v)
                put_bucket(ts, bucket)  # write back: a serializing backend would not see the in-place append
            lo, hi = ts + rel_lower, ts + rel_upper
            for other_ts, others in other_items():
                if other_ts < lo or other_ts > hi:
                    continue
                result_ts = ts if ts > other_ts else other_ts
                ctx._timestamp = result_ts
                if is_left:
                    ctx._left_ts, ctx._right_ts = ts, other_ts
                    for o in others:
                        r = fn(v, o, ctx)
                        if r is not None:
                            for x in r:
                                out.append(x)
                                out_ts.append(result_ts)
                else:
                    ctx._left_ts, ctx._right_ts = other_ts, ts
                    for o in others:
                        r = fn(o, v, ctx)
                        if r is not None:
                            for x in r:
                                out.append(x)
                                out_ts.append(result_ts)
            register_timer(namespace, ts + cleanup_delay)
        self._emit(out, out_ts)

    def _emit(self, out: list[Any], out_ts: list[int]) -> None:
        if out:
            if self._convert is not None:
                conv = self._convert
                out = [conv(v) for v in out]
            self.output.collect(out, out_ts)
        self._side.drain(self.output)

    def on_event_time(self, timer: InternalTimer) -> None:
        # the timer's key is current; undo the cleanup delay added when it was registered
        if timer.namespace == CLEANUP_LEFT:
            ts = timer.timestamp if self._upper <= 0 else timer.timestamp - self._upper
            self._left_buffer.remove(ts)
        elif timer.namespace == CLEANUP_RIGHT:
            ts = timer.timestamp + self._lower if self._lower <= 0 else timer.timestamp
            self._right_buffer.remove(ts)
        else:
            raise ValueError(f"operator {self._name!r}: unknown interval join timer namespace {timer.namespace!r}")
