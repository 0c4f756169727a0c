"""Watermark strategies: PyFlink's `WatermarkStrategy` and Flink's `WatermarkGenerator`.

A strategy says how to read an event's timestamp and how to derive watermarks from
the timestamps seen. The source task drives the generator: `on_event` per record
(batched for the built-in generators) and `on_periodic_emit` every
`pipeline.auto-watermark-interval`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from strom.common.time import MIN_WATERMARK, Duration, to_millis


@dataclass(frozen=True, slots=True)
class Watermark:
    """Event time has reached `timestamp`: no element with a smaller or equal timestamp follows."""

    timestamp: int

    def get_timestamp(self) -> int:
        return self.timestamp


class TimestampAssigner:
    """Reads an event's timestamp (milliseconds)."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        raise TypeError(f"{type(self).__name__} must implement extract_timestamp(value, record_timestamp)")

    def extractor(self) -> Callable[[Any, int], int]:
        """The per-record call `(value, record_timestamp) -> timestamp` sources make."""
        return self.extract_timestamp


class WatermarkOutput(Protocol):
    def emit_watermark(self, watermark: Watermark) -> None: ...

    def mark_idle(self) -> None: ...

    def mark_active(self) -> None: ...


class WatermarkGenerator:
    """Flink's WatermarkGenerator: punctuated (`on_event`) and/or periodic (`on_periodic_emit`)."""

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        pass

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        pass


class BoundedOutOfOrdernessWatermarks(WatermarkGenerator):
    """Watermark = highest timestamp seen - bound - 1, emitted periodically."""

    def __init__(self, out_of_orderness_ms: int) -> None:
        if out_of_orderness_ms < 0:
            raise ValueError("the out-of-orderness bound must not be negative")
        self.out_of_orderness_ms = out_of_orderness_ms
        self.max_timestamp = MIN_WATERMARK + out_of_orderness_ms + 1

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if event_timestamp > self.max_timestamp:
            self.max_timestamp = event_timestamp

    def observe_max(self, max_timestamp: int) -> None:
        """Batch form of on_event: the source hands the batch's highest timestamp."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        output.emit_watermark(Watermark(self.max_timestamp - self.out_of_orderness_ms - 1))


class AscendingTimestampsWatermarks(BoundedOutOfOrdernessWatermarks):
    def __init__(self) -> None:
        super().__init__(0)


class NoWatermarksGenerator(WatermarkGenerator):
    pass


GeneratorSupplier = Callable[[Any], WatermarkGenerator]


class _CallableAssigner(TimestampAssigner):
    def __init__(self, fn: Callable[[Any, int], int]) -> None:
        self.fn = fn

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return self.fn(value, record_timestamp)

    def extractor(self) -> Callable[[Any, int], int]:
        return self.fn  # the user's function itself: one call per record, not two


class WatermarkStrategy:
    """How a source assigns timestamps and emits watermarks (PyFlink names)."""

    def __init__(
        self,
        generator_supplier: GeneratorSupplier,
        *,
        timestamp_assigner: TimestampAssigner | None = None,
        idleness_ms: int | None = None,
        kind: str = "custom",
    ) -> None:
        self.generator_supplier = generator_supplier
        self.timestamp_assigner = timestamp_assigner
        self.idleness_ms = idleness_ms
        self.kind = kind

    # -- factories
    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy(lambda ctx: AscendingTimestampsWatermarks(), kind="monotonous")

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration | int) -> WatermarkStrategy:
        ms = to_millis(max_out_of_orderness, what="max_out_of_orderness")
        return WatermarkStrategy(lambda ctx: BoundedOutOfOrdernessWatermarks(ms), kind="bounded")

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(lambda ctx: NoWatermarksGenerator(), kind="none")

    @staticmethod
    def for_generator(generator_supplier: GeneratorSupplier | Callable[[], WatermarkGenerator]) -> WatermarkStrategy:
        """Java's forGenerator: a supplier (taking a context argument, or none) of a WatermarkGenerator."""

        def supply(ctx: Any) -> WatermarkGenerator:
            try:
                return generator_supplier(ctx)  # type: ignore[call-arg]
            except TypeError:
                return generator_supplier()  # type: ignore[call-arg]

        return WatermarkStrategy(supply, kind="custom")

    # -- modifiers (return new strategies, as Flink's are immutable)
    def with_timestamp_assigner(
        self, timestamp_assigner: TimestampAssigner | Callable[[Any, int], int]
    ) -> WatermarkStrategy:
        if not isinstance(timestamp_assigner, TimestampAssigner):
            if not callable(timestamp_assigner):
                raise TypeError("with_timestamp_assigner expects a TimestampAssigner or a function (value, ts) -> ts")
            timestamp_assigner = _CallableAssigner(timestamp_assigner)
        return WatermarkStrategy(
            self.generator_supplier, timestamp_assigner=timestamp_assigner, idleness_ms=self.idleness_ms, kind=self.kind
        )

    def with_idleness(self, idle_timeout: Duration | int) -> WatermarkStrategy:
        return WatermarkStrategy(
            self.generator_supplier,
            timestamp_assigner=self.timestamp_assigner,
            idleness_ms=to_millis(idle_timeout, what="idle timeout"),
            kind=self.kind,
        )

    def create_watermark_generator(self) -> WatermarkGenerator:
        return self.generator_supplier(None)
