"""The session time zone (`table.local-time-zone`, Flink's TableConfig key): how TIMESTAMP_LTZ values
(instants, held as naive UTC datetimes) are shown and how CURRENT_TIMESTAMP, LOCALTIMESTAMP,
CURRENT_DATE, UNIX_TIMESTAMP and FROM_UNIXTIME read the wall clock.

The TableEnvironment sets it from its configuration before it plans or prints; functions capture the
zone when they are compiled, so a job's operators keep the zone they were planned with.
"""

from __future__ import annotations

import datetime
import zoneinfo

KEY = "table.local-time-zone"
DEFAULT = "default"  # Flink's default: the JVM's (here: the process's) zone

_zone_name = DEFAULT


def zone_for(name: str) -> datetime.tzinfo:
    """'default', a region id (Europe/Berlin), 'UTC' or a fixed offset ('GMT+08:00'); else ValueError."""
    if name == DEFAULT:
        local = datetime.datetime.now().astimezone().tzinfo
        return local if local is not None else datetime.UTC
    if name.upper() in ("UTC", "GMT", "Z"):
        return datetime.UTC
    for prefix in ("GMT", "UTC"):
        if name.upper().startswith(prefix) and name[len(prefix):][:1] in "+-":
            sign = 1 if name[len(prefix)] == "+" else -1
            hh, _, mm = name[len(prefix) + 1:].partition(":")
            return datetime.timezone(sign * datetime.timedelta(hours=int(hh), minutes=int(mm or 0)))
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{KEY}: unknown time zone {name!r}; use 'default', a region id such as "
                         "'Asia/Shanghai', 'UTC' or an offset such as 'GMT+08:00'") from None


def set_zone(name: str) -> None:
    global _zone_name
    zone_for(name)
    _zone_name = name


def current() -> datetime.tzinfo:
    return zone_for(_zone_name)


def to_local(instant: datetime.datetime, zone: datetime.tzinfo | None = None) -> datetime.datetime:
    """A TIMESTAMP_LTZ (naive UTC) as the wall-clock time in the zone (naive)."""
    z = zone or current()
    return instant.replace(tzinfo=datetime.UTC).astimezone(z).replace(tzinfo=None)


def to_instant(local: datetime.datetime, zone: datetime.tzinfo | None = None) -> datetime.datetime:
    """A wall-clock time in the zone as the instant (naive UTC)."""
    z = zone or current()
    return local.replace(tzinfo=z).astimezone(datetime.UTC).replace(tzinfo=None)
