"""Port ranges in Flink's syntax: '9249', '9250-9260', or a comma-separated list of both.

Flink's PrometheusReporter (and its other port keys that take ranges) read a port setting with
`NetUtils.getPortRangeFromString` and bind the first port of the list that is free. This module is
the pure part: parsing and validation; binding is the caller's (the metrics exporter).
"""

from __future__ import annotations

from collections.abc import Iterator

MAX_PORT = 65535


def parse_port_range(value: object) -> str:
    """The normalized text of a port list ('9249', '9250-9260,9300'); a `ValueError` naming the
    offending part when a port is not an integer in 0..65535 or a range runs backwards."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a port")
    if isinstance(value, int):
        return _ranges_text([_checked_range(value, value)])
    parts = [p.strip() for p in str(value).split(",")]
    if not parts or any(not p for p in parts):
        raise ValueError(f"empty part in port list {value!r}")
    ranges = []
    for part in parts:
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ValueError(f"{part!r} is not a port or a range such as 9250-9260") from None
        ranges.append(_checked_range(first, last))
    return _ranges_text(ranges)


def port_candidates(spec: str | int) -> Iterator[int]:
    """The ports of a port list in the order they are tried (Flink: as written)."""
    for part in parse_port_range(spec).split(","):
        lo, _, hi = part.partition("-")
        yield from range(int(lo), int(hi or lo) + 1)


def _checked_range(first: int, last: int) -> tuple[int, int]:
    for port in (first, last):
        if not 0 <= port <= MAX_PORT:
            raise ValueError(f"port {port} is outside 0..{MAX_PORT}")
    if last < first:
        raise ValueError(f"range {first}-{last} runs backwards")
    return first, last


def _ranges_text(ranges: list[tuple[int, int]]) -> str:
    return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)
