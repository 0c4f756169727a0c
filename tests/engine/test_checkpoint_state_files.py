"""A checkpoint file that a restore cannot use (missing, truncated, or holding something else) is one
StateRestoreError naming the operator uid and the file's URI, for operator state files and for the
channel state of unaligned checkpoints alike (both read through checkpoint/state_files.py)."""

from __future__ import annotations

import pickle

import pytest
from strom.runtime.checkpoint.channel_state import ChannelState, encode_channel_state
from strom.runtime.checkpoint.file_storage import FileCheckpointStorage
from strom.runtime.checkpoint.state_files import read_pickled
from strom.runtime.checkpoint.task_snapshots import read_state_file
from strom.runtime.state.api import StateRestoreError


def _read_channels(storage, relative):
    return read_pickled(
        storage, "job/chk-1", relative, ChannelState, operator_uid="src", what="channel state",
        expected_as="channel state",
    )


def test_a_written_object_is_read_back(tmp_path):
    storage = FileCheckpointStorage(tmp_path)
    state = ChannelState(inputs={0: ["a", "b"]})
    storage.write_bytes("job/chk-1/src-0.channels", encode_channel_state(state))
    assert _read_channels(storage, "src-0.channels") == state


def test_a_missing_file_names_the_operator_and_the_uri(tmp_path):
    storage = FileCheckpointStorage(tmp_path)
    uri = (tmp_path / "job" / "chk-1" / "map-0").as_uri()
    with pytest.raises(StateRestoreError, match=rf"^operator uid 'map': cannot read its state file {uri}: "):
        read_state_file(storage, "job/chk-1", "map-0", "map")


def test_a_truncated_file_is_refused(tmp_path):
    storage = FileCheckpointStorage(tmp_path)
    storage.write_bytes("job/chk-1/src-0.channels", encode_channel_state(ChannelState(inputs={0: [1]}))[:-5])
    with pytest.raises(StateRestoreError, match="operator uid 'src': cannot read its channel state file://"):
        _read_channels(storage, "src-0.channels")


def test_a_file_holding_something_else_is_refused(tmp_path):
    storage = FileCheckpointStorage(tmp_path)
    storage.write_bytes("job/chk-1/map-0", pickle.dumps({"not": "a snapshot"}))
    with pytest.raises(StateRestoreError, match=r"operator uid 'map': file://.*/map-0 is not an operator snapshot$"):
        read_state_file(storage, "job/chk-1", "map-0", "map")
    storage.write_bytes("job/chk-1/src-0.channels", pickle.dumps(["items"]))
    with pytest.raises(StateRestoreError, match=r"src-0\.channels is not channel state$"):
        _read_channels(storage, "src-0.channels")
