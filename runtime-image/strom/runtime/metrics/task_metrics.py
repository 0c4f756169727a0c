"""Task I/O metrics of one subtask under Flink's names, read from the running task on demand.

The task's loop keeps only plain integer totals, bumped per batch or per wait, never per
record: `records_in`, `idle_ns` (time blocked in gate.poll waiting for input, or a source
reader with nothing to give), `idle_since_ns` (a wait in progress), `started_ns`/`ended_ns`.
Record writers count `records_out`; output channels count `back_pressured_ns` (time the
producer blocked in put for lack of credit) and, when remote, `bytes_sent`; remote input
channels may count `bytes_received`. `TaskMetrics.snapshot()` reads those totals from another
thread and turns them into Flink's counters and per-second rates (sliding windows, RateView):

  busy = running time - idle - back-pressured, so busy + idle + backPressured ~ 1000 ms/s.

In-process channels carry Python objects, never bytes: their byte counts are 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from strom.common.time import MIN_WATERMARK
from strom.runtime.metrics.groups import RateView

_NS_PER_MS = 1_000_000


class TaskMetrics:
    """Flink's task IO metric group of one subtask (numRecordsIn, busyTimeMsPerSecond, ...)."""

    def __init__(
        self,
        task: Any,
        *,
        meter_span_s: float = 60.0,
        clock_ns: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        self.task = task
        self.meter_span_s = meter_span_s
        # The same clock as the task's own accounting (StreamTask uses perf_counter_ns).
        self._clock_ns = clock_ns
        now = clock_ns() / 1e9
        self._rates = {
            name: RateView(meter_span_s, now)
            for name in (
                "numRecordsInPerSecond", "numRecordsOutPerSecond", "numBytesInPerSecond", "numBytesOutPerSecond",
                "busyTimeMsPerSecond", "idleTimeMsPerSecond", "backPressuredTimeMsPerSecond",
            )
        }
        self._lock = threading.Lock()  # snapshots may come from several threads (scrapes, REST, heartbeats)
        self._output_watermarks = _track_output_watermarks(task)

    # -- totals read from the task ---------------------------------------------------------------
    def _output_channels(self) -> list[Any]:
        return [ch for w in self.task.writers for ch in w.channels]

    def records_in(self) -> int:
        task = self.task
        if task.gate is None:
            # A source task's input is what its reader produced (FLIP-33: numRecordsIn of the source).
            return getattr(task.head, "records_out", 0)
        return task.records_in

    def records_out(self) -> int:
        return sum(w.records_out for w in self.task.writers)

    def times_ns(self, now_ns: int) -> tuple[int, int, int]:
        """(busy, idle, back-pressured) nanoseconds since the task started running."""
        task = self.task
        started = task.started_ns
        if not started:
            return 0, 0, 0
        ended = task.ended_ns
        end = ended or now_ns
        idle = task.idle_ns
        since = task.idle_since_ns
        if since and not ended:
            idle += max(0, now_ns - since)  # a wait still in progress counts already
        back_pressured = sum(getattr(ch, "back_pressured_ns", 0) for ch in self._output_channels())
        busy = max(0, end - started - idle - back_pressured)
        return busy, idle, back_pressured

    def input_watermark(self) -> int:
        wms = self.task.input_watermarks
        return min(wms.values()) if wms else MIN_WATERMARK

    def output_watermark(self) -> int:
        cells = self._output_watermarks
        return min(cells) if cells else MIN_WATERMARK

    def pending_records(self) -> int | None:
        """The source reader's backlog, when its reader knows it (`pending_records()`)."""
        if self.task.gate is not None:
            return None
        reader = getattr(self.task.head, "reader", None)
        fn = getattr(reader, "pending_records", None)
        if fn is None:
            return None
        try:
            return fn()
        except Exception:  # noqa: BLE001 - a reader's estimate must not break the report
            return None

    # -- the snapshot ---------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, float]:
        """Flink's task metric names -> values at this moment."""
        now_ns = self._clock_ns()
        now = now_ns / 1e9
        records_in = self.records_in()
        records_out = self.records_out()
        bytes_in = sum(getattr(ch, "bytes_received", 0) for ch in (self.task.gate.channels if self.task.gate else ()))
        bytes_out = sum(getattr(ch, "bytes_sent", 0) for ch in self._output_channels())
        busy, idle, back_pressured = self.times_ns(now_ns)
        with self._lock:
            r = self._rates
            values = {
                "numRecordsIn": float(records_in),
                "numRecordsOut": float(records_out),
                "numBytesIn": float(bytes_in),
                "numBytesOut": float(bytes_out),
                "numRecordsInPerSecond": r["numRecordsInPerSecond"].rate(now, records_in),
                "numRecordsOutPerSecond": r["numRecordsOutPerSecond"].rate(now, records_out),
                "numBytesInPerSecond": r["numBytesInPerSecond"].rate(now, bytes_in),
                "numBytesOutPerSecond": r["numBytesOutPerSecond"].rate(now, bytes_out),
                "busyTimeMsPerSecond": _ms_per_s(r["busyTimeMsPerSecond"].rate(now, busy)),
                "idleTimeMsPerSecond": _ms_per_s(r["idleTimeMsPerSecond"].rate(now, idle)),
                "backPressuredTimeMsPerSecond": _ms_per_s(r["backPressuredTimeMsPerSecond"].rate(now, back_pressured)),
            }
        values["accumulatedBusyTime"] = float(busy // _NS_PER_MS)
        values["accumulatedIdleTime"] = float(idle // _NS_PER_MS)
        values["accumulatedBackPressuredTime"] = float(back_pressured // _NS_PER_MS)
        values["currentInputWatermark"] = float(self.input_watermark())
        values["currentOutputWatermark"] = float(self.output_watermark())
        pending = self.pending_records()
        if pending is not None:
            values["pendingRecords"] = float(pending)
        return values


def _ms_per_s(ns_per_s: float) -> float:
    # A total that drops back (back pressure is booked when put returns) can dip a window below 0.
    return min(1000.0, max(0.0, ns_per_s / _NS_PER_MS))


def _track_output_watermarks(task: Any) -> list[int]:
    """Cells holding the last watermark each end of the operator chain emitted.

    The chain's ends are the outputs that feed no chained operator (they feed record writers,
    or nothing, as a sink's does). Their emit_watermark is wrapped to note the timestamp: one
    extra call per watermark, nothing per record, and no change to the chain's code.
    """
    cells: list[int] = []
    for out in getattr(task, "outputs", ()):
        if getattr(out, "all_ops", None):
            continue
        i = len(cells)
        cells.append(MIN_WATERMARK)
        emit = out.emit_watermark

        def emit_watermark(timestamp: int, _emit: Callable[[int], None] = emit, _i: int = i) -> None:
            cells[_i] = timestamp
            _emit(timestamp)

        out.emit_watermark = emit_watermark
    return cells
