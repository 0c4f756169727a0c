"""Time attributes and windows at runtime: SQL watermarks, the window assigners of the window TVFs, and
the functions that window aggregation hands to the DataStream API's window operator.

TIMESTAMP and TIMESTAMP_LTZ values are naive datetimes read as UTC (Strom's session time zone), so a
rowtime's milliseconds are its offset from 1970-01-01 00:00; windows are computed on those milliseconds
and their bounds turned back into TIMESTAMP(3) values, as Flink's window operators do.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from strom.common.watermark_strategy import Watermark, WatermarkGenerator, WatermarkOutput
from strom.datastream.functions import AggregateFunction, ProcessWindowFunction
from strom.datastream.window import (
    EventTimeSessionWindows,
    EventTimeTrigger,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from strom.table.planner.group_agg import _Acc, adders, valuers
from strom.table.planner.plan import AggCall, WindowSpec
from strom.table.planner.rows import make_row

EPOCH = datetime.datetime(1970, 1, 1)
_MS = datetime.timedelta(milliseconds=1)


def to_millis(value: datetime.datetime) -> int:
    return (value - EPOCH) // _MS


def from_millis(ms: int) -> datetime.datetime:
    return EPOCH + ms * _MS


class SqlWatermarkGenerator(WatermarkGenerator):
    """Flink's WatermarkAssignerOperator: the watermark is the watermark expression over each row, kept at
    its maximum; it is emitted at once when it moved more than `interval_ms` past the last one emitted
    (so a jump in event time is not held back by a slow periodic timer), otherwise periodically."""

    def __init__(self, watermark_of: Callable[[Any], Any], interval_ms: int, offset_ms: int | None = None) -> None:
        self.watermark_of = watermark_of
        self.interval_ms = interval_ms
        # `rowtime - INTERVAL ..` (see rowtime_offset_ms): the record timestamp, already extracted, less the
        # offset gives the same milliseconds without evaluating the expression per row
        self.offset_ms = offset_ms
        self.current = -(2**63)
        self.emitted = -(2**63)

    # hot path: called per record
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if self.offset_ms is not None:
            wm = event_timestamp - self.offset_ms
        else:
            value = self.watermark_of(event)
            if value is None:
                return  # Flink: a NULL watermark leaves the current one unchanged
            wm = to_millis(value)
        if wm > self.current:
            self.current = wm
            if self.current - self.emitted > self.interval_ms:
                self.emitted = self.current
                output.emit_watermark(Watermark(self.current))

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        if self.current > self.emitted:
            self.emitted = self.current
            output.emit_watermark(Watermark(self.current))


def rowtime_offset_ms(watermark: Any, rowtime: str) -> int | None:
    """The watermark expression `rowtime - INTERVAL ..` (whole milliseconds) as that interval in ms, else None.

    Its value is then the record timestamp (the rowtime in ms, which RowtimeExtractor refuses NULL for) less
    the offset: floor((t - d) / 1 ms) = floor(t / 1 ms) - d / 1 ms when d is whole milliseconds."""
    if getattr(watermark, "op", None) != "call" or watermark.name != "-" or len(watermark.args) != 2:
        return None
    column, interval = watermark.args
    if column.op != "col" or column.name != rowtime or interval.op != "lit":
        return None
    value = interval.value
    if type(value) is not datetime.timedelta or value % _MS:
        return None
    return value // _MS


class RowtimeExtractor:
    """The record timestamp of a row: its rowtime column in milliseconds (NULL refused, as Flink does)."""

    def __init__(self, index: int, column: str) -> None:
        self.index = index
        self.column = column

    # hot path: called per record
    def __call__(self, row: Any, record_timestamp: int) -> int:
        value = row[self.index]
        if value is None:
            raise ValueError(f"RowTime field {self.column!r} should not be null, please convert it to a non-null "
                             f"timestamp (e.g. COALESCE) or filter such rows")
        return (value - EPOCH) // _MS


class CumulativeEventTimeWindows(WindowAssigner):
    """CUMULATE: windows [start, start + k * step) for k = 1 .. max_size / step, start aligned to max_size;
    a row belongs to every such window whose end is past it (Flink's CumulativeWindowAssigner)."""

    def __init__(self, max_size: int, step: int, event_time: bool = True) -> None:
        self.max_size = max_size
        self.step = step
        self.event_time = event_time

    def windows_for(self, timestamp: int) -> list[TimeWindow]:
        start = TimeWindow.get_window_start_with_offset(timestamp, 0, self.max_size)
        first_end = TimeWindow.get_window_start_with_offset(timestamp, 0, self.step) + self.step
        return [TimeWindow(start, end) for end in range(first_end, start + self.max_size + 1, self.step)]

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[TimeWindow]:
        if not self.event_time:
            timestamp = context.get_current_processing_time()
        assert timestamp is not None
        return self.windows_for(timestamp)

    def get_default_trigger(self, env: Any = None) -> Any:
        return EventTimeTrigger() if self.event_time else ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return self.event_time

    def __repr__(self) -> str:
        return f"CumulativeWindows({self.max_size}, {self.step})"


def window_assigner(spec: WindowSpec) -> WindowAssigner:
    """The DataStream API's assigner for a window spec (SESSION: the merging session assigner, whose
    windows [first row, last row + gap) merge as rows bridge the gaps between them)."""
    if spec.kind == "SESSION":
        session = EventTimeSessionWindows if spec.event_time else ProcessingTimeSessionWindows
        return session.with_gap(spec.size)
    if spec.kind == "TUMBLE":
        cls = TumblingEventTimeWindows if spec.event_time else TumblingProcessingTimeWindows
        return cls.of(spec.size)
    if spec.kind == "HOP":
        assert spec.slide is not None
        sliding = SlidingEventTimeWindows if spec.event_time else SlidingProcessingTimeWindows
        return sliding.of(spec.size, spec.slide)
    assert spec.slide is not None
    return CumulativeEventTimeWindows(spec.size, spec.slide, spec.event_time)


def windows_of(spec: WindowSpec, timestamp: int) -> list[TimeWindow]:
    """The windows a row with this time falls in (the window TVF without aggregation), earliest first."""
    if spec.kind == "TUMBLE":
        start = TimeWindow.get_window_start_with_offset(timestamp, 0, spec.size)
        return [TimeWindow(start, start + spec.size)]
    assert spec.slide is not None
    if spec.kind == "HOP":
        return sorted(SlidingEventTimeWindows.of(spec.size, spec.slide).windows_for(timestamp))
    return CumulativeEventTimeWindows(spec.size, spec.slide).windows_for(timestamp)


class WindowAggAccumulate(AggregateFunction):
    """Incremental window aggregation: one accumulator per aggregate call (the GROUP BY accumulators)."""

    def __init__(self, aggs: list[AggCall]) -> None:
        self.aggs = aggs
        self._adders = adders(aggs)  # each aggregate's adder chosen once, not per row
        self._valuers = valuers(aggs)

    def create_accumulator(self) -> list[Any]:
        return [_Acc.new(a) for a in self.aggs]

    # hot path: called per record
    def add(self, value: Any, accumulator: list[Any]) -> list[Any]:
        for i, arg, add, agg in self._adders:  # COUNT(*) counts every row
            accumulator[i] = add(agg, accumulator[i], 1 if arg is None else value[arg], 1)
        return accumulator

    def get_result(self, accumulator: list[Any]) -> tuple[Any, ...]:
        return tuple([value(agg, acc) for (value, agg), acc in zip(self._valuers, accumulator)])  # noqa: B905

    def merge(self, acc_a: list[Any], acc_b: list[Any]) -> list[Any]:
        """Two session windows became one: their accumulators combine (Flink's merge of accumulators)."""
        return [_Acc.merge(agg, a, b) for agg, a, b in zip(self.aggs, acc_a, acc_b, strict=True)]


class WindowAggEmit(ProcessWindowFunction):
    """A fired window's row: keys, aggregate values, window_start, window_end, window_time (end - 1 ms)."""

    def __init__(self, names: list[str]) -> None:
        self.names = tuple(names)

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        window = context.window()
        for values in elements:
            yield make_row((*key, *values, from_millis(window.start), from_millis(window.end),
                            from_millis(window.end - 1)), self.names)


class WindowTableFunction:
    """flat_map of a window TVF without aggregation: the row once per window, window columns appended."""

    def __init__(self, spec: WindowSpec, time_index: int, names: list[str]) -> None:
        self.spec = spec
        self.time_index = time_index
        self.names = tuple(names)

    def __call__(self, row: Any) -> Iterator[Any]:
        value = row[self.time_index]
        if value is None:
            return
        for w in windows_of(self.spec, to_millis(value)):
            yield make_row((*row, from_millis(w.start), from_millis(w.end), from_millis(w.end - 1)), self.names,
                           row.get_row_kind())
