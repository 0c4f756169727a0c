"""Checkpoint storage, metadata and retention: contract tests over file:// and s3:// (a real local S3 server)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
import traceback
from pathlib import Path

import pytest
from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.common.key_groups import KeyGroupRange
from strom.runtime.checkpoint import layout
from strom.runtime.checkpoint.errors import CheckpointMetadataError, StorageAccessError, StorageObjectNotFoundError
from strom.runtime.checkpoint.file_storage import FileCheckpointStorage
from strom.runtime.checkpoint.memory_storage import JobManagerCheckpointStorage
from strom.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    OperatorSnapshotRef,
    decode_metadata,
    encode_metadata,
    read_metadata,
    write_metadata,
)
from strom.runtime.checkpoint.retention import (
    CompletedCheckpointStore,
    ExternalizedCheckpointRetention,
    SharedStateRegistry,
    discard_on_shutdown,
    num_retained_from,
    subsumed_checkpoints,
)
from strom.runtime.checkpoint.storage import CheckpointStorage, checkpoint_storage_for

from tests.engine.s3_server import S3Server, free_ports, s3_server_fixture  # noqa: F401  (registers `s3_server`)

JOB = "a1b2c3d4e5f60718293a4b5c6d7e8f90"


@pytest.fixture(params=["file", "s3", "jobmanager"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> CheckpointStorage:
    """A fresh, empty storage root: a temp directory, a fresh prefix in the test bucket, or the
    JobManager's memory (jobs without a checkpoint directory stage their savepoints there)."""
    if request.param == "file":
        return checkpoint_storage_for(tmp_path.as_uri())
    if request.param == "jobmanager":
        return JobManagerCheckpointStorage("test-job")
    server: S3Server = request.getfixturevalue("s3_server")
    return checkpoint_storage_for(f"s3://{server.bucket}/t-{secrets.token_hex(6)}/checkpoints", server.config())


# -- storage contract -----------------------------------------------------------------------------


def test_written_bytes_read_back_unchanged(storage: CheckpointStorage) -> None:
    payloads = {"j/chk-1/a": bytes(range(256)) * 64, "j/chk-1/empty": b"", "top": b"x"}
    for path, data in payloads.items():
        storage.write_bytes(path, data)
    assert {p: storage.read_bytes(p) for p in payloads} == payloads


def test_overwrite_replaces_the_whole_object(storage: CheckpointStorage) -> None:
    storage.write_bytes("j/x", b"a long first version")
    storage.write_bytes("j/x", b"short")
    assert storage.read_bytes("j/x") == b"short"


def test_reading_a_missing_object_raises_not_found_naming_its_uri(storage: CheckpointStorage) -> None:
    with pytest.raises(StorageObjectNotFoundError) as err:
        storage.read_bytes("j/chk-9/nothing")
    assert storage.uri_of("j/chk-9/nothing") in str(err.value)
    assert isinstance(err.value, FileNotFoundError)


def test_exists_is_true_for_objects_only(storage: CheckpointStorage) -> None:
    storage.write_bytes("j/chk-1/_metadata", b"{}")
    assert storage.exists("j/chk-1/_metadata")
    assert not storage.exists("j/chk-1/other")
    assert not storage.exists("j/chk-1")  # a directory is not an object


def test_list_returns_sorted_paths_under_a_directory_prefix_only(storage: CheckpointStorage) -> None:
    for path in ["j/chk-10/a", "j/chk-1/b", "j/chk-1/a", "j/chk-1/sub/c", "j/shared/s", "k/chk-1/a"]:
        storage.write_bytes(path, b"1")
    assert storage.list("j/chk-1") == ["j/chk-1/a", "j/chk-1/b", "j/chk-1/sub/c"]  # not j/chk-10
    assert storage.list("j/chk-1/") == storage.list("j/chk-1")
    assert storage.list("") == sorted(["j/chk-10/a", "j/chk-1/b", "j/chk-1/a", "j/chk-1/sub/c", "j/shared/s",
                                       "k/chk-1/a"])
    assert storage.list("nothing/here") == []


def test_delete_removes_one_object_and_is_idempotent(storage: CheckpointStorage) -> None:
    storage.write_bytes("j/a", b"1")
    storage.write_bytes("j/b", b"2")
    storage.delete("j/a")
    storage.delete("j/a")
    assert storage.list("j") == ["j/b"]


def test_delete_prefix_removes_everything_under_it_and_nothing_else(storage: CheckpointStorage) -> None:
    for path in ["j/chk-1/a", "j/chk-1/sub/b", "j/chk-10/a", "j/shared/s"]:
        storage.write_bytes(path, b"1")
    storage.delete_prefix("j/chk-1")
    assert storage.list() == ["j/chk-10/a", "j/shared/s"]
    storage.delete_prefix("j/missing")  # nothing there: not an error


def test_uri_of_names_the_full_location(storage: CheckpointStorage) -> None:
    assert storage.uri_of("j/chk-3/_metadata") == storage.root_uri + "/j/chk-3/_metadata"
    assert storage.root_uri.split("://")[0] in ("file", "s3", "jobmanager")


@pytest.mark.parametrize("bad", ["../escape", "/absolute", "a//b", "a/./b", "", "dir/"])
def test_paths_leaving_or_misnaming_the_root_are_rejected(storage: CheckpointStorage, bad: str) -> None:
    with pytest.raises(ValueError, match="invalid object path"):
        storage.write_bytes(bad, b"x")


# -- metadata ---------------------------------------------------------------------------------------


def _metadata(checkpoint_id: int, *, savepoint: bool = False, shared: tuple[str, ...] = ()) -> CheckpointMetadata:
    return CheckpointMetadata(
        checkpoint_id=checkpoint_id,
        job_id=JOB,
        timestamp_ms=1_700_000_000_000 + checkpoint_id,
        is_savepoint=savepoint,
        operators={
            "window-uid": OperatorSnapshotRef(
                max_parallelism=128,
                parallelism=2,
                keyed={KeyGroupRange(0, 63): "window-uid/kg-0-63", KeyGroupRange(64, 127): "window-uid/kg-64-127"},
                shared_files=shared,
            ),
            "source-uid": OperatorSnapshotRef(max_parallelism=128, parallelism=2,
                                              operator_state={0: "source-uid/op-0", 1: "source-uid/op-1"}),
        },
        properties={"formatType": "CANONICAL"} if savepoint else {},
    )


def _write_checkpoint(storage: CheckpointStorage, directory: str, metadata: CheckpointMetadata) -> None:
    """State files first, `_metadata` last: what makes a directory a completed checkpoint."""
    for rel in metadata.files():
        if not rel.startswith(".."):
            storage.write_bytes(f"{directory}/{rel}", f"state of {rel} in {metadata.checkpoint_id}".encode())
    write_metadata(storage, directory, metadata)


def test_metadata_encodes_to_readable_json_with_relative_paths_and_decodes_equal() -> None:
    metadata = _metadata(7, shared=("../shared/sst-1",))
    data = encode_metadata(metadata)
    doc = json.loads(data)
    assert doc["version"] == 1
    assert doc["operators"]["window-uid"]["keyed"] == {"0-63": "window-uid/kg-0-63",
                                                       "64-127": "window-uid/kg-64-127"}
    assert doc["operators"]["source-uid"]["operator_state"] == {"0": "source-uid/op-0", "1": "source-uid/op-1"}
    assert decode_metadata(data) == metadata


def test_metadata_of_a_newer_version_is_refused_naming_the_source() -> None:
    doc = json.loads(encode_metadata(_metadata(1)))
    doc["version"] = 99
    with pytest.raises(CheckpointMetadataError, match=r"unsupported checkpoint metadata version 99 at s3://b/x"):
        decode_metadata(json.dumps(doc).encode(), source="s3://b/x")


def test_overlapping_key_group_ranges_are_refused() -> None:
    op = OperatorSnapshotRef(max_parallelism=128, parallelism=2,
                             keyed={KeyGroupRange(0, 64): "a", KeyGroupRange(64, 127): "b"})
    with pytest.raises(CheckpointMetadataError, match="overlap"):
        encode_metadata(CheckpointMetadata(1, JOB, 0, False, {"op": op}))


def test_a_savepoint_referencing_files_outside_its_directory_is_refused() -> None:
    with pytest.raises(CheckpointMetadataError, match="could not be moved"):
        encode_metadata(_metadata(1, savepoint=True, shared=("../shared/sst-1",)))


def test_metadata_round_trips_through_storage(storage: CheckpointStorage) -> None:
    directory = layout.checkpoint_dir(JOB, 4)
    _write_checkpoint(storage, directory, _metadata(4))
    assert read_metadata(storage, directory) == _metadata(4)
    assert storage.exists(f"{JOB}/chk-4/_metadata")


def test_missing_metadata_is_an_error_naming_the_path_and_deletes_nothing(storage: CheckpointStorage) -> None:
    storage.write_bytes(f"{JOB}/chk-5/window-uid/kg-0-63", b"state")
    with pytest.raises(CheckpointMetadataError) as err:
        read_metadata(storage, f"{JOB}/chk-5")
    assert storage.uri_of(f"{JOB}/chk-5/_metadata") in str(err.value)
    assert storage.list() == [f"{JOB}/chk-5/window-uid/kg-0-63"]


def test_corrupt_metadata_is_an_error_naming_the_path_and_deletes_nothing(storage: CheckpointStorage) -> None:
    storage.write_bytes(f"{JOB}/chk-6/_metadata", b'{"format": "strom-checkpoint-metadata", "vers')
    with pytest.raises(CheckpointMetadataError, match="corrupt checkpoint metadata at") as err:
        read_metadata(storage, f"{JOB}/chk-6")
    assert storage.uri_of(f"{JOB}/chk-6/_metadata") in str(err.value)
    assert storage.list() == [f"{JOB}/chk-6/_metadata"]


def test_a_moved_savepoint_directory_still_restores(
    storage: CheckpointStorage, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Move the directory on disk, or copy its objects to another prefix with plain S3 calls and
    delete the originals: the savepoint read from its new place restores every state file."""
    if isinstance(storage, JobManagerCheckpointStorage):
        pytest.skip("a savepoint is written to its target directory, never kept in the JobManager's memory")
    name = layout.savepoint_dir_name(JOB)
    _write_checkpoint(storage, f"savepoints/{name}", _metadata(3, savepoint=True))
    config = None
    if isinstance(storage, FileCheckpointStorage):
        target = tmp_path.parent / f"{tmp_path.name}-moved" / name
        target.parent.mkdir()
        shutil.move(str(storage.root_dir / "savepoints" / name), target)
        moved_uri = target.as_uri()
    else:
        server: S3Server = request.getfixturevalue("s3_server")
        config = server.config()
        _, _, bucket, root_prefix = storage.root_uri.split("/", 3)
        src_prefix = f"{root_prefix}/savepoints/{name}/"
        dst_prefix = f"elsewhere-{secrets.token_hex(4)}/{name}/"
        client = server.client()
        for entry in client.list_objects_v2(Bucket=bucket, Prefix=src_prefix)["Contents"]:
            client.copy_object(Bucket=bucket, Key=dst_prefix + entry["Key"][len(src_prefix):],
                               CopySource={"Bucket": bucket, "Key": entry["Key"]})
        storage.delete_prefix(f"savepoints/{name}")
        moved_uri = f"s3://{bucket}/{dst_prefix.rstrip('/')}"
    assert storage.list("savepoints") == []
    restored = read_metadata(moved_uri, config=config)
    assert restored == _metadata(3, savepoint=True)
    assert read_metadata(moved_uri + "/_metadata", config=config) == restored
    moved = checkpoint_storage_for(moved_uri, config)
    assert {f: moved.read_bytes(f) for f in restored.files()} == {
        f: f"state of {f} in 3".encode() for f in restored.files()
    }


# -- retention ----------------------------------------------------------------------------------------


def test_subsumption_keeps_the_newest_n() -> None:
    """Completed 1, 2, 3, 5 with 2 retained: 3 and 5 stay, 1 and 2 go."""
    assert subsumed_checkpoints([5, 1, 3, 2], 2) == [1, 2]
    assert subsumed_checkpoints([1], 1) == []
    assert num_retained_from(None) == 1
    assert num_retained_from(Configuration({"state.checkpoints.num-retained": "3"})) == 3


@pytest.mark.parametrize(
    ("retention", "status", "discard"),
    [
        ("RETAIN_ON_CANCELLATION", "CANCELED", False),
        ("RETAIN_ON_CANCELLATION", "FINISHED", False),
        ("DELETE_ON_CANCELLATION", "CANCELED", True),
        ("DELETE_ON_CANCELLATION", "FINISHED", True),
        ("DELETE_ON_CANCELLATION", "FAILED", False),
        ("NO_EXTERNALIZED_CHECKPOINTS", "FAILED", True),
        ("NO_EXTERNALIZED_CHECKPOINTS", "SUSPENDED", False),
        ("DELETE_ON_CANCELLATION", "SUSPENDED", False),
    ],
)
def test_shutdown_discards_as_flink_checkpoint_properties_say(retention: str, status: str, discard: bool) -> None:
    assert discard_on_shutdown(retention, status) is discard


def test_shared_state_registry_deletes_a_file_when_its_last_checkpoint_goes() -> None:
    registry = SharedStateRegistry()
    registry.register(1, ["j/shared/a", "j/shared/b"])
    registry.register(2, ["j/shared/b", "j/shared/c", "j/shared/c"])
    assert registry.reference_count("j/shared/b") == 2
    assert registry.reference_count("j/shared/c") == 1  # counted once per checkpoint
    assert registry.release(1) == ["j/shared/a"]
    assert registry.release(2) == ["j/shared/b", "j/shared/c"]


def test_subsumed_checkpoints_are_deleted_with_exclusive_and_unreferenced_shared_files(
    storage: CheckpointStorage,
) -> None:
    """Checkpoints 1..3 of an incremental backend, 2 retained. Shared files: 1 uses sst-a, sst-b;
    2 uses sst-b, sst-c; 3 uses sst-c, sst-d. When 3 completes, 1 is subsumed: its directory and
    sst-a go (no one else uses it), sst-b stays (2 uses it)."""
    store = CompletedCheckpointStore(storage, num_retained=2)
    uses = {1: ("sst-a", "sst-b"), 2: ("sst-b", "sst-c"), 3: ("sst-c", "sst-d")}
    subsumed: list[list[int]] = []
    for n, ssts in uses.items():
        for sst in ssts:
            if not storage.exists(f"{JOB}/shared/{sst}"):
                storage.write_bytes(f"{JOB}/shared/{sst}", sst.encode())
        directory = layout.checkpoint_dir(JOB, n)
        metadata = _metadata(n, shared=tuple(f"../shared/{s}" for s in ssts))
        _write_checkpoint(storage, directory, metadata)
        subsumed.append(store.add(directory, metadata))
    assert subsumed == [[], [], [1]]
    assert [c.checkpoint_id for c in store.checkpoints] == [2, 3]
    remaining = storage.list(JOB)
    assert not [p for p in remaining if p.startswith(f"{JOB}/chk-1/")]
    assert [p for p in remaining if "/shared/" in p] == [f"{JOB}/shared/sst-{x}" for x in "bcd"]
    assert read_metadata(storage, layout.checkpoint_dir(JOB, 2)).checkpoint_id == 2


@pytest.mark.parametrize(
    ("retention", "kept"),
    [(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION, True),
     (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, False)],
)
def test_cancel_keeps_or_deletes_the_retained_checkpoint(
    storage: CheckpointStorage, retention: ExternalizedCheckpointRetention, kept: bool
) -> None:
    store = CompletedCheckpointStore(storage, num_retained=1)
    storage.write_bytes(f"{JOB}/shared/sst-a", b"a")
    for n in (1, 2):
        directory = layout.checkpoint_dir(JOB, n)
        metadata = _metadata(n, shared=("../shared/sst-a",))
        _write_checkpoint(storage, directory, metadata)
        store.add(directory, metadata)
    assert store.shutdown("CANCELED", retention) == ([] if kept else [2])
    if kept:
        assert read_metadata(storage, layout.checkpoint_dir(JOB, 2)).checkpoint_id == 2
        assert storage.exists(f"{JOB}/shared/sst-a")
    else:
        assert storage.list(JOB) == []


def test_a_savepoint_is_never_retained_as_a_checkpoint(tmp_path: Path) -> None:
    store = CompletedCheckpointStore(FileCheckpointStorage(tmp_path))
    with pytest.raises(ValueError, match="never subsumed"):
        store.add("savepoint-x", _metadata(1, savepoint=True))


# -- file storage ----------------------------------------------------------------------------------


def test_a_failed_file_write_leaves_the_old_content_and_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    storage.write_bytes("j/chk-1/_metadata", b"complete old version")

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(StorageAccessError, match=r"cannot write file://.*/j/chk-1/_metadata: No space left"):
        storage.write_bytes("j/chk-1/_metadata", b"new version that never fully lands")
    monkeypatch.undo()
    assert storage.read_bytes("j/chk-1/_metadata") == b"complete old version"
    assert os.listdir(tmp_path / "j" / "chk-1") == ["_metadata"]


def test_temporary_files_of_a_crashed_writer_are_not_listed(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(f"file://{tmp_path}")
    storage.write_bytes("j/a", b"1")
    (tmp_path / "j" / ".b.inprogress-0123abcd").write_bytes(b"half")
    assert storage.list() == ["j/a"]


def test_file_uri_and_plain_path_name_the_same_root(tmp_path: Path) -> None:
    assert checkpoint_storage_for(str(tmp_path)).root_uri == checkpoint_storage_for(tmp_path.as_uri()).root_uri
    assert checkpoint_storage_for(f"file:{tmp_path}").root_uri == tmp_path.as_uri()


def test_an_unsupported_scheme_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"unsupported checkpoint storage URI 'hdfs://nn/x': expected file:///"):
        checkpoint_storage_for("hdfs://nn/x")


# -- layout ------------------------------------------------------------------------------------------


def test_layout_follows_flink() -> None:
    assert layout.checkpoint_dir(JOB, 12) == f"{JOB}/chk-12"
    assert layout.metadata_path(layout.checkpoint_dir(JOB, 12)) == f"{JOB}/chk-12/_metadata"
    assert layout.shared_dir(JOB) == f"{JOB}/shared/"
    assert layout.task_owned_dir(JOB) == f"{JOB}/taskowned/"
    assert re.fullmatch(r"savepoint-a1b2c3-[0-9a-f]{12}", layout.savepoint_dir_name(JOB))
    assert layout.parse_checkpoint_dir(f"{JOB}/chk-12/") == 12
    assert layout.parse_checkpoint_dir("shared") is None


# -- S3 specifics --------------------------------------------------------------------------------------


def test_wrong_credentials_name_endpoint_and_bucket_but_not_the_secret(s3_server: S3Server) -> None:
    wrong_secret = "wrong-" + secrets.token_hex(12)
    storage = checkpoint_storage_for(f"s3://{s3_server.bucket}/p", s3_server.config(**{"s3.secret-key": wrong_secret}))
    with pytest.raises(StorageAccessError) as err:
        storage.write_bytes("j/chk-1/_metadata", b"x")
    text = str(err.value)
    assert s3_server.endpoint in text and repr(s3_server.bucket) in text
    assert "SignatureDoesNotMatch" in text and "'s3.secret-key'" in text
    everything = "".join(traceback.format_exception(err.value)) + repr(storage)
    assert wrong_secret not in everything and s3_server.secret_key not in everything


def test_an_unreachable_endpoint_fails_fast_with_a_clear_error() -> None:
    (port,) = free_ports(1)  # nothing listens there
    config = {"s3.endpoint": f"http://127.0.0.1:{port}", "s3.access-key": "k", "s3.secret-key": "s",
              "s3.path.style.access": "true", "s3.connection.establish.timeout": "500 ms",
              "s3.attempts.maximum": 1}
    storage = checkpoint_storage_for("s3://some-bucket/checkpoints", config)
    start = time.monotonic()
    with pytest.raises(StorageAccessError) as err:
        storage.read_bytes("j/chk-1/_metadata")
    assert time.monotonic() - start < 5
    assert f"cannot reach S3 endpoint http://127.0.0.1:{port} (bucket 'some-bucket')" in str(err.value)


def test_a_missing_bucket_is_named(s3_server: S3Server) -> None:
    storage = checkpoint_storage_for("s3://no-such-bucket-here/p", s3_server.config())
    with pytest.raises(StorageAccessError, match="bucket 'no-such-bucket-here' does not exist"):
        storage.write_bytes("j/x", b"1")


def test_credentials_never_appear_in_repr(s3_server: S3Server) -> None:
    from strom.runtime.checkpoint.s3_storage import S3Settings

    settings = S3Settings.from_config(s3_server.config())
    storage = checkpoint_storage_for(f"s3://{s3_server.bucket}/p", s3_server.config())
    for text in (repr(settings), repr(storage), str(storage)):
        assert s3_server.secret_key not in text and s3_server.access_key not in text


def test_aws_environment_credentials_apply_when_the_options_are_absent(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    config = Configuration({"s3.endpoint": s3_server.endpoint, "s3.path.style.access": "true",
                            "s3.region": s3_server.region})
    storage = checkpoint_storage_for(f"s3://{s3_server.bucket}/env-{secrets.token_hex(4)}", config)
    storage.write_bytes("j/a", b"via the AWS chain")
    assert storage.read_bytes("j/a") == b"via the AWS chain"


def test_half_configured_credentials_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'s3.access-key' is set but 's3.secret-key' is not"):
        checkpoint_storage_for("s3://b/p", {"s3.access-key": "only-this"})


def test_an_empty_object_does_not_stall_the_next_request(s3_server: S3Server) -> None:
    """An empty PUT with `Expect: 100-continue` made SeaweedFS send a late '100 Continue' that the next
    request on the connection read as its answer, stalling it for the whole read timeout."""
    config = s3_server.config(**{"s3.connection.timeout": "3 s", "s3.attempts.maximum": 1})
    storage = checkpoint_storage_for(f"s3://{s3_server.bucket}/empty-{secrets.token_hex(4)}", config)
    storage.write_bytes("j/empty", b"")
    start = time.monotonic()
    storage.write_bytes("j/next", b"x")
    assert storage.read_bytes("j/empty") == b"" and storage.read_bytes("j/next") == b"x"
    assert time.monotonic() - start < 2
