"""The ids that name things across the engine, as distinct types.

Each is a `NewType` over `str` or `int`: free at run time (the value *is* the str or int, so JSON,
REST paths and pickles are unchanged), but to mypy a `JobId` is not a `VertexId`, and a plain `str`
becomes one only where the code says so (`JobId(text)`) — at the edge where it was read or made.
The user API's `JobID` (`strom.common.job_id`, PyFlink's class with `to_hex_string`) is a `str`
subclass, so it is accepted wherever a `str` is; internally, job ids are `JobId`.
"""

from __future__ import annotations

import secrets
from typing import NewType

JobId = NewType("JobId", str)  # 32 lower-case hex digits, like Flink's JobID
VertexId = NewType("VertexId", str)  # 32 hex digits, like Flink's JobVertexID
TaskManagerId = NewType("TaskManagerId", str)  # free-form, e.g. "127.0.0.1:6122-a1b2c3"
CheckpointId = NewType("CheckpointId", int)  # 1, 2, ... per job, as Flink numbers checkpoints (chk-<n>)
OperatorUid = NewType("OperatorUid", str)  # what state is addressed by in every snapshot (with the key group)


def new_job_id() -> JobId:
    """A fresh job id in Flink's JobID text form (the REST layer rejects other forms with 400)."""
    return JobId(secrets.token_hex(16))


def is_flink_id(text: str) -> bool:
    """Flink's JobID / JobVertexID text form: 32 hex digits."""
    return len(text) == 32 and all(c in "0123456789abcdefABCDEF" for c in text)
