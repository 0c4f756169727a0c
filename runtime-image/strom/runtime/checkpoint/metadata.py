"""The `_metadata` document of a checkpoint or savepoint: what was snapshotted, and where it is.

A versioned JSON document (human-readable, diffable) describing each operator's snapshot by
operator uid: its max parallelism and parallelism, and which file holds the keyed state of each
key-group range and the operator state of each subtask. State payloads live in separate files
referenced by paths RELATIVE to the checkpoint directory, so a savepoint directory can be moved or
copied to another bucket and still restores. A checkpoint may reference `../shared/<file>` (files
several checkpoints share); a savepoint references only files inside its own directory.

Reading never deletes anything: a missing or corrupt `_metadata` is an error naming its URI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from strom.common.config_options import ConfigLookup
from strom.common.ids import CheckpointId, JobId, OperatorUid
from strom.common.key_groups import KeyGroupRange
from strom.runtime.checkpoint.errors import CheckpointMetadataError, StorageObjectNotFoundError
from strom.runtime.checkpoint.layout import METADATA_FILE, metadata_path, resolve_relative
from strom.runtime.checkpoint.storage import CheckpointStorage, checkpoint_storage_for

FORMAT = "strom-checkpoint-metadata"
VERSION = 1


@dataclass(frozen=True, slots=True)
class OperatorSnapshotRef:
    """Where one operator's state is: relative paths of its state files, by key-group range and subtask.

    `shared_files` lists the files outside the checkpoint directory (e.g. `../shared/<sst>` of an
    incremental backend) so that retention can count references without reading state files.
    `channel_state` names, by subtask, the file of in-flight data an unaligned checkpoint stored with
    the subtask's task (on its first operator; `channel_state.py`).
    """

    max_parallelism: int
    parallelism: int
    keyed: Mapping[KeyGroupRange, str] = field(default_factory=dict)
    operator_state: Mapping[int, str] = field(default_factory=dict)
    shared_files: tuple[str, ...] = ()
    channel_state: Mapping[int, str] = field(default_factory=dict)

    def files(self) -> list[str]:
        """Every state file this snapshot references (relative paths)."""
        return [*self.keyed.values(), *self.operator_state.values(), *self.shared_files, *self.channel_state.values()]


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """A completed checkpoint or savepoint. `operators` is keyed by operator uid."""

    checkpoint_id: CheckpointId
    job_id: JobId
    timestamp_ms: int
    is_savepoint: bool
    operators: Mapping[OperatorUid, OperatorSnapshotRef] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)

    def files(self) -> list[str]:
        """Every state file referenced, relative to the checkpoint directory, without duplicates."""
        return list(dict.fromkeys(f for op in self.operators.values() for f in op.files()))


def encode_metadata(metadata: CheckpointMetadata) -> bytes:
    """The JSON document (validated first, so that nothing unreadable is ever written)."""
    problem = _check(metadata)
    if problem:
        raise CheckpointMetadataError(f"invalid checkpoint metadata of checkpoint {metadata.checkpoint_id}: {problem}")
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "checkpoint_id": metadata.checkpoint_id,
        "job_id": metadata.job_id,
        "timestamp_ms": metadata.timestamp_ms,
        "is_savepoint": metadata.is_savepoint,
        "properties": dict(metadata.properties),
        "operators": {
            uid: {
                "max_parallelism": op.max_parallelism,
                "parallelism": op.parallelism,
                "keyed": {f"{r.start}-{r.end}": p for r, p in sorted(op.keyed.items(), key=lambda kv: kv[0].start)},
                "operator_state": {str(i): p for i, p in sorted(op.operator_state.items())},
                "shared_files": list(op.shared_files),
                **(
                    {"channel_state": {str(i): p for i, p in sorted(op.channel_state.items())}}
                    if op.channel_state
                    else {}
                ),
            }
            for uid, op in sorted(metadata.operators.items())
        },
    }
    return (json.dumps(doc, indent=2, sort_keys=False) + "\n").encode("utf-8")


def decode_metadata(data: bytes, *, source: str = "<bytes>") -> CheckpointMetadata:
    """Parse and check a `_metadata` document; `source` (its URI) is named in every error."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointMetadataError(f"corrupt checkpoint metadata at {source}: not a JSON document ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CheckpointMetadataError(f"corrupt checkpoint metadata at {source}: not a {FORMAT} document")
    version = doc.get("version")
    if not isinstance(version, int) or version > VERSION or version < 1:
        raise CheckpointMetadataError(
            f"unsupported checkpoint metadata version {version!r} at {source}: this Strom reads versions 1..{VERSION}"
        )
    try:
        metadata = CheckpointMetadata(
            checkpoint_id=CheckpointId(_int(doc["checkpoint_id"])),
            job_id=JobId(_str(doc["job_id"])),
            timestamp_ms=_int(doc["timestamp_ms"]),
            is_savepoint=_bool(doc["is_savepoint"]),
            operators={OperatorUid(_str(uid)): _decode_operator(op) for uid, op in _dict(doc["operators"]).items()},
            properties={_str(k): _str(v) for k, v in _dict(doc.get("properties", {})).items()},
        )
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise CheckpointMetadataError(f"corrupt checkpoint metadata at {source}: {what}") from None
    problem = _check(metadata)
    if problem:
        raise CheckpointMetadataError(f"corrupt checkpoint metadata at {source}: {problem}")
    return metadata


def write_metadata(storage: CheckpointStorage, directory: str, metadata: CheckpointMetadata) -> str:
    """Write `<directory>/_metadata` (atomically) as the last step of a checkpoint; returns its URI."""
    path = metadata_path(directory)
    storage.write_bytes(path, encode_metadata(metadata))
    return storage.uri_of(path)


def read_metadata(
    storage_or_uri: CheckpointStorage | str, directory: str = "", *, config: ConfigLookup | None = None
) -> CheckpointMetadata:
    """Read `<directory>/_metadata` from a storage, or from a checkpoint/savepoint URI (or its `_metadata`
    file's URI; `directory` is then relative to it, usually ''). `config` supplies the `s3.*` options."""
    if isinstance(storage_or_uri, str):
        uri = storage_or_uri.rstrip("/")
        if uri.endswith("/" + METADATA_FILE) and not directory:  # Flink also accepts the _metadata file's path
            uri = uri[: -len(METADATA_FILE) - 1]
        storage = checkpoint_storage_for(uri, config)
    else:
        storage = storage_or_uri
    path = metadata_path(directory)
    try:
        data = storage.read_bytes(path)
    except StorageObjectNotFoundError:
        raise CheckpointMetadataError(
            f"no checkpoint metadata at {storage.uri_of(path)}: not a completed checkpoint or savepoint "
            "directory (expected its '_metadata' file)"
        ) from None
    return decode_metadata(data, source=storage.uri_of(path))


def resolve_files(directory: str, metadata: CheckpointMetadata) -> list[str]:
    """The root-relative paths of all state files of a checkpoint in `directory`."""
    return [resolve_relative(directory, f) for f in metadata.files()]


def _decode_operator(raw: Any) -> OperatorSnapshotRef:
    op = _dict(raw)
    keyed: dict[KeyGroupRange, str] = {}
    for text, path in _dict(op.get("keyed", {})).items():
        start, sep, end = _str(text).partition("-")
        if not sep:
            raise ValueError(f"key-group range {text!r} is not 'start-end'")
        keyed[KeyGroupRange(int(start), int(end))] = _str(path)
    return OperatorSnapshotRef(
        max_parallelism=_int(op["max_parallelism"]),
        parallelism=_int(op["parallelism"]),
        keyed=keyed,
        operator_state={int(i): _str(p) for i, p in _dict(op.get("operator_state", {})).items()},
        shared_files=tuple(_str(p) for p in _list(op.get("shared_files", []))),
        channel_state={int(i): _str(p) for i, p in _dict(op.get("channel_state", {})).items()},
    )


def _check(metadata: CheckpointMetadata) -> str | None:
    """The first inconsistency of a metadata document, or None. Shared by encode and decode."""
    if metadata.checkpoint_id < 0:
        return f"checkpoint id {metadata.checkpoint_id} is negative"
    for uid, op in metadata.operators.items():
        if op.max_parallelism < 1 or op.parallelism < 1 or op.parallelism > op.max_parallelism:
            return (
                f"operator {uid!r}: parallelism {op.parallelism} and max parallelism {op.max_parallelism} "
                "must satisfy 1 <= parallelism <= max parallelism"
            )
        covered: set[int] = set()
        for r in op.keyed:
            if r.start < 0 or r.end >= op.max_parallelism or r.start > r.end:
                return f"operator {uid!r}: key groups {r.start}-{r.end} outside 0-{op.max_parallelism - 1}"
            if covered.intersection(r):
                return f"operator {uid!r}: key groups {r.start}-{r.end} overlap another range"
            covered.update(r)
        for subtask in op.operator_state:
            if subtask < 0:
                return f"operator {uid!r}: negative subtask index {subtask}"
        for path in op.files():
            if not isinstance(path, str) or not path or path.startswith("/") or "://" in path or "\\" in path:
                return f"operator {uid!r}: state path {path!r} must be relative to the checkpoint directory"
        if metadata.is_savepoint and not all(_inside_directory(p) for p in op.files()):
            return f"operator {uid!r}: a savepoint references files outside its directory, so it could not be moved"
    return None


def _inside_directory(relative: str) -> bool:
    try:
        return resolve_relative("d", relative).startswith("d/")
    except ValueError:
        return False


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected an integer, found {v!r}")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a string, found {v!r}")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"expected true or false, found {v!r}")
    return v


def _dict(v: Any) -> dict[Any, Any]:
    if not isinstance(v, dict):
        raise TypeError(f"expected an object, found {type(v).__name__}")
    return v


def _list(v: Any) -> list[Any]:
    if not isinstance(v, list):
        raise TypeError(f"expected a list, found {type(v).__name__}")
    return v
