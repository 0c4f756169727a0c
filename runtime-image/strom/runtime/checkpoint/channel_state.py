"""Channel state of unaligned checkpoints: the in-flight data a task stores with its snapshot.

An unaligned checkpoint barrier overtakes buffers (Flink's FLIP-76): the records buffered in a task's
writers when it forwarded the barrier (output channel state), and the buffers queued in or taken from
its input channels before the barrier of each channel arrived (input channel state). Neither is in
any operator's state, so the checkpoint stores them, one file per task next to its first operator's
state file, and a restored task replays them before anything new: input channel state in front of its
input queues, output channel state into its writers. Input items are what the queues hold (serialized
buffers and fragments of remote channels, batch tuples and events of in-process ones), so they are
replayed through the same path. Channel state is addressed by channel position, so it restores only
at the parallelism it was taken at (Flink redistributes it; Strom refuses, naming the operator).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

import cloudpickle

from strom.common.ids import OperatorUid
from strom.runtime.checkpoint.metadata import CheckpointMetadata
from strom.runtime.checkpoint.state_files import read_pickled
from strom.runtime.checkpoint.storage import CheckpointStorage
from strom.runtime.state.api import StateRestoreError

CHANNEL_STATE_SUFFIX = ".channels"


@dataclass(frozen=True, slots=True)
class ChannelState:
    """One task's in-flight data: input items by input channel index, buffered output records by writer
    index then channel index (`(values, timestamps, keys)` like a batch)."""

    inputs: dict[int, list[Any]] = field(default_factory=dict)
    outputs: dict[int, dict[int, Any]] = field(default_factory=dict)


def encode_channel_state(state: ChannelState) -> bytes:
    # records of in-process channels are user objects: classes of the job file go by value, as on the wire
    data: bytes = cloudpickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)  # cloudpickle ships no types
    return data


def read_channel_state(
    storage: CheckpointStorage, directory: str, metadata: CheckpointMetadata, operator_uid: OperatorUid, task: Any
) -> ChannelState | None:
    """The channel state stored with `task` (whose first operator is `operator_uid`), or None."""
    ref = metadata.operators.get(operator_uid)
    if ref is None or not ref.channel_state:
        return None
    if ref.parallelism != task.parallelism:
        raise StateRestoreError(
            f"operator uid {operator_uid!r}: the checkpoint holds in-flight data of an unaligned checkpoint taken "
            f"at parallelism {ref.parallelism}, it cannot restore at {task.parallelism}: restore it at "
            f"{ref.parallelism}, or rescale from a savepoint (savepoints are always aligned)"
        )
    relative = ref.channel_state.get(task.subtask_index)
    if relative is None:
        return None
    return read_pickled(
        storage, directory, relative, ChannelState,
        operator_uid=operator_uid, what="channel state", expected_as="channel state",
    )


def restore_channel_state(
    storage: CheckpointStorage, directory: str, metadata: CheckpointMetadata, tasks: Any
) -> None:
    """Give every task (not started yet) the channel state the checkpoint at `directory` stored for it."""
    for task in tasks:
        state = read_channel_state(storage, directory, metadata, task.operators[0].ctx.operator_uid, task)
        if state is not None:
            task.recover_channel_state(state)
