"""Reading a pickled file of a checkpoint back for a restore (operator state files, channel state).

A missing, truncated or foreign file fails in many ways; each is one StateRestoreError naming the
operator uid and the file's URI, so a restore that cannot use a checkpoint says which file and why.
"""

from __future__ import annotations

import pickle
from typing import TypeVar

from strom.runtime.checkpoint.layout import resolve_relative
from strom.runtime.checkpoint.storage import CheckpointStorage
from strom.runtime.state.api import StateRestoreError

T = TypeVar("T")


def read_pickled(
    storage: CheckpointStorage,
    directory: str,
    relative: str,
    expected: type[T],
    *,
    operator_uid: str,
    what: str,
    expected_as: str,
) -> T:
    """The object pickled in `relative` (under the checkpoint `directory`), which must be an `expected`.
    Errors call the file `what` ("state file") and the object it should hold `expected_as`."""
    path = resolve_relative(directory, relative)
    try:
        obj = pickle.loads(storage.read_bytes(path))
    except Exception as e:  # a missing, truncated or foreign file fails in many ways; all mean "unusable"
        raise StateRestoreError(
            f"operator uid {operator_uid!r}: cannot read its {what} {storage.uri_of(path)}: {e}"
        ) from e
    if not isinstance(obj, expected):
        raise StateRestoreError(f"operator uid {operator_uid!r}: {storage.uri_of(path)} is not {expected_as}")
    return obj
