"""`CheckpointStorage`: the object store checkpoints and savepoints are written to.

Two implementations behind one protocol, chosen by the URI scheme in `checkpoint_storage_for`:
`FileCheckpointStorage` (`file:///abs/dir` or a plain path) and `S3CheckpointStorage`
(`s3://bucket/prefix`, also Flink's `s3a://` and `s3p://`, through boto3). Paths are relative to
the storage root (see `layout`); a prefix always names a directory. Writes are atomic: a reader
sees the whole old object or the whole new one, never a part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from strom.common.config_options import ConfigError, ConfigLookup
from strom.runtime.checkpoint.file_storage import FileCheckpointStorage

if TYPE_CHECKING:
    from strom.runtime.checkpoint.s3_storage import S3CheckpointStorage

__all__ = ["CheckpointStorage", "FileCheckpointStorage", "S3CheckpointStorage", "checkpoint_storage_for"]

S3_SCHEMES = ("s3", "s3a", "s3p")


@runtime_checkable
class CheckpointStorage(Protocol):
    """Objects under one root. Every method raises a `CheckpointStorageError` naming the URI on failure."""

    @property
    def root_uri(self) -> str:
        """The URI of the root, e.g. 'file:///data/checkpoints' or 's3://bucket/prefix'."""

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace the object atomically."""

    def read_bytes(self, path: str) -> bytes:
        """The object's content; `StorageObjectNotFoundError` if it does not exist."""

    def exists(self, path: str) -> bool:
        """Whether the object exists (directories are not objects)."""

    def list(self, prefix: str = "") -> list[str]:
        """Sorted root-relative paths of all objects under the directory `prefix` ('' = everything)."""

    def delete(self, path: str) -> None:
        """Delete the object; deleting a missing object is not an error (discarding is idempotent)."""

    def delete_prefix(self, prefix: str) -> None:
        """Delete every object under the directory `prefix`."""

    def uri_of(self, path: str) -> str:
        """The full URI of a root-relative path, for messages and for the REST API's locations."""


def uri_scheme(uri: str) -> str:
    """The lower-case scheme of a URI, '' for a plain path."""
    head, sep, _ = uri.partition("://")
    if sep:
        return head.lower()
    if uri.startswith("file:"):
        return "file"
    return ""


def checkpoint_storage_for(uri: str, config: ConfigLookup | None = None) -> CheckpointStorage:
    """The storage for `uri` (a `state.checkpoints.dir` / `state.savepoints.dir` value or a savepoint path).

    `config` (a `Configuration`, a mapping or None) supplies the `s3.*` options of S3 storage.
    """
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError(
            f"invalid checkpoint storage URI {uri!r}: expected file:///path, a local path or s3://bucket/prefix "
            "(set 'state.checkpoints.dir' or 'state.savepoints.dir')"
        )
    uri = uri.strip()
    scheme = uri_scheme(uri)
    if scheme in ("", "file"):
        return FileCheckpointStorage(uri)
    if scheme in S3_SCHEMES:
        from strom.runtime.checkpoint.s3_storage import S3CheckpointStorage, S3Settings

        return S3CheckpointStorage(uri, S3Settings.from_config(config))
    raise ConfigError(
        f"unsupported checkpoint storage URI {uri!r}: expected file:///path, a local path or s3://bucket/prefix"
    )


def __getattr__(name: str) -> object:  # module attribute hook (PEP 562): the lazily imported class
    # boto3 is imported only when S3 is used: it costs a few hundred milliseconds per process
    if name == "S3CheckpointStorage":
        from strom.runtime.checkpoint.s3_storage import S3CheckpointStorage

        return S3CheckpointStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
