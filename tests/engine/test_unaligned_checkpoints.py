"""Unaligned checkpoints: barriers overtake in-flight buffers, which become the checkpoint's channel state.

The barrier handling is checked on real input gates and channels (in-process, and a TCP channel on
loopback) with a clock the test controls; the in-process executor runs a back-pressured keyed job with
unaligned checkpoints and a failure, and its sums must equal a plain-Python computation exactly: records
that were in flight at the restored checkpoint are replayed from its channel state, once.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from strom.common import Types, WatermarkStrategy
from strom.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.functions import MapFunction
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.checkpoint.metadata import read_metadata
from strom.runtime.checkpoint.options import barrier_alignment
from strom.runtime.local_executor import LocalJob
from strom.runtime.network.channels import InputGate
from strom.runtime.network.events import CheckpointBarrier
from strom.runtime.network.record_writer import RecordWriter
from strom.runtime.network.tcp_channels import ChannelId, DataServer, RemoteOutputChannel
from strom.runtime.tasks.barrier_alignment import BarrierAligner

HOST = "127.0.0.1"
SECRET = b"a test cluster secret of 32 bytes"
DEADLINE_S = 20.0


def batch(*values: int) -> tuple[list[int], None, None]:
    return list(values), None, None


def drain(gate: InputGate, aligner: BarrierAligner, until_channel_state: bool = False) -> list[tuple[int, object]]:
    """Poll until nothing is queued, feeding barriers to `aligner`; the (channel, item) pairs taken."""
    taken = []
    while (got := gate.poll(0)) is not None:
        ch, item = got
        taken.append((ch.index, item))
        if type(item) is CheckpointBarrier:
            aligner.on_barrier(ch, item)
    return taken


# -- barrier handling on input gates ---------------------------------------------------------------
def test_an_unaligned_barrier_overtakes_queued_buffers_and_records_the_other_channels_until_their_barrier():
    gate = InputGate()
    a, b = gate.add_channel(1, 10), gate.add_channel(1, 10)
    aligner = BarrierAligner(gate, exactly_once=True)
    for i in range(3):
        a.put(batch(i))  # a: 0, 1, 2 in flight
    b.put(batch(10))
    barrier = CheckpointBarrier(7, 1000, unaligned=True)
    a.put_priority(barrier)
    got = gate.poll(0)
    assert got is not None and got[1] == barrier  # it jumped ahead of a's three buffers
    due = aligner.on_barrier(got[0], got[1])
    assert due == barrier  # snapshot at once, nothing blocked
    assert not gate.blocked
    # the task goes on with everything queued: a's overtaken buffers and b's buffer (recorded: before b's barrier)
    assert sorted(item[0][0] for _, item in drain(gate, aligner)) == [0, 1, 2, 10]
    assert aligner.take_channel_state() is None  # b's barrier has not come
    b.put(batch(11))
    b.put_priority(barrier)
    b.put(batch(12))  # after the barrier on b: not part of the checkpoint
    drain(gate, aligner)
    done = aligner.take_channel_state()
    assert done is not None
    cid, state = done
    assert cid == 7
    assert state == {a.index: [batch(0), batch(1), batch(2)], b.index: [batch(10), batch(11)]}
    assert aligner.take_channel_state() is None  # handed out once


def test_an_aligned_barrier_switches_to_unaligned_once_alignment_exceeds_its_timeout():
    now = [1000.0]
    gate = InputGate()
    a, b = gate.add_channel(1, 10), gate.add_channel(1, 10)
    aligner = BarrierAligner(gate, exactly_once=True, clock_ms=lambda: now[0])
    barrier = CheckpointBarrier(3, 1000, unaligned=False, alignment_timeout_ms=50)
    a.put(barrier)
    a.put(batch(1))  # after the barrier on a: held while aligning
    b.put(batch(2))
    drain(gate, aligner)
    assert gate.blocked == {a.index}
    now[0] = 1049.0
    assert aligner.check_timeout() is None
    now[0] = 1050.0
    due = aligner.check_timeout()
    assert due == CheckpointBarrier(3, 1000, unaligned=True, alignment_timeout_ms=50)
    assert not gate.blocked  # a's records after its barrier flow again; they are not in-flight data
    b.put(batch(3))
    b.put(CheckpointBarrier(3, 1000, alignment_timeout_ms=50))
    taken = drain(gate, aligner)
    assert sorted(item[0][0] for _, item in taken if type(item) is tuple) == [1, 3]
    assert aligner.take_channel_state() == (3, {b.index: [batch(3)]})


def test_an_aligned_barrier_queued_past_its_timeout_overtakes_the_buffers_ahead_of_it():
    gate = InputGate()
    a = gate.add_channel(1, 10)
    for i in range(3):
        a.put(batch(i))
    barrier = CheckpointBarrier(6, 1000, alignment_timeout_ms=200)
    a.put(barrier)
    a.put(batch(3))
    gate.promote_overdue_barriers(1199.0)
    assert list(a.queue)[3] == barrier  # not yet due: it stays behind the buffers
    gate.promote_overdue_barriers(1200.0)
    got = gate.poll(0)
    assert got is not None and got[1] == CheckpointBarrier(6, 1000, unaligned=True, alignment_timeout_ms=200)
    aligner = BarrierAligner(gate, exactly_once=True)
    assert aligner.on_barrier(got[0], got[1]) == got[1]
    assert aligner.take_channel_state() == (6, {a.index: [batch(0), batch(1), batch(2)]})
    assert [item for _, item in iter(lambda: gate.poll(0), None)] == [batch(i) for i in range(4)]


def test_a_savepoint_barrier_stays_aligned_however_long_alignment_takes():
    now = [0.0]
    gate = InputGate()
    a, _b = gate.add_channel(1, 10), gate.add_channel(1, 10)
    aligner = BarrierAligner(gate, exactly_once=True, clock_ms=lambda: now[0])
    a.put(CheckpointBarrier(4, 0))  # a savepoint's barrier: no timeout
    drain(gate, aligner)
    now[0] = 1e9
    assert aligner.check_timeout() is None and gate.blocked == {a.index}


UNALIGNED = "execution.checkpointing.unaligned.enabled"


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, (False, -1)),  # off by default, as in Flink
        ({UNALIGNED: "true"}, (True, -1)),
        ({UNALIGNED: "true", "execution.checkpointing.aligned-checkpoint-timeout": "2 s"}, (False, 2000)),
        ({UNALIGNED: "true", "execution.checkpointing.mode": "AT_LEAST_ONCE"}, (False, -1)),
    ],
)
def test_sources_send_barriers_as_the_configuration_says(settings, expected):
    from strom.common.configuration import Configuration

    assert barrier_alignment(Configuration(settings)) == expected


def test_the_writer_sends_the_barrier_ahead_of_its_buffered_records_and_returns_them():
    gate = InputGate()
    ch = gate.add_channel(1, 10)
    w = RecordWriter([ch], kind="forward", buffer_records=1024)
    w.emit([1, 2, 3], None)  # buffered (less than a buffer)
    barrier = CheckpointBarrier(5, 0, unaligned=True)
    assert w.broadcast_priority(barrier) == {0: ([1, 2, 3], None, None)}
    w.flush()
    assert [item for _, item in iter(lambda: gate.poll(0), None)] == [barrier, batch(1, 2, 3)]


def test_a_priority_barrier_over_tcp_needs_no_credit_and_overtakes_the_queue():
    with DataServer(HOST, 0, secret=SECRET) as server:
        server.start()
        gate = InputGate(4096)
        ch = gate.add_channel(1, 2)
        cid = ChannelId("job-1", 0, "a->b", 0, 0)
        server.expect(cid, ch)
        out = RemoteOutputChannel(cid, HOST, server.port, secret=SECRET, segment_size=4096)
        out.put(batch(1))
        out.put(batch(2))  # both credits used
        barrier = CheckpointBarrier(9, 0, unaligned=True)
        out.put_priority(barrier)  # would block here if it needed a credit
        deadline = time.monotonic() + DEADLINE_S
        while len(ch.queue) < 3:
            assert time.monotonic() < deadline, "the barrier did not arrive"
            time.sleep(0.001)
        aligner = BarrierAligner(gate, exactly_once=True)
        got = gate.poll(0)
        assert got is not None and got[1] == barrier
        aligner.on_barrier(got[0], got[1])
        _cid, state = aligner.take_channel_state()
        # the overtaken buffers are stored as they travel (serialized), and decode to the batches
        from strom.runtime.network.serialization import deserialize_item

        assert [deserialize_item(x) for x in state[ch.index]] == [batch(1), batch(2)]
        out.abort()


def test_a_barrier_that_overtakes_a_half_taken_batch_stores_all_its_fragments_and_they_replay_whole():
    from strom.runtime.network.channels import PartialBuffer
    from strom.runtime.network.serialization import serialize_item

    big = ([bytes([i]) * 3000 for i in range(4)], None, None)
    data = serialize_item(big)
    parts = [data[i : i + 4096] for i in range(0, len(data), 4096)]
    assert len(parts) == 3
    gate = InputGate(4096)
    ch = gate.add_channel(1, 10)
    ch.put(PartialBuffer(parts[0]))
    assert gate.poll(0) is None  # the task took the first fragment; the rest has not arrived
    ch.put(PartialBuffer(parts[1]))
    ch.put(parts[2])
    barrier = CheckpointBarrier(2, 0, unaligned=True)
    ch.put_priority(barrier)
    got = gate.poll(0)
    assert got is not None and got[1] == barrier
    aligner = BarrierAligner(gate, exactly_once=True)
    aligner.on_barrier(got[0], got[1])
    _cid, state = aligner.take_channel_state()
    assert [x.data if type(x) is PartialBuffer else x for x in state[ch.index]] == parts
    after = gate.poll(0)
    assert after is not None and after[1] == big  # the task goes on with the batch it had begun
    restored = InputGate(4096)
    rch = restored.add_channel(1, 10)
    restored.recover(rch, state[ch.index])
    replayed = restored.poll(0)
    assert replayed is not None and replayed[1] == big  # the replay is the same batch, once


# -- where channel state is kept ----------------------------------------------------------------------
def test_channel_state_files_are_in_the_metadata_and_restore_only_at_their_parallelism(tmp_path: Path):
    from types import SimpleNamespace

    from strom.runtime.checkpoint.channel_state import ChannelState, encode_channel_state, read_channel_state
    from strom.runtime.checkpoint.metadata import (
        CheckpointMetadata,
        OperatorSnapshotRef,
        decode_metadata,
        encode_metadata,
    )
    from strom.runtime.checkpoint.storage import checkpoint_storage_for
    from strom.runtime.state.api import StateRestoreError

    ref = OperatorSnapshotRef(128, 2, operator_state={0: "map-0", 1: "map-1"}, channel_state={1: "map-1.channels"})
    metadata = decode_metadata(encode_metadata(CheckpointMetadata(5, "job", 0, False, {"map": ref})))
    assert metadata.operators["map"].channel_state == {1: "map-1.channels"}
    assert "map-1.channels" in metadata.files()  # retention and disposal see it
    storage = checkpoint_storage_for(tmp_path.as_uri())
    state = ChannelState(inputs={0: [batch(1)]}, outputs={0: {1: ([2], None, None)}})
    storage.write_bytes("chk-5/map-1.channels", encode_channel_state(state))
    same = SimpleNamespace(parallelism=2, subtask_index=1)
    assert read_channel_state(storage, "chk-5", metadata, "map", same) == state
    other = SimpleNamespace(parallelism=2, subtask_index=0)  # subtask 0 had no in-flight data
    assert read_channel_state(storage, "chk-5", metadata, "map", other) is None
    with pytest.raises(StateRestoreError) as e:
        read_channel_state(storage, "chk-5", metadata, "map", SimpleNamespace(parallelism=3, subtask_index=1))
    assert "\n" not in str(e.value) and "'map'" in str(e.value) and "parallelism 2" in str(e.value)


# -- a job: exactly once across a failure, with in-flight data in the checkpoints -----------------
COUNT = 4000
KEYS = 7
_lock = threading.Lock()
LATEST: dict[int, int] = {}


class SlowSum(KeyedProcessFunction):
    def open(self, runtime_context):
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.LONG()))

    def process_element(self, value, ctx):
        time.sleep(0.001)  # slower than the source: back pressure, queues full of in-flight records
        total = (self.sum.value() or 0) + value[1]
        self.sum.update(total)
        yield value[0], total


class FailOnceAfter(MapFunction):
    """Fails the first attempt once it has seen half of the records' sums go by."""

    def open(self, runtime_context):
        self.attempt = runtime_context.get_attempt_number()
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.attempt == 0 and self.seen == COUNT // 2:
            raise RuntimeError("injected failure")
        with _lock:
            LATEST[value[0]] = value[1]
        return value


def test_keyed_sums_are_exactly_once_across_a_restore_of_an_unaligned_checkpoint(tmp_path: Path):
    LATEST.clear()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    src = DataGeneratorSource(lambda i: (i % KEYS, i), COUNT, rate_limit=3000.0)
    stream = env.from_source(src, WatermarkStrategy.no_watermarks(), "gen")
    stream.key_by(lambda v: v[0]).process(SlowSum()).map(FailOnceAfter()).set_parallelism(1)
    graph = env.get_stream_graph("unaligned sums", clear_transformations=True)
    for key, value in {
        "execution.checkpointing.unaligned.enabled": True,
        "state.checkpoints.dir": tmp_path.as_uri(),
        "state.checkpoints.num-retained": 100,
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": 2,
        "restart-strategy.fixed-delay.delay": "50 ms",
    }.items():
        graph.config.set(key, value)
    job = LocalJob(graph)
    job.start()
    job.wait(120)
    reference = Counter()
    for i in range(COUNT):
        reference[i % KEYS] += i
    assert LATEST == dict(reference)
    assert job.restarts == 1 and job.restored_checkpoint_id is not None
    # the restored checkpoint and others held in-flight data: the replay was needed, not incidental
    retained = [d for d in (tmp_path / job.job_id).iterdir() if (d / "_metadata").exists()]
    with_channel_state = [
        d for d in retained if any(op.channel_state for op in read_metadata(d.as_uri()).operators.values())
    ]
    assert with_channel_state
