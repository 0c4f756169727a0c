"""A stop-with-savepoint commits the savepoint's FileSink transaction before the sink task ends.

The JobManager sends the savepoint's completion to every task and then cancels them (Flink's
synchronous savepoint: the job ends only after every task heard of it). A peer's cancel can
overtake a task's own completion: the upstream task in another slot process (or TaskManager) is
cancelled first and tells this task over its channel, while this task's completion and cancel are
still on their way in order. Here the sink task runs in this process on a real TCP input channel;
its producer sends records, the savepoint's barrier, and then its cancel (FRAME_CANCEL) before the
completion reaches the sink. The committed files must hold exactly the records before the barrier.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from strom.common import Configuration, Encoder
from strom.datastream.connectors.file_system import BucketAssigner, FileSink
from strom.runtime.metrics import MetricGroup
from strom.runtime.network.channels import InputGate
from strom.runtime.network.events import CheckpointBarrier
from strom.runtime.network.tcp_channels import ChannelId, DataServer, RemoteOutputChannel
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.sink_writer import SinkWriterOperator
from strom.runtime.tasks.processing_time import ProcessingTimeService
from strom.runtime.tasks.stream_task import CANCELED, CANCELING, StreamTask

HOST = "127.0.0.1"
SECRET = b"a test cluster secret of 32 bytes"
DEADLINE_S = 20.0
SAVEPOINT_ID = 7


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {DEADLINE_S} s waiting for {what}")
        time.sleep(0.001)


class Acknowledged:
    """The task's CheckpointResponder: which checkpoints this subtask snapshotted."""

    def __init__(self) -> None:
        self.ids: list[int] = []

    def snapshot_taken(self, _key: Any, checkpoint_id: int, _items: Any, _channel_state: Any = None) -> None:
        self.ids.append(checkpoint_id)


def committed_lines(out: Path) -> list[str]:
    lines: list[str] = []
    for root, _, files in os.walk(out):
        for name in files:
            if not name.startswith("."):  # in-progress and pending files are not committed output
                lines += Path(root, name).read_text().splitlines()
    return lines


@pytest.fixture
def server() -> Iterator[DataServer]:
    s = DataServer(HOST, 0, secret=SECRET)
    s.start()
    yield s
    s.close()


def file_sink_task(out: Path, gate: InputGate, done: threading.Event) -> StreamTask:
    """The subtask 0/1 of a FileSink with checkpointing on, reading `gate`."""
    config = Configuration({"execution.checkpointing.interval": "200 ms"})
    pts = ProcessingTimeService()
    sink = (FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
    op = SinkWriterOperator(SimpleNamespace(function=None, params={"sink": sink}))
    op.setup(OperatorContext(
        task_name="Sink", operator_name="Sink", operator_uid="sink", subtask_index=0, parallelism=1,
        max_parallelism=128, attempt=0, config=config, processing_time_service=pts, metrics=MetricGroup(),
    ), Output())
    return StreamTask(
        name="Sink", subtask_index=0, parallelism=1, operators=[op], outputs=[], writers=[], gate=gate,
        processing_time_service=pts, config=config, on_done=lambda _t: done.set(),
    )


def test_a_sink_whose_producer_is_cancelled_first_still_commits_the_stop_savepoint(
    server: DataServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    gate = InputGate()
    channel_id = ChannelId("job-1", 0, "map->sink", 0, 0)
    server.expect(channel_id, gate.add_channel(1, 8))
    done = threading.Event()
    task = file_sink_task(out, gate, done)
    acks = Acknowledged()
    task.enable_checkpointing(acks, ("sink", 0))
    task.start()

    producer = RemoteOutputChannel(channel_id, HOST, server.port, secret=SECRET)
    before = list(range(100))
    producer.put((before, None, None))
    producer.put(CheckpointBarrier(SAVEPOINT_ID, int(time.time() * 1000)))
    wait_until(lambda: acks.ids == [SAVEPOINT_ID], "the sink's snapshot of the savepoint")
    # the savepoint completed; the upstream task's cancel overtakes this task's completion
    producer.abort()
    wait_until(lambda: done.is_set() or task.state == CANCELING, "the sink to hear of its producer's cancel")
    # what the slot worker does with the JobManager's messages, in their order: completion, then cancel
    task.submit(partial(task.notify_checkpoint_complete, SAVEPOINT_ID))
    task.cancel()
    assert done.wait(DEADLINE_S), "the sink task did not end"

    assert task.state == CANCELED
    assert sorted(committed_lines(out), key=int) == [str(v) for v in before]


def test_a_sink_whose_own_cancel_never_follows_ends_after_the_bound(
    server: DataServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiting for the task's own cancel is bounded: without it the task still ends (CANCELED), and
    what no completion confirmed stays uncommitted."""
    monkeypatch.setattr("strom.runtime.tasks.stream_task.OWN_CANCEL_WAIT_S", 0.2)
    out = tmp_path / "out"
    gate = InputGate()
    channel_id = ChannelId("job-1", 0, "map->sink", 0, 0)
    server.expect(channel_id, gate.add_channel(1, 8))
    done = threading.Event()
    task = file_sink_task(out, gate, done)
    acks = Acknowledged()
    task.enable_checkpointing(acks, ("sink", 0))
    task.start()

    producer = RemoteOutputChannel(channel_id, HOST, server.port, secret=SECRET)
    producer.put((list(range(10)), None, None))
    producer.put(CheckpointBarrier(SAVEPOINT_ID, int(time.time() * 1000)))
    wait_until(lambda: acks.ids == [SAVEPOINT_ID], "the sink's snapshot of the savepoint")
    producer.abort()
    assert done.wait(DEADLINE_S), "the sink task did not end without its own cancel"
    assert task.state == CANCELED
    assert committed_lines(out) == []
