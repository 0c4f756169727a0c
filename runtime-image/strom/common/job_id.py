"""`JobID` (`pyflink.common.JobID`): a job's id, 32 hex digits.

A `str` subclass, so Strom's job ids (strings everywhere: REST paths, the CLI, JobClient) compare
and print as before, with PyFlink's accessors.
"""

from __future__ import annotations


class JobID(str):
    def to_hex_string(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"JobID({str(self)!r})"
