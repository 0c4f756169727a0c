"""Which files a file source reads, and which subtask reads each file.

Directories are walked recursively; names starting with '.' or '_' are skipped, files
and directories alike, as Flink's DefaultFileFilter does (they mark hidden, in-progress
or metadata files). Paths named explicitly are read even if hidden: the user asked
for them. S3 URIs (`s3://`, `s3a://`, `s3p://`) are listed by the `list_objects` function
the caller passes (`s3_files.S3Files.list_files`), with the same rules. Pure functions of the
listings, unit-tested directly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

from strom.common.key_groups import stable_hash
from strom.common.s3_client import is_s3_uri


def local_path(path: str) -> str:
    """'file:///tmp/x' -> '/tmp/x'; plain paths unchanged."""
    if path.startswith("file://"):
        return path[len("file://") :]
    return path


def is_hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def enumerate_files(paths: Sequence[str], list_objects: Callable[[str], list[str]] | None = None) -> list[str]:
    """Every readable file under `paths`, sorted so that all subtasks see one order. S3 URIs are
    listed by `list_objects(uri)` (object URIs), local paths by walking the file system."""
    found: list[str] = []
    for raw in paths:
        if is_s3_uri(raw):
            if list_objects is None:
                raise ValueError(f"file source: path {raw!r} is an S3 URI but no S3 listing was given")
            found.extend(list_objects(raw))
            continue
        path = local_path(raw)
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not is_hidden(d)]
                found.extend(os.path.join(root, f) for f in files if not is_hidden(f))
        elif os.path.isfile(path):
            found.append(path)
        else:
            raise FileNotFoundError(f"file source: path {raw!r} does not exist")
    return sorted(set(found))


def static_share(files: Sequence[str], subtask_index: int, parallelism: int) -> list[str]:
    """A bounded source's split assignment: subtask i reads files i, i+p, i+2p, ..."""
    return list(files[subtask_index::parallelism])


def owner_of(path: str, parallelism: int) -> int:
    """The subtask that reads a file discovered while monitoring. Every subtask scans on
    its own, so ownership must follow from the path alone, the same in every process."""
    return stable_hash(path) % parallelism


def new_owned_files(listing: Iterable[str], seen: set[str], subtask_index: int, parallelism: int) -> list[str]:
    """Files of `listing` this subtask owns and has not read yet; marks them seen."""
    fresh = [f for f in listing if f not in seen and owner_of(f, parallelism) == subtask_index]
    seen.update(fresh)
    return fresh
