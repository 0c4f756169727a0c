"""Savepoints: where one goes, how a completed checkpoint becomes one, and whether a job may restore it.

A savepoint is a checkpoint triggered on demand (`CheckpointCoordinator.trigger_savepoint`). Its
tasks write their state like any checkpoint's; on completion `finalize_savepoint` copies the
state files into `<target>/savepoint-<job6>-<random>/` and writes a `_metadata` with
`is_savepoint: true` whose paths are relative to that directory, so the directory is
self-contained and can be moved. Savepoints never enter the `CompletedCheckpointStore`, so
retention never subsumes or deletes them.

`unclaimed_operators` is the restore check: state of an operator uid the new job lacks fails the
restore unless `execution.savepoint.ignore-unclaimed-state` (Flink's allowNonRestoredState).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import unquote

from strom.common import config_options as opts
from strom.common.config_options import ConfigError, ConfigLookup
from strom.common.configuration import Configuration
from strom.common.ids import JobId
from strom.runtime.checkpoint.layout import METADATA_FILE, savepoint_dir_name
from strom.runtime.checkpoint.metadata import CheckpointMetadata, OperatorSnapshotRef, read_metadata, write_metadata
from strom.runtime.checkpoint.storage import CheckpointStorage, checkpoint_storage_for
from strom.runtime.checkpoint.task_snapshots import savepoint_state_file

SavepointCallback = Callable[[str | None, str | None], None]  # (location URI, failure message)


@dataclass(frozen=True, slots=True)
class SavepointTarget:
    """Where one requested savepoint is written, and whom to tell: `on_done(location, None)` when it
    completed, `on_done(None, reason)` when it failed."""

    storage: CheckpointStorage
    directory: str  # relative to the storage root: 'savepoint-<job6>-<random>'
    on_done: SavepointCallback
    # stop-with-savepoint: '' (the job goes on), STOP_SUSPEND (sources emit nothing after the barrier)
    # or STOP_DRAIN (sources emit the maximum watermark before it, and end once it completed)
    stop: str = ""

    @property
    def location(self) -> str:
        return self.storage.uri_of(self.directory)


def savepoint_target_uri(requested: str | None, *configs: Configuration | None) -> str:
    """The target directory of a savepoint: the request's, else `state.savepoints.dir` of the first
    configuration that sets it; a `ConfigError` naming both keys when neither is given."""
    if requested:
        return requested
    for config in configs:
        value = config.get(opts.SAVEPOINTS_DIR) if config is not None else None
        if value:
            return str(value)
    raise ConfigError(
        "no savepoint target directory: give 'target-directory' (REST) or a directory argument (CLI), "
        f"or set '{opts.SAVEPOINTS_DIR.key}' in the job's or the cluster's configuration"
    )


STOP_SUSPEND, STOP_DRAIN = "suspend", "drain"
_S3_SCHEMES = ("s3", "s3a", "s3p")
VALID_TARGET_EXAMPLE = "an absolute URI such as file:///savepoints or s3://bucket/savepoints, without '..' segments"


def savepoint_target_problem(value: str) -> str | None:
    """Why `value` cannot be a requested savepoint target directory, or None when it can.

    A request names where the JobManager writes, so it must be unambiguous: `file:///abs/path` (or a
    plain absolute path), `s3://bucket/prefix`. A relative path would resolve against the JobManager's
    working directory, and '..' (also percent-encoded) could climb out of the prefix the operator
    meant; both are refused. Pure: no I/O, nothing resolved.
    """
    text = value.strip()
    if not text or any(ord(c) < 0x20 or c == "\x7f" for c in text):
        return "it is empty or holds control characters"
    scheme, sep, rest = text.partition("://")
    if not sep:
        if text.lower().startswith("file:"):
            text = text[len("file:") :]  # Hadoop's form file:/abs/path
            if not text.startswith("/"):
                return "a file URI has an absolute path (file:///path)"
        if not text.startswith("/"):
            return "a relative path would resolve against the JobManager's working directory"
        path = text
    elif scheme.lower() == "file":
        host, slash, path = rest.partition("/")
        if host not in ("", "localhost") or not slash:
            return "a file URI has no host and an absolute path (file:///path)"
        path = "/" + path
    elif scheme.lower() in _S3_SCHEMES:
        bucket, _, path = rest.partition("/")
        if not bucket:
            return "an S3 URI names its bucket (s3://bucket/prefix)"
    else:
        return f"the scheme {scheme!r} is not a savepoint storage (file or s3)"
    if any(segment in ("..", ".") for segment in _segments(path)):
        return "it holds a '.' or '..' segment (also when percent-encoded)"
    return None


def _segments(path: str) -> list[str]:
    decoded = path
    for _ in range(3):  # '%252e' decodes to '%2e', then to '.': decode until stable, a few rounds at most
        decoded, previous = unquote(decoded), decoded
        if decoded == previous:
            break
    return [*path.split("/"), *decoded.replace("\\", "/").split("/")]


def new_savepoint_target(
    job_id: JobId, target_uri: str, config: ConfigLookup | None, on_done: SavepointCallback, *, stop: str = ""
) -> SavepointTarget:
    """A fresh `savepoint-<job6>-<random>` directory under `target_uri`."""
    return SavepointTarget(checkpoint_storage_for(target_uri, config), savepoint_dir_name(job_id), on_done, stop)


def finalize_savepoint(
    source: CheckpointStorage, checkpoint_directory: str, metadata: CheckpointMetadata, target: SavepointTarget
) -> str:
    """Copy a completed checkpoint's state files into the savepoint directory, then write its
    `_metadata` (last, so an interrupted copy never looks complete); returns the location URI.
    Incremental RocksDB state is written in canonical form, so its shared files are not needed."""
    renamed: dict[str, str] = {}
    for uid, op in metadata.operators.items():
        for relative in dict.fromkeys([*op.keyed.values(), *op.operator_state.values()]):
            name = relative.replace("../", "").replace("/", "_")  # one flat directory
            renamed[relative] = name
            data = savepoint_state_file(source, checkpoint_directory, relative, uid)
            target.storage.write_bytes(f"{target.directory}/{name}", data)
    operators = {uid: _renamed(op, renamed) for uid, op in metadata.operators.items()}
    savepoint = replace(metadata, is_savepoint=True, operators=operators)
    write_metadata(target.storage, target.directory, savepoint)
    return target.location


def _renamed(op: OperatorSnapshotRef, renamed: Mapping[str, str]) -> OperatorSnapshotRef:
    return replace(
        op,
        keyed={r: renamed[p] for r, p in op.keyed.items()},
        operator_state={i: renamed[p] for i, p in op.operator_state.items()},
        shared_files=(),
    )


def unclaimed_operators(metadata: CheckpointMetadata, job_uids: Iterable[str]) -> list[str]:
    """Operator uids with state in the savepoint that the job does not have, sorted."""
    present = set(job_uids)
    return sorted(uid for uid in metadata.operators if uid not in present)


def check_savepoint_restore(
    path: str, job_uids: Iterable[str], *, allow_non_restored: bool, config: ConfigLookup | None
) -> CheckpointMetadata:
    """The savepoint's metadata; a `ValueError` when it cannot be restored into a job with `job_uids`."""
    metadata = read_metadata(path, config=config)
    unclaimed = unclaimed_operators(metadata, job_uids)
    if unclaimed and not allow_non_restored:
        raise ValueError(
            f"the savepoint {path} holds state of operator uid(s) {', '.join(repr(u) for u in unclaimed)} that the "
            f"job does not have; give the operator(s) back their uid, or restore anyway with "
            f"--allow-non-restored-state ('{opts.SAVEPOINT_IGNORE_UNCLAIMED_STATE.key}: true')"
        )
    return metadata


def dispose_savepoint(path: str, config: ConfigLookup | None) -> str:
    """Delete the savepoint at `path` (its directory, or its `_metadata` file's URI) and return its URI.

    As Flink's disposal does, only what the savepoint owns is deleted: the state files its `_metadata`
    lists (all inside its directory, which `read_metadata` checks for a savepoint), then the `_metadata`
    itself, then the directory if nothing else is left in it. A file someone else put there survives.
    A directory whose `_metadata` is missing, unreadable or that of a checkpoint raises
    (`CheckpointStorageError` / `ValueError`) and nothing is touched.
    """
    uri = path.rstrip("/")
    if uri.endswith("/" + METADATA_FILE):
        uri = uri[: -len(METADATA_FILE) - 1]
    storage = checkpoint_storage_for(uri, config)
    metadata = read_metadata(storage, config=config)
    if not metadata.is_savepoint:
        raise ValueError(f"{uri} is a checkpoint, not a savepoint: refusing to dispose of it")
    for relative in savepoint_owned_files(metadata):
        storage.delete(relative)
    # the _metadata last: until then an interrupted disposal can be repeated
    storage.delete(METADATA_FILE)
    _remove_directory_if_empty(storage)
    return uri


def savepoint_owned_files(metadata: CheckpointMetadata) -> list[str]:
    """The files a savepoint's `_metadata` lists, relative to its directory; a path that would leave
    the directory is never among them (savepoint metadata refuses those when read, this holds anyway)."""
    return [f for f in metadata.files() if f and not f.startswith("/") and ".." not in f.split("/")]


def _remove_directory_if_empty(storage: CheckpointStorage) -> None:
    """An object store has no directories; a local one is removed only when empty (rmdir refuses otherwise)."""
    root = getattr(storage, "root_dir", None)
    if isinstance(root, Path):
        try:
            root.rmdir()
        except OSError:
            pass  # not empty (someone else's files) or already gone: leave it
