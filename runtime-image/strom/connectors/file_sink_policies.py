"""What a FileSink decides per record: the bucket (directory), when to roll a part file,
and how part files are named (PyFlink's BucketAssigner, RollingPolicy, OutputFileConfig) — also
which hidden in-progress files a restarted subtask may remove as leftovers of earlier attempts.

Pure decisions without I/O; the writer in `file_sink` applies them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from zoneinfo import ZoneInfo

# -- part file naming -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OutputFileConfig:
    """Prefix and suffix of part file names: `<prefix>-<uuid>-<subtask>-<n><suffix>`."""

    part_prefix: str = "part"
    part_suffix: str = ""

    @staticmethod
    def builder() -> OutputFileConfigBuilder:
        return OutputFileConfigBuilder()

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix


class OutputFileConfigBuilder:
    def __init__(self) -> None:
        self._prefix = "part"
        self._suffix = ""

    def with_part_prefix(self, prefix: str) -> OutputFileConfigBuilder:
        self._prefix = prefix
        return self

    def with_part_suffix(self, suffix: str) -> OutputFileConfigBuilder:
        self._suffix = suffix
        return self

    def build(self) -> OutputFileConfig:
        return OutputFileConfig(self._prefix, self._suffix)


# -- in-progress files and their owners ----------------------------------------------------------
# An in-progress part is `.<final name>.inprogress.<owner>.<random>`: the final name carries the subtask
# index (`<prefix>-<uuid>-<subtask>-<n><suffix>`), the owner says which sink of which job run wrote it.

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def in_progress_owner(sink_id: str, operator_uid: str) -> str:
    """The owner token of a sink's in-progress files: the same for every attempt of the job and after a
    JobManager failover (the sink object with its id travels in the job graph), different for another
    submission of the program (a new sink object) and for another sink of the job (its operator uid)."""
    return hashlib.sha256(f"{sink_id}/{operator_uid}".encode()).hexdigest()[:16]


def in_progress_name(final_name: str, owner: str, unique: str) -> str:
    return f".{final_name}.inprogress.{owner}.{unique}"


def in_progress_subtask(name: str, config: OutputFileConfig, owner: str) -> int | None:
    """The subtask index in the name of an in-progress file of `owner` (with `config`'s prefix and
    suffix); None for any other file: finished parts, other sinks' or other jobs' files, foreign names."""
    m = re.fullmatch(
        rf"\.{re.escape(config.part_prefix)}-{_UUID}-(\d+)-\d+{re.escape(config.part_suffix)}"
        rf"\.inprogress\.{re.escape(owner)}\.[0-9a-f]{{32}}",
        name,
    )
    return int(m.group(1)) if m else None


def is_leftover_of_earlier_attempt(
    name: str, *, config: OutputFileConfig, owner: str, subtask_index: int, parallelism: int
) -> bool:
    """Whether a starting writer of subtask `subtask_index` (of `parallelism`) removes `name` from its
    bucket directories. Called before the writer opens any part and after the subtask committed the
    pending files of the checkpoint it restores, so an in-progress file it may remove was written by an
    earlier attempt and is referenced by nothing that will commit it. It takes the files of old
    subtask k when k % parallelism == subtask_index — the same rule that hands old subtask k's
    committables to one new subtask — so at another parallelism each old subtask's files have exactly one
    remover, and never a file of another running subtask (those have index < parallelism, != its own)."""
    k = in_progress_subtask(name, config, owner)
    return k is not None and k % parallelism == subtask_index


# -- rolling ----------------------------------------------------------------------------------


class PartFileInfo(Protocol):
    """What a rolling policy may know about the in-progress part file."""

    def get_bucket_id(self) -> str: ...

    def get_creation_time(self) -> int: ...

    def get_last_update_time(self) -> int: ...

    def get_size(self) -> int: ...


class RollingPolicy:
    """When the in-progress part file is closed and a new one started. Subclass it for a custom policy."""

    def should_roll_on_checkpoint(self, part: PartFileInfo) -> bool:
        return False

    def should_roll_on_event(self, part: PartFileInfo, element: Any) -> bool:
        return False

    def should_roll_on_processing_time(self, part: PartFileInfo, current_time: int) -> bool:
        return False

    @staticmethod
    def default_rolling_policy(
        part_size: int = 1024 * 1024 * 128,
        rollover_interval: int = 60 * 1000,
        inactivity_interval: int = 60 * 1000,
    ) -> RollingPolicy:
        return DefaultRollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> RollingPolicy:
        return OnCheckpointRollingPolicy()


class DefaultRollingPolicy(RollingPolicy):
    """Roll past `part_size` bytes, after `rollover_interval` ms open, or `inactivity_interval` ms idle."""

    def __init__(self, part_size: int, rollover_interval: int, inactivity_interval: int) -> None:
        for name, v in (("part_size", part_size), ("rollover_interval", rollover_interval),
                        ("inactivity_interval", inactivity_interval)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"default_rolling_policy: {name} must be a positive integer, got {v!r}")
        self.part_size = part_size
        self.rollover_interval = rollover_interval
        self.inactivity_interval = inactivity_interval

    def should_roll_on_checkpoint(self, part: PartFileInfo) -> bool:
        return part.get_size() > self.part_size

    def should_roll_on_event(self, part: PartFileInfo, element: Any) -> bool:
        return part.get_size() > self.part_size

    def should_roll_on_processing_time(self, part: PartFileInfo, current_time: int) -> bool:
        return (
            current_time - part.get_creation_time() >= self.rollover_interval
            or current_time - part.get_last_update_time() >= self.inactivity_interval
        )


class OnCheckpointRollingPolicy(RollingPolicy):
    """Roll on every checkpoint only (and at the end of input)."""

    def should_roll_on_checkpoint(self, part: PartFileInfo) -> bool:
        return True


# -- buckets ----------------------------------------------------------------------------------


class BucketAssignerContext(Protocol):
    def current_processing_time(self) -> int: ...

    def current_watermark(self) -> int: ...

    def timestamp(self) -> int | None: ...


class BucketAssigner:
    """The bucket (sub-directory of the base path, '' = the base path) of each record.
    Subclass it and override `get_bucket_id` for a custom assignment."""

    def get_bucket_id(self, element: Any, context: BucketAssignerContext) -> str:
        return ""

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        return BasePathBucketAssigner()

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None) -> BucketAssigner:
        return DateTimeBucketAssigner(format_str, timezone_id)


class BasePathBucketAssigner(BucketAssigner):
    """Every record goes to the base path itself."""


class DateTimeBucketAssigner(BucketAssigner):
    """Buckets named by the processing time, formatted with a Java DateTimeFormatter pattern."""

    def __init__(self, format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None) -> None:
        self.format_str = format_str
        self.timezone_id = timezone_id
        self._fields = parse_java_date_pattern(format_str)
        self._tz = ZoneInfo(timezone_id) if timezone_id else None
        # Patterns without fractions change at most once a second: cache per second. One tuple,
        # replaced whole, because subtasks of an in-process job share this object across threads.
        self._resolution_ms = 1 if "S" in {f for f, _ in self._fields} else 1000
        self._cache: tuple[int | None, str] = (None, "")

    # hot path: called per record
    def get_bucket_id(self, element: Any, context: BucketAssignerContext) -> str:
        now = context.current_processing_time()
        slot = now // self._resolution_ms
        cache = self._cache
        if cache[0] == slot:
            return cache[1]
        text = format_java_date(self._fields, now, self._tz)
        self._cache = (slot, text)
        return text


# (letter, count) -> text, for the pattern letters of java.time.format.DateTimeFormatter that
# bucket names use. A literal run is stored with letter "" and its text as count's place.
_Field = tuple[str, Any]


def _year(t: dt.datetime, n: int) -> str:
    return f"{t.year % 100:02d}" if n == 2 else f"{t.year:0{n}d}"


def _month(t: dt.datetime, n: int) -> str:
    if n >= 4:
        return t.strftime("%B")
    if n == 3:
        return t.strftime("%b")
    return f"{t.month:0{n}d}"


def _fraction(t: dt.datetime, n: int) -> str:
    return f"{t.microsecond:06d}"[:n].ljust(n, "0")


_LETTERS: dict[str, Callable[[dt.datetime, int], str]] = {
    "y": _year,
    "u": _year,
    "M": _month,
    "L": _month,
    "d": lambda t, n: f"{t.day:0{n}d}",
    "D": lambda t, n: f"{t.timetuple().tm_yday:0{n}d}",
    "H": lambda t, n: f"{t.hour:0{n}d}",
    "k": lambda t, n: f"{t.hour or 24:0{n}d}",
    "h": lambda t, n: f"{t.hour % 12 or 12:0{n}d}",
    "m": lambda t, n: f"{t.minute:0{n}d}",
    "s": lambda t, n: f"{t.second:0{n}d}",
    "S": _fraction,
    "a": lambda t, n: "AM" if t.hour < 12 else "PM",
    "E": lambda t, n: t.strftime("%A" if n >= 4 else "%a"),
    "Z": lambda t, n: t.strftime("%z"),
}


def parse_java_date_pattern(pattern: str) -> list[_Field]:
    """Split a DateTimeFormatter pattern into fields and literals ('quoted' text, '' = a quote)."""
    fields: list[_Field] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end == -1:
                raise ValueError(f"date-time bucket format {pattern!r}: unterminated quote at position {i}")
            fields.append(("", pattern[i + 1 : end] if end > i + 1 else "'"))
            i = end + 1
        elif c.isalpha():
            j = i
            while j < n and pattern[j] == c:
                j += 1
            if c not in _LETTERS:
                raise ValueError(
                    f"date-time bucket format {pattern!r}: unsupported pattern letter {c!r}; "
                    f"supported: {''.join(sorted(_LETTERS))}"
                )
            fields.append((c, j - i))
            i = j
        else:
            fields.append(("", c))
            i += 1
    return fields


def format_java_date(fields: list[_Field], epoch_ms: int, tz: dt.tzinfo | None) -> str:
    """Format a time with parsed pattern fields; tz None = the system's local zone, as Flink's default."""
    t = dt.datetime.fromtimestamp(epoch_ms / 1000.0, tz)
    if tz is None:
        t = t.astimezone()  # attach the local offset so that 'Z' can print it
    return "".join(_LETTERS[f](t, c) if f else c for f, c in fields)
