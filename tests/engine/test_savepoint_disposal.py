"""Savepoint disposal deletes only what the savepoint owns (as Flink's disposal does): the state files
its `_metadata` lists and the `_metadata` itself, then the directory only if it is empty. A file
someone else put into the directory survives, and so does the directory holding it. Run against
both storages (file://, and S3 on the SeaweedFS test server)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from strom.common.key_groups import KeyGroupRange
from strom.runtime.checkpoint.metadata import CheckpointMetadata, OperatorSnapshotRef, write_metadata
from strom.runtime.checkpoint.savepoints import dispose_savepoint
from strom.runtime.checkpoint.storage import CheckpointStorage, checkpoint_storage_for

from tests.engine.s3_server import S3Server, s3_server_fixture  # noqa: F401  (registers `s3_server`)

STATE_FILES = ["op-a-kg-0-63", "op-a-kg-64-127", "op-b-subtask-0"]


def _write_savepoint(storage: CheckpointStorage, directory: str, *, is_savepoint: bool = True) -> None:
    for name in STATE_FILES:
        storage.write_bytes(f"{directory}/{name}", b"state " + name.encode())
    metadata = CheckpointMetadata(
        checkpoint_id=7,
        job_id="ab" * 16,
        timestamp_ms=1,
        is_savepoint=is_savepoint,
        operators={
            "a": OperatorSnapshotRef(128, 2, keyed={KeyGroupRange(0, 63): STATE_FILES[0],
                                                     KeyGroupRange(64, 127): STATE_FILES[1]}),
            "b": OperatorSnapshotRef(128, 1, operator_state={0: STATE_FILES[2]}),
        },
    )
    write_metadata(storage, directory, metadata)


@pytest.fixture(params=["file", "s3"])
def storage_root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(root URI, config) of a fresh storage of each kind."""
    if request.param == "file":
        yield f"file://{tmp_path}", {}
        return
    s3: S3Server = request.getfixturevalue("s3_server")
    yield f"s3://{s3.bucket}/disposal-{tmp_path.name}", s3.config()


def _listing(root: str, config: dict[str, Any]) -> Callable[[], list[str]]:
    storage = checkpoint_storage_for(root, config)
    return lambda: sorted(storage.list(""))


def test_disposal_keeps_an_unrelated_file_in_the_savepoint_directory(storage_root: tuple[str, dict[str, Any]]) -> None:
    root, config = storage_root
    storage = checkpoint_storage_for(root, config)
    _write_savepoint(storage, "savepoint-ab-1")
    storage.write_bytes("savepoint-ab-1/notes.txt", b"not the savepoint's")
    storage.write_bytes("neighbour/data", b"nor this")

    assert dispose_savepoint(f"{root}/savepoint-ab-1", config) == f"{root}/savepoint-ab-1"

    assert _listing(root, config)() == ["neighbour/data", "savepoint-ab-1/notes.txt"]
    assert storage.read_bytes("savepoint-ab-1/notes.txt") == b"not the savepoint's"


def test_disposal_of_a_savepoint_alone_leaves_nothing(storage_root: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    root, config = storage_root
    storage = checkpoint_storage_for(root, config)
    _write_savepoint(storage, "savepoint-ab-2")
    dispose_savepoint(f"{root}/savepoint-ab-2/_metadata", config)  # the _metadata file's URI works too
    assert _listing(root, config)() == []
    if root.startswith("file://"):
        assert not (tmp_path / "savepoint-ab-2").exists()  # the emptied directory is removed


def test_disposal_refuses_a_checkpoint_and_touches_nothing(storage_root: tuple[str, dict[str, Any]]) -> None:
    root, config = storage_root
    storage = checkpoint_storage_for(root, config)
    _write_savepoint(storage, "chk-7", is_savepoint=False)
    before = _listing(root, config)()
    with pytest.raises(ValueError, match="not a savepoint"):
        dispose_savepoint(f"{root}/chk-7", config)
    assert _listing(root, config)() == before
