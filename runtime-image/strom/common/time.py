"""Durations and window sizes: PyFlink's `Duration` (2.x) and `Time` (1.x).

Both reduce to integer milliseconds, which is what every engine component uses for
event time and timer timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Duration:
    """A span of time with millisecond precision (PyFlink `Duration`)."""

    millis: int

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(int(millis))

    @staticmethod
    def of_seconds(seconds: float) -> Duration:
        return Duration(int(seconds * 1000))

    @staticmethod
    def of_minutes(minutes: float) -> Duration:
        return Duration(int(minutes * 60_000))

    @staticmethod
    def of_hours(hours: float) -> Duration:
        return Duration(int(hours * 3_600_000))

    @staticmethod
    def of_days(days: float) -> Duration:
        return Duration(int(days * 86_400_000))

    @staticmethod
    def zero() -> Duration:
        return Duration(0)

    def to_milliseconds(self) -> int:
        return self.millis


class Time:
    """PyFlink 1.x window sizes: `Time.seconds(5)`; each returns a `Duration`."""

    @staticmethod
    def milliseconds(n: int) -> Duration:
        return Duration(int(n))

    @staticmethod
    def seconds(n: float) -> Duration:
        return Duration.of_seconds(n)

    @staticmethod
    def minutes(n: float) -> Duration:
        return Duration.of_minutes(n)

    @staticmethod
    def hours(n: float) -> Duration:
        return Duration.of_hours(n)

    @staticmethod
    def days(n: float) -> Duration:
        return Duration.of_days(n)


@dataclass(frozen=True, slots=True)
class Instant:
    """PyFlink's `Instant`: a point on the time line, seconds and nanoseconds since the epoch."""

    seconds: int
    nanos: int = 0

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        return Instant(epoch_milli // 1000, (epoch_milli % 1000) * 1_000_000)

    def to_epoch_milli(self) -> int:
        return self.seconds * 1000 + self.nanos // 1_000_000

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


def to_millis(value: Duration | int | float, *, what: str = "duration") -> int:
    """Accept a `Duration`, a `Time` result or a plain number of milliseconds."""
    if isinstance(value, Duration):
        return value.millis
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"invalid {what} {value!r}: expected Duration, Time or milliseconds as int")
    return int(value)


MAX_WATERMARK = 2**63 - 1
MIN_WATERMARK = -(2**63)
