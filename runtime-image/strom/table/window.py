"""`strom.table.window` (PyFlink's pyflink.table.window): group windows for `Table.window(...)`.

`Tumble.over(lit(10).minutes).on(col('ts')).alias('w')` and
`Slide.over(lit(10).minutes).every(lit(5).minutes).on(col('ts')).alias('w')`,
`Session.with_gap(lit(10).minutes).on(col('ts')).alias('w')`; the window's time column must be a time
attribute. Over windows are named here and refused when used.
"""

from __future__ import annotations

import datetime
from typing import Any

from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.expressions import Expression


def _millis(size: Any, what: str) -> int:
    if not isinstance(size, Expression) or size.op != "lit" or not isinstance(size.value, datetime.timedelta):
        raise ValidationException(f"{what}: expected a time interval such as lit(10).minutes, got {size!r}")
    ms = size.value // datetime.timedelta(milliseconds=1)
    if ms <= 0:
        raise ValidationException(f"{what}: the interval must be positive, got {size!r}")
    return ms


class GroupWindow:
    """A defined group window: kind, sizes in milliseconds, time column and alias."""

    def __init__(self, kind: str, size: int, slide: int | None, time_field: Expression | None,
                 alias_name: str | None) -> None:
        self.kind = kind
        self.size = size
        self.slide = slide
        self.time_field = time_field
        self.alias_name = alias_name

    def on(self, time_field: Expression) -> GroupWindow:
        return GroupWindow(self.kind, self.size, self.slide, time_field, self.alias_name)

    def alias(self, alias: str) -> GroupWindow:
        return GroupWindow(self.kind, self.size, self.slide, self.time_field, alias)

    def checked(self) -> GroupWindow:
        if self.time_field is None or self.alias_name is None:
            raise ValidationException(f"{self.kind} window needs .on(col('time attribute')) and .alias('w')")
        return self


class Tumble:
    @staticmethod
    def over(size: Expression) -> GroupWindow:
        return GroupWindow("TUMBLE", _millis(size, "Tumble.over"), None, None, None)


class _SlideWithSize:
    def __init__(self, size: int) -> None:
        self.size = size

    def every(self, slide: Expression) -> GroupWindow:
        return GroupWindow("HOP", self.size, _millis(slide, "Slide.every"), None, None)


class Slide:
    @staticmethod
    def over(size: Expression) -> _SlideWithSize:
        return _SlideWithSize(_millis(size, "Slide.over"))


class Session:
    @staticmethod
    def with_gap(gap: Expression) -> GroupWindow:
        """Session.with_gap(lit(10).minutes).on(col('ts')).alias('w'): sessions separated by `gap` of no rows."""
        return GroupWindow("SESSION", _millis(gap, "Session.with_gap"), None, None, None)


class Over:
    @staticmethod
    def partition_by(*partition_by: Expression) -> Any:
        raise NotSupportedYet("Over windows")

    @staticmethod
    def order_by(order_by: Expression) -> Any:
        raise NotSupportedYet("Over windows")
