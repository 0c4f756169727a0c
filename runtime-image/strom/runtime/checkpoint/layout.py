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
