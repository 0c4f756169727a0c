"""Contexts handed to process functions: current timestamp and key, timers, side outputs.

One context object per operator, updated per record (no per-record allocation). Side
output records are buffered per tag and emitted with the batch's main output.
"""

from __future__ import annotations

from typing import Any

from strom.common.key_groups import user_key
from strom.datastream.functions import TimeDomain, TimerService
from strom.runtime.state.api import VOID


class SideOutputBuffer:
    __slots__ = ("values", "timestamps", "tags")

    def __init__(self) -> None:
        self.values: dict[str, list[Any]] = {}
        self.timestamps: dict[str, list[Any]] = {}
        self.tags: dict[str, Any] = {}

    def add(self, tag: Any, value: Any, timestamp: Any) -> None:
        tid = tag.tag_id
        vs = self.values.get(tid)
        if vs is None:
            vs = self.values[tid] = []
            self.timestamps[tid] = []
            self.tags[tid] = tag
        vs.append(value)
        self.timestamps[tid].append(timestamp)

    def drain(self, output: Any) -> None:
        if not self.values:
            return
        for tid, vs in self.values.items():
            ts = self.timestamps[tid]
            output.collect_side(self.tags[tid], vs, ts if any(t is not None for t in ts) else None)
        self.values = {}
        self.timestamps = {}


class OperatorTimerService(TimerService):
    """The user's timer service: registers timers for the current key (VOID namespace)."""

    def __init__(self, operator: Any) -> None:
        self._op = operator

    def _service(self) -> Any:
        ts = self._op.timer_service
        if ts is None:
            raise TypeError(
                f"operator {self._op.ctx.operator_name!r}: timers need a keyed stream; call key_by(...) first "
                "(on a non-keyed stream only current_processing_time() and current_watermark() are available)"
            )
        return ts

    def current_processing_time(self) -> int:
        return self._op.ctx.processing_time_service.now()

    def current_watermark(self) -> int:
        return self._op.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._service().register_processing_time_timer(VOID, int(timestamp))

    def register_event_time_timer(self, timestamp: int) -> None:
        self._service().register_event_time_timer(VOID, int(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._service().delete_processing_time_timer(VOID, int(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._service().delete_event_time_timer(VOID, int(timestamp))


class ProcessContext:
    """Context of ProcessFunction / KeyedProcessFunction / Co*ProcessFunction, incl. on_timer."""

    __slots__ = ("_op", "_timestamp", "_side", "_timers", "_domain")

    def __init__(self, operator: Any, side: SideOutputBuffer) -> None:
        self._op = operator
        self._timestamp: int | None = None
        self._side = side
        self._timers = OperatorTimerService(operator)
        self._domain = TimeDomain.EVENT_TIME

    def timestamp(self) -> int | None:
        return self._timestamp

    def timer_service(self) -> OperatorTimerService:
        return self._timers

    def get_current_key(self) -> Any:
        backend = self._op.backend
        return user_key(backend.current_key) if backend is not None else None  # a list key as a list

    def output(self, output_tag: Any, value: Any) -> None:
        self._side.add(output_tag, value, self._timestamp)

    def time_domain(self) -> int:
        return self._domain

    # KeyedBroadcastProcessFunction and BroadcastProcessFunction contexts
    def get_broadcast_state(self, state_descriptor: Any) -> Any:
        return self._op.broadcast_state_for(state_descriptor, self)

    def current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._op.current_watermark
