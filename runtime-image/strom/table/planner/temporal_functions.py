"""Flink's temporal built-in functions: DATE_FORMAT, TO_TIMESTAMP, TO_DATE, UNIX_TIMESTAMP, FROM_UNIXTIME,
FLOOR/CEIL(ts TO unit), TIMESTAMPADD, TIMESTAMPDIFF, EXTRACT and YEAR/MONTH/..., CURRENT_DATE,
CURRENT_TIMESTAMP/NOW, LOCALTIMESTAMP, merged into strom.table.planner.scalar's call table.

TIMESTAMP values are naive datetimes, DATE values dates, TIMESTAMP_LTZ values instants held as naive
UTC datetimes (shown in the session zone, strom.table.planner.session_zone). Units arrive in the
call's `value` (FLOOR(ts TO HOUR) -> value "HOUR").
"""

from __future__ import annotations

import calendar
import datetime
from collections.abc import Callable, Sequence
from typing import Any

from strom.table.errors import ValidationException
from strom.table.expressions import Expression
from strom.table.planner import session_zone
from strom.table.planner.java_date_format import format_datetime, parse_datetime
from strom.table.types import DataType, DataTypes

Fn = Callable[[Sequence[Any]], Any]
Builder = Callable[[Expression, list[Fn], list[DataType]], tuple[Fn, DataType]]

DEFAULT_FORMAT = "yyyy-MM-dd HH:mm:ss"
LONG_MIN = -(2**63)  # UNIX_TIMESTAMP of a string its format does not read (Flink returns Long.MIN_VALUE)
_EPOCH = datetime.datetime(1970, 1, 1)
_UNIT_SECONDS = {"WEEK": 604800, "DAY": 86400, "HOUR": 3600, "MINUTE": 60, "SECOND": 1}


def _nullable(types: list[DataType]) -> bool:
    return any(t.nullable for t in types)


def _need(e: Expression, types: list[DataType], i: int, roots: tuple[str, ...], want: str) -> None:
    if types[i].root not in roots:
        raise ValidationException(f"{e.sql()}: argument {e.args[i].sql()} is {types[i]}, expected {want}")


def _wall(v: Any, t: DataType, zone: datetime.tzinfo) -> datetime.datetime:
    """A TIMESTAMP, TIMESTAMP_LTZ (in the zone) or DATE as a wall-clock datetime."""
    if t.root == "TIMESTAMP_LTZ":
        return session_zone.to_local(v, zone)
    if isinstance(v, datetime.datetime):
        return v
    return datetime.datetime(v.year, v.month, v.day)


def _parse_default(s: str) -> datetime.datetime:
    """Flink's default timestamp string: 'yyyy-MM-dd HH:mm:ss[.SSS...]' or a date 'yyyy-MM-dd'."""
    return datetime.datetime.fromisoformat(s.strip().replace("T", " "))


# -- formatting and parsing ------------------------------------------------------------------------
def _date_format(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """DATE_FORMAT(timestamp | string, format) -> STRING; a string argument is read as a timestamp first."""
    _arity(e, 2, 2)
    _need(e, types, 0, ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE", "STRING"), "a TIMESTAMP or STRING")
    _need(e, types, 1, ("STRING",), "a STRING format")
    a, fmt = fns
    t0, zone = types[0], session_zone.current()

    def f(row: Sequence[Any]) -> Any:
        v, pattern = a(row), fmt(row)
        if v is None or pattern is None:
            return None
        if isinstance(v, str):
            try:
                v = _parse_default(v)
            except ValueError:
                return None
            return format_datetime(v, pattern)
        return format_datetime(_wall(v, t0, zone), pattern)

    return f, DataTypes.STRING(_nullable(types))


def _read(e: Expression, fns: list[Fn], types: list[DataType]) -> Callable[[Sequence[Any]], datetime.datetime | None]:
    """The first argument read by the optional format (NULL if it does not match, as Flink)."""
    _need(e, types, 0, ("STRING",), "a STRING")
    if len(fns) > 1:
        _need(e, types, 1, ("STRING",), "a STRING format")
    a = fns[0]
    fmt = fns[1] if len(fns) > 1 else None

    def read(row: Sequence[Any]) -> datetime.datetime | None:
        s = a(row)
        pattern = fmt(row) if fmt is not None else None
        if s is None or (fmt is not None and pattern is None):
            return None
        try:
            return parse_datetime(s, pattern) if pattern is not None else _parse_default(s)
        except (ValueError, StopIteration):
            return None

    return read


def _to_timestamp(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """TO_TIMESTAMP(string[, format]) -> TIMESTAMP(3); NULL when the string does not match."""
    _arity(e, 1, 2)
    read = _read(e, fns, types)

    def f(row: Sequence[Any]) -> Any:
        v = read(row)
        return None if v is None else v.replace(microsecond=v.microsecond // 1000 * 1000)

    return f, DataTypes.TIMESTAMP(3)


def _to_date(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """TO_DATE(string[, format]) -> DATE (default format 'yyyy-MM-dd'); NULL when it does not match."""
    _arity(e, 1, 2)
    read = _read(e, fns, types)

    def f(row: Sequence[Any]) -> Any:
        v = read(row)
        return None if v is None else v.date()

    return f, DataTypes.DATE()


def _unix_timestamp(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """UNIX_TIMESTAMP(): now in epoch seconds; UNIX_TIMESTAMP(string[, format]): the string as a wall-clock
    time in the session zone, in epoch seconds (Long.MIN_VALUE when the format does not read it)."""
    _arity(e, 0, 2)
    zone = session_zone.current()
    if not fns:
        return (lambda row: int(datetime.datetime.now(datetime.UTC).timestamp())), DataTypes.BIGINT(False)
    _need(e, types, 0, ("STRING",), "a STRING")
    a = fns[0]
    fmt = fns[1] if len(fns) > 1 else (lambda row: DEFAULT_FORMAT)

    def f(row: Sequence[Any]) -> Any:
        s, pattern = a(row), fmt(row)
        if s is None or pattern is None:
            return None
        try:
            local = parse_datetime(s, pattern)
        except (ValueError, StopIteration):
            return LONG_MIN
        return int((session_zone.to_instant(local, zone) - _EPOCH).total_seconds())

    return f, DataTypes.BIGINT(_nullable(types))


def _from_unixtime(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """FROM_UNIXTIME(seconds[, format]) -> STRING, the instant's wall-clock time in the session zone."""
    _arity(e, 1, 2)
    if not types[0].is_numeric:
        raise ValidationException(f"{e.sql()}: argument {e.args[0].sql()} is {types[0]}, expected a numeric type")
    zone = session_zone.current()
    a = fns[0]
    fmt = fns[1] if len(fns) > 1 else (lambda row: DEFAULT_FORMAT)

    def f(row: Sequence[Any]) -> Any:
        n, pattern = a(row), fmt(row)
        if n is None or pattern is None:
            return None
        local = session_zone.to_local(_EPOCH + datetime.timedelta(seconds=int(n)), zone)
        return format_datetime(local, pattern)

    return f, DataTypes.STRING(_nullable(types))


# -- arithmetic on units ---------------------------------------------------------------------------
def _add_months(v: datetime.datetime, months: int) -> datetime.datetime:
    total = v.year * 12 + (v.month - 1) + months
    year, month = divmod(total, 12)
    day = min(v.day, calendar.monthrange(year, month + 1)[1])
    return v.replace(year=year, month=month + 1, day=day)


def _plus(v: datetime.datetime, unit: str, n: int) -> datetime.datetime:
    if unit in ("YEAR", "QUARTER", "MONTH"):
        return _add_months(v, n * {"YEAR": 12, "QUARTER": 3, "MONTH": 1}[unit])
    if unit == "MILLISECOND":
        return v + datetime.timedelta(milliseconds=n)
    return v + datetime.timedelta(seconds=n * _UNIT_SECONDS[unit])


def _unit(e: Expression, allowed: tuple[str, ...]) -> str:
    unit = str(e.value or "").upper()
    unit = {"SQL_TSI_" + u: u for u in allowed}.get(unit, unit)
    if unit not in allowed:
        raise ValidationException(f"{e.sql()}: unknown time unit {unit!r}; expected one of {', '.join(allowed)}")
    return unit


_ADD_UNITS = ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND")


def _timestampadd(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """TIMESTAMPADD(unit, n, timestamp|date): the argument's type (a DATE plus hours is a TIMESTAMP)."""
    _arity(e, 2, 2)
    unit = _unit(e, _ADD_UNITS)
    if not types[0].is_integral:
        raise ValidationException(f"{e.sql()}: argument {e.args[0].sql()} is {types[0]}, expected an integer type")
    _need(e, types, 1, ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE"), "a TIMESTAMP or DATE")
    n_fn, ts_fn = fns
    t = types[1]
    date_result = t.root == "DATE" and unit in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY")

    def f(row: Sequence[Any]) -> Any:
        n, v = n_fn(row), ts_fn(row)
        if n is None or v is None:
            return None
        shifted = _plus(v if isinstance(v, datetime.datetime) else datetime.datetime(v.year, v.month, v.day), unit, n)
        return shifted.date() if date_result else shifted

    result = t if t.root != "DATE" or date_result else DataTypes.TIMESTAMP(3)
    return f, DataType(result.root, _nullable(types), result.precision)


def _months_between(a: datetime.datetime, b: datetime.datetime) -> int:
    """Whole months from a to b, toward zero (a month counts once its day and time are reached)."""
    months = (b.year - a.year) * 12 + (b.month - a.month)
    if months > 0 and _add_months(a, months) > b:
        months -= 1
    elif months < 0 and _add_months(a, months) < b:
        months += 1
    return months


def _timestampdiff(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """TIMESTAMPDIFF(unit, t1, t2) -> INT: (t2 - t1) in whole units, toward zero."""
    _arity(e, 2, 2)
    unit = _unit(e, _ADD_UNITS)
    for i in (0, 1):
        _need(e, types, i, ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE"), "a TIMESTAMP or DATE")
    a, b = fns

    def f(row: Sequence[Any]) -> Any:
        x, y = a(row), b(row)
        if x is None or y is None:
            return None
        x = x if isinstance(x, datetime.datetime) else datetime.datetime(x.year, x.month, x.day)
        y = y if isinstance(y, datetime.datetime) else datetime.datetime(y.year, y.month, y.day)
        if unit in ("YEAR", "QUARTER", "MONTH"):
            return int(_months_between(x, y) / {"YEAR": 12, "QUARTER": 3, "MONTH": 1}[unit])
        micros = (y - x) // datetime.timedelta(microseconds=1)
        per = 1000 if unit == "MILLISECOND" else _UNIT_SECONDS[unit] * 1_000_000
        q = abs(micros) // per
        return q if micros >= 0 else -q

    return f, DataTypes.INT(_nullable(types))


def _truncate(v: datetime.datetime, unit: str) -> datetime.datetime:
    if unit == "YEAR":
        return datetime.datetime(v.year, 1, 1)
    if unit == "QUARTER":
        return datetime.datetime(v.year, (v.month - 1) // 3 * 3 + 1, 1)
    if unit == "MONTH":
        return datetime.datetime(v.year, v.month, 1)
    if unit == "WEEK":  # Flink (Calcite): weeks start on Sunday
        day = datetime.datetime(v.year, v.month, v.day)
        return day - datetime.timedelta(days=(day.weekday() + 1) % 7)
    if unit == "DAY":
        return datetime.datetime(v.year, v.month, v.day)
    if unit == "HOUR":
        return v.replace(minute=0, second=0, microsecond=0)
    if unit == "MINUTE":
        return v.replace(second=0, microsecond=0)
    if unit == "SECOND":
        return v.replace(microsecond=0)
    return v.replace(microsecond=v.microsecond // 1000 * 1000)  # MILLISECOND


def floor_ceil_time(e: Expression, fns: list[Fn], types: list[DataType], up: bool) -> tuple[Fn, DataType]:
    """FLOOR(ts TO unit) / CEIL(ts TO unit): the start of the unit containing ts, or of the next unit
    unless ts is already at a unit boundary. Same type as the argument."""
    unit = _unit(e, ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND"))
    _need(e, types, 0, ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE"), "a TIMESTAMP or DATE")
    (a,) = fns
    t, zone = types[0], session_zone.current()

    def f(row: Sequence[Any]) -> Any:
        v = a(row)
        if v is None:
            return None
        wall = _wall(v, t, zone)
        out = _truncate(wall, unit)
        if up and out != wall:
            out = _plus(out, "DAY", 7) if unit == "WEEK" else _plus(out, unit, 1)
        if t.root == "DATE":
            return out.date()
        return session_zone.to_instant(out, zone) if t.root == "TIMESTAMP_LTZ" else out

    return f, DataType(t.root, t.nullable, t.precision)


_EXTRACT: dict[str, Callable[[datetime.datetime], int]] = {
    "YEAR": lambda v: v.year,
    "QUARTER": lambda v: (v.month - 1) // 3 + 1,
    "MONTH": lambda v: v.month,
    "WEEK": lambda v: v.isocalendar()[1],
    "DAY": lambda v: v.day,
    "DAYOFMONTH": lambda v: v.day,
    "DOY": lambda v: v.timetuple().tm_yday,
    "DAYOFYEAR": lambda v: v.timetuple().tm_yday,
    "DOW": lambda v: (v.weekday() + 1) % 7 + 1,  # Sunday = 1 .. Saturday = 7
    "DAYOFWEEK": lambda v: (v.weekday() + 1) % 7 + 1,
    "HOUR": lambda v: v.hour,
    "MINUTE": lambda v: v.minute,
    "SECOND": lambda v: v.second,
    "MILLISECOND": lambda v: v.second * 1000 + v.microsecond // 1000,
    "EPOCH": lambda v: int((v - _EPOCH).total_seconds()),
}


def _extract(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """EXTRACT(unit FROM t), YEAR(t), MONTH(t), ... -> BIGINT."""
    unit = _unit(e, tuple(_EXTRACT))
    _need(e, types, 0, ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE"), "a TIMESTAMP or DATE")
    (a,) = fns
    t, zone, get = types[0], session_zone.current(), _EXTRACT[unit]
    return (lambda row: None if (v := a(row)) is None else get(_wall(v, t, zone))), DataTypes.BIGINT(t.nullable)


def _arity(e: Expression, low: int, high: int) -> None:
    if not low <= len(e.args) <= high:
        raise ValidationException(f"{e.sql()}: {e.name.upper()} takes {low} to {high} arguments, got {len(e.args)}")


def _now_ms() -> datetime.datetime:
    t = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def _clock(kind: str) -> Builder:
    """CURRENT_TIMESTAMP/NOW() -> TIMESTAMP_LTZ(3) (the instant); LOCALTIMESTAMP -> TIMESTAMP(3) and
    CURRENT_DATE -> DATE (the wall clock in the session zone). Evaluated per record in streaming, as Flink."""

    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        _arity(e, 0, 0)
        zone = session_zone.current()
        if kind == "instant":
            return (lambda row: _now_ms()), DataTypes.TIMESTAMP_LTZ(3, False)
        if kind == "local":
            return (lambda row: session_zone.to_local(_now_ms(), zone)), DataTypes.TIMESTAMP(3, False)
        return (lambda row: session_zone.to_local(_now_ms(), zone).date()), DataTypes.DATE(False)

    return build


def _extractor(unit: str) -> Builder:
    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        return _extract(Expression("call", e.name, e.args, value=unit), fns, types)

    return build


CALLS: dict[str, Builder] = {
    "date_format": _date_format,
    "to_timestamp": _to_timestamp,
    "to_date": _to_date,
    "unix_timestamp": _unix_timestamp,
    "from_unixtime": _from_unixtime,
    "timestampadd": _timestampadd,
    "timestampdiff": _timestampdiff,
    "extract": _extract,
    **{name.lower(): _extractor(name) for name in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAYOFMONTH", "DAYOFYEAR",
                                                    "DAYOFWEEK", "HOUR", "MINUTE", "SECOND")},
    "current_timestamp": _clock("instant"),
    "now": _clock("instant"),
    "localtimestamp": _clock("local"),
    "current_date": _clock("date"),
}
