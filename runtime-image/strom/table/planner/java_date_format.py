"""Java SimpleDateFormat / DateTimeFormatter patterns (what Flink's DATE_FORMAT, TO_TIMESTAMP, TO_DATE,
UNIX_TIMESTAMP and FROM_UNIXTIME take: 'yyyy-MM-dd HH:mm:ss') formatted and parsed in plain Python.

Letters: y year, M month (MMM short name, MMMM full name), d day, H hour 0-23, h hour 1-12, m minute,
s second, S fraction, a AM/PM, E weekday name, D day of year; text in single quotes is literal.
"""

from __future__ import annotations

import datetime
import functools
import re

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_LETTERS = set("yMdHhmsSaEDkK")


@functools.lru_cache(maxsize=256)
def tokens(pattern: str) -> tuple[tuple[str, str], ...]:
    """The pattern as (kind, text): ("field", "yyyy") or ("literal", "-")."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end == i + 1:  # '' is a quote
                out.append(("literal", "'"))
                i += 2
                continue
            end = len(pattern) if end < 0 else end
            out.append(("literal", pattern[i + 1:end]))
            i = end + 1
        elif c in _LETTERS:
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            out.append(("field", pattern[i:j]))
            i = j
        elif c.isalpha():
            raise ValueError(f"unsupported pattern letter {c!r} in date format {pattern!r}")
        else:
            out.append(("literal", c))
            i += 1
    return tuple(out)


def format_datetime(v: datetime.datetime | datetime.date, pattern: str) -> str:
    if not isinstance(v, datetime.datetime):
        v = datetime.datetime(v.year, v.month, v.day)
    parts = []
    for kind, text in tokens(pattern):
        if kind == "literal":
            parts.append(text)
            continue
        c, n = text[0], len(text)
        if c == "y":
            parts.append(f"{v.year % 100:02d}" if n == 2 else str(v.year).zfill(n))
        elif c == "M":
            parts.append(_MONTHS[v.month - 1] if n >= 4 else _MONTHS[v.month - 1][:3] if n == 3
                         else str(v.month).zfill(n))
        elif c == "d":
            parts.append(str(v.day).zfill(n))
        elif c == "D":
            parts.append(str(v.timetuple().tm_yday).zfill(n))
        elif c == "H":
            parts.append(str(v.hour).zfill(n))
        elif c == "k":
            parts.append(str(v.hour or 24).zfill(n))
        elif c == "h":
            parts.append(str(v.hour % 12 or 12).zfill(n))
        elif c == "K":
            parts.append(str(v.hour % 12).zfill(n))
        elif c == "m":
            parts.append(str(v.minute).zfill(n))
        elif c == "s":
            parts.append(str(v.second).zfill(n))
        elif c == "S":
            parts.append(f"{v.microsecond:06d}"[:n].ljust(n, "0"))
        elif c == "a":
            parts.append("AM" if v.hour < 12 else "PM")
        elif c == "E":
            parts.append(_DAYS[v.weekday()] if n >= 4 else _DAYS[v.weekday()][:3])
    return "".join(parts)


@functools.lru_cache(maxsize=256)
def _parser(pattern: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    regex, fields = [], []
    for kind, text in tokens(pattern):
        if kind == "literal":
            regex.append(re.escape(text))
            continue
        c, n = text[0], len(text)
        if c == "M" and n >= 3:
            regex.append("([A-Za-z]+)")
        elif c == "a" or c == "E":
            regex.append("([A-Za-z]+)")
        elif c == "S":
            regex.append(f"(\\d{{1,{max(n, 9)}}})")
        elif c == "y" and n != 2:
            regex.append("(\\d{1,9})" if n < 4 else f"(\\d{{{n},9}})")
        else:
            regex.append(f"(\\d{{1,{max(n, 2)}}})")
        fields.append(text)
    return re.compile("".join(regex)), tuple(fields)


def parse_datetime(text: str, pattern: str) -> datetime.datetime:
    """The whole text read by the pattern; ValueError if it does not match."""
    regex, fields = _parser(pattern)
    m = regex.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} does not match the date format {pattern!r}")
    year, month, day, hour, minute, second, micro, pm = 1970, 1, 1, 0, 0, 0, 0, None
    twelve = False
    for field, value in zip(fields, m.groups(), strict=True):
        c, n = field[0], len(field)
        if c == "y":
            year = int(value) + (2000 if n == 2 else 0)
        elif c == "M":
            month = (int(value) if n < 3 else
                     next(i + 1 for i, name in enumerate(_MONTHS) if name.lower().startswith(value.lower()[:3])))
        elif c == "d":
            day = int(value)
        elif c in "Hk":
            hour = int(value) % 24
        elif c in "hK":
            hour, twelve = int(value) % 12, True
        elif c == "m":
            minute = int(value)
        elif c == "s":
            second = int(value)
        elif c == "S":
            micro = int(value.ljust(6, "0")[:6])
        elif c == "a":
            pm = value.upper() == "PM"
    if twelve and pm:
        hour += 12
    return datetime.datetime(year, month, day, hour, minute, second, micro)
