"""Errors of checkpoint storage and metadata. Each names the object (a full URI) it is about.

Messages never contain credentials: S3 errors name the endpoint and the bucket only.
"""

from __future__ import annotations


class CheckpointStorageError(Exception):
    """Reading, writing, listing or deleting checkpoint data failed."""


class StorageObjectNotFoundError(CheckpointStorageError, FileNotFoundError):
    """The object does not exist (a FileNotFoundError too, so plain `except FileNotFoundError` works)."""


class StorageAccessError(CheckpointStorageError):
    """The storage refused or could not be reached: wrong credentials, no bucket, no endpoint, disk error."""


class CheckpointMetadataError(CheckpointStorageError):
    """A `_metadata` document is missing, unreadable, of an unknown version, or inconsistent."""


class CheckpointFailuresExceeded(RuntimeError):
    """More consecutive checkpoints failed than execution.checkpointing.tolerable-failed-checkpoints allows:
    the job fails (and restarts by its restart strategy)."""
