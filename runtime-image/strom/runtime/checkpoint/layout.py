"""Flink's directory layout inside a checkpoint storage root.

    <job-id>/chk-<n>/_metadata     one completed checkpoint: its metadata and exclusive state files
    <job-id>/shared/               state files several checkpoints reference (incremental backends)
    <job-id>/taskowned/            state files owned by the tasks, never deleted by the JobManager
    savepoint-<job6>-<random12>/   one savepoint: self-contained, so it can be moved

All paths are relative to the storage root, '/'-separated, without a leading '/'.
"""

from __future__ import annotations

import re
import secrets

METADATA_FILE = "_metadata"
CHECKPOINT_DIR_PREFIX = "chk-"
SHARED_STATE_DIR = "shared"
TASK_OWNED_STATE_DIR = "taskowned"

_CHECKPOINT_DIR_RE = re.compile(r"^chk-(\d+)$")


def checkpoint_dir(job_id: str, checkpoint_id: int) -> str:
    """`<job-id>/chk-<n>`, the directory of one checkpoint."""
    if checkpoint_id < 0:
        raise ValueError(f"invalid checkpoint id {checkpoint_id}: expected an integer >= 0")
    return f"{job_id}/{CHECKPOINT_DIR_PREFIX}{checkpoint_id}"


def metadata_path(directory: str) -> str:
    """The `_metadata` object of a checkpoint or savepoint directory ('' = the storage root)."""
    return f"{directory.rstrip('/')}/{METADATA_FILE}" if directory.strip("/") else METADATA_FILE


def shared_dir(job_id: str) -> str:
    """`<job-id>/shared/`, where files referenced by several checkpoints live."""
    return f"{job_id}/{SHARED_STATE_DIR}/"


def task_owned_dir(job_id: str) -> str:
    """`<job-id>/taskowned/`, state files the tasks own (the JobManager never deletes them)."""
    return f"{job_id}/{TASK_OWNED_STATE_DIR}/"


def savepoint_dir_name(job_id: str) -> str:
    """`savepoint-<first 6 characters of the job id>-<12 random hex digits>`, as Flink names them."""
    return f"savepoint-{job_id[:6]}-{secrets.token_hex(6)}"


def parse_checkpoint_dir(name: str) -> int | None:
    """The checkpoint id of a `chk-<n>` directory name (last path component), else None."""
    m = _CHECKPOINT_DIR_RE.match(name.rstrip("/").rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


def normalize_path(path: str) -> str:
    """A valid object path: relative, '/'-separated, no empty, '.' or '..' components.

    Strict because a path like '../x' or '/x' would let a caller reach outside the storage root.
    """
    if not isinstance(path, str) or not path:
        raise ValueError(f"invalid object path {path!r}: expected a non-empty relative path such as 'job/chk-1/x'")
    parts = path.split("/")
    if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise ValueError(
            f"invalid object path {path!r}: expected a relative path without '.', '..', '//' or a leading '/'"
        )
    return path


def normalize_prefix(prefix: str) -> str:
    """A directory prefix ending in '/', or '' for the whole root.

    A prefix always names a directory, so `list('job/chk-1')` never matches 'job/chk-10/...'.
    """
    stripped = prefix.strip("/") if isinstance(prefix, str) else prefix
    if stripped == "":
        return ""
    return normalize_path(stripped) + "/"


def resolve_relative(directory: str, relative: str) -> str:
    """The root-relative path of `relative`, a path written relative to `directory`.

    '..' may step out of the directory (a checkpoint references `../shared/<file>`) but never out
    of the storage root.
    """
    if not relative or relative.startswith("/") or "\\" in relative or "://" in relative:
        raise ValueError(f"invalid relative state path {relative!r} in {directory!r}: expected e.g. 'op/kg-0-63'")
    parts: list[str] = [p for p in directory.strip("/").split("/") if p]
    for part in relative.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise ValueError(f"relative state path {relative!r} in {directory!r} leaves the storage root")
            parts.pop()
        else:
            parts.append(part)
    if not parts:
        raise ValueError(f"invalid relative state path {relative!r} in {directory!r}: it names the directory")
    return "/".join(parts)
