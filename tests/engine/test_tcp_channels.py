"""Remote channels over TCP on loopback: exact delivery, credit-based back pressure, failures.

Producers are `RemoteOutputChannel`s (in threads, or in a spawned child process), consumers are
`InputGate`s fed by a `DataServer`. Nothing sleeps a guess: every wait is for a condition with a
deadline. The one negative check ("put stays blocked") joins the producer thread with a short bound,
which can only fail if a put completed without credit.
"""

from __future__ import annotations

import multiprocessing
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from strom.common.key_groups import assign_to_key_group
from strom.common.time import MAX_WATERMARK, MIN_WATERMARK
from strom.runtime.network.channels import InputGate, LocalChannel, TaskCancelledError
from strom.runtime.network.events import ACTIVE, END_OF_PARTITION, IDLE, EndOfPartition, WatermarkEvent
from strom.runtime.network.record_writer import RecordWriter
from strom.runtime.network.serialization import (
    PICKLE_TAG,
    deserialize_item,
    register_batch_codec,
    serialize_item,
    unregister_batch_codec,
)
from strom.runtime.network.tcp_channels import ChannelFailure, ChannelId, DataServer, RemoteOutputChannel
from strom.runtime.tasks.processing_time import ProcessingTimeService
from strom.runtime.tasks.stream_task import FAILED, StreamTask

HOST = "127.0.0.1"
SECRET = b"a test cluster secret of 32 bytes"  # what every end of these channels proves
DEADLINE_S = 20.0


# -- helpers ---------------------------------------------------------------------------------------
def wait_until(condition: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.001)


def cid(producer: int = 0, consumer: int = 0, *, job: str = "job-1", edge: str = "map->sink") -> ChannelId:
    return ChannelId(job, 0, edge, producer, consumer)


def take(gate: InputGate, n: int) -> list[tuple[LocalChannel, Any]]:
    """The next `n` items from `gate`, failing if they do not arrive within the deadline."""
    out = []
    deadline = time.monotonic() + DEADLINE_S
    while len(out) < n:
        got = gate.poll(0.05)
        if got is not None:
            out.append(got)
        elif time.monotonic() > deadline:
            raise AssertionError(f"got {len(out)} of {n} items before the deadline")
    return out


def take_until_end(gate: InputGate, channels: int = 1) -> list[Any]:
    """Items from `gate` until every channel sent end of partition (ChannelFailure raises)."""
    items = []
    ended = 0
    deadline = time.monotonic() + 60
    while ended < channels:
        got = gate.poll(0.05)
        if got is None:
            assert time.monotonic() < deadline, f"only {ended} of {channels} channels ended"
            continue
        item = got[1]
        if type(item) is ChannelFailure:
            raise item.to_exception()
        if type(item) is EndOfPartition:
            ended += 1
        items.append(item)
    return items


class Producer:
    """Runs puts in a thread and counts those that completed."""

    def __init__(self, channel: RemoteOutputChannel, items: list[Any], *, close: bool = True) -> None:
        self.channel = channel
        self.items = items
        self.close = close
        self.done = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for item in self.items:
                self.channel.put(item)
                self.done += 1
            if self.close:
                self.channel.close()
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            self.error = e

    def join(self) -> None:
        self.thread.join(DEADLINE_S)
        assert not self.thread.is_alive(), "producer did not finish"


@pytest.fixture
def server() -> Iterator[DataServer]:
    s = DataServer(HOST, 0, secret=SECRET)
    s.start()
    yield s
    s.close()


def batch(start: int, n: int, *, ts: bool = True, keys: bool = False) -> tuple[list, list | None, list | None]:
    span = range(start, start + n)
    values = [(i, f"k{i % 7}", i * 0.5) for i in span]
    return values, list(span) if ts else None, [f"k{i % 7}" for i in span] if keys else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# -- serialization ---------------------------------------------------------------------------------
ALL_ITEMS = [
    batch(0, 5),
    batch(5, 3, ts=False),
    batch(8, 4, keys=True),
    batch(12, 2, ts=False, keys=True),
    ([], None, None),
    WatermarkEvent(1234),
    WatermarkEvent(MIN_WATERMARK),
    WatermarkEvent(MAX_WATERMARK),
    IDLE,
    ACTIVE,
    END_OF_PARTITION,
]


def test_serialization_round_trips_batches_and_events_exactly():
    for item in ALL_ITEMS:
        assert deserialize_item(serialize_item(item)) == item
        assert deserialize_item(memoryview(serialize_item(item))) == item


def test_events_have_compact_fixed_encodings():
    assert len(serialize_item(WatermarkEvent(MAX_WATERMARK))) == 9
    assert len(serialize_item(IDLE)) == 2
    assert len(serialize_item(END_OF_PARTITION)) == 1
    assert serialize_item(batch(0, 3))[0] == PICKLE_TAG


def test_local_classes_fall_back_to_cloudpickle():
    class Local:  # plain pickle cannot name a class defined in a function
        def __init__(self, x: int) -> None:
            self.x = x

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Local) and other.x == self.x

    item = ([Local(1), Local(2)], None, None)
    back = deserialize_item(serialize_item(item))
    assert [v.x for v in back[0]] == [1, 2]


def test_classes_of_main_are_pickled_by_value():
    """Another process's `__main__` is not the job file: its classes must travel by value."""
    main = sys.modules["__main__"]
    cls = type("JobRecord", (), {"__module__": "__main__", "__init__": lambda self, v: setattr(self, "v", v)})
    main.JobRecord = cls
    try:
        data = serialize_item(([cls(7)], None, None))
    finally:
        delattr(main, "JobRecord")
    back = deserialize_item(data)  # `__main__.JobRecord` is gone: only a by-value class loads
    assert back[0][0].v == 7


@dataclass(frozen=True)
class Point:
    x: int
    y: int


class PointCodec:
    """Fixed-width encoding of a batch of Points without timestamps or keys."""

    tag = 0x90
    _pair = struct.Struct("!ii")

    def encode(self, batch: Any) -> bytes | None:
        values, ts, keys = batch
        if ts is not None or keys is not None or any(type(v) is not Point for v in values):
            return None
        return bytes([self.tag]) + b"".join(self._pair.pack(p.x, p.y) for p in values)

    def decode(self, data: bytes | memoryview) -> Any:
        return ([Point(*xy) for xy in self._pair.iter_unpack(data[1:])], None, None)


def test_a_registered_batch_codec_encodes_its_record_type():
    register_batch_codec(Point, PointCodec())
    try:
        points = ([Point(1, 2), Point(-3, 4)], None, None)
        data = serialize_item(points)
        assert data[0] == 0x90 and len(data) == 1 + 2 * 8
        assert deserialize_item(data) == points
        with_ts = ([Point(1, 2)], [5], None)  # declined by the codec: pickled
        assert serialize_item(with_ts)[0] == PICKLE_TAG
        assert deserialize_item(serialize_item(with_ts)) == with_ts
        with pytest.raises(ValueError, match="already registered"):
            register_batch_codec(Point, PointCodec())
    finally:
        unregister_batch_codec(Point)
    assert serialize_item(points)[0] == PICKLE_TAG


def test_channel_id_wire_form_round_trips():
    c = ChannelId("a1b2c3", 3, "Window(Tumbling) -> Sink: ünïcode", 17, 255)
    assert ChannelId.from_bytes(c.to_bytes()) == c
    assert len(c.to_bytes()) < 64
    assert "17->255" in str(c) and "a1b2c3" in str(c)


# -- delivery --------------------------------------------------------------------------------------
def test_items_arrive_exactly_and_in_order(server: DataServer):
    gate = InputGate()
    ch = gate.add_channel(1, len(ALL_ITEMS))
    server.expect(cid(), ch)
    out = RemoteOutputChannel(cid(), HOST, server.port, secret=SECRET)
    p = Producer(out, ALL_ITEMS)
    got = [item for _, item in take(gate, len(ALL_ITEMS))]
    p.join()
    assert p.error is None
    assert got == ALL_ITEMS
    assert out.bytes_sent > 0
    assert ch.bytes_received == out.bytes_sent  # numBytesIn of the consumer = numBytesOut of the producer


def test_connection_before_expect_is_held_until_expected(server: DataServer):
    out = RemoteOutputChannel(cid(), HOST, server.port, secret=SECRET)
    out.connect()
    wait_until(lambda: cid() in server.held_channels(), "the early connection to be held")
    p = Producer(out, [batch(0, 3), END_OF_PARTITION])
    gate = InputGate()
    server.expect(cid(), gate.add_channel(1, 2))
    assert [item for _, item in take(gate, 2)] == [batch(0, 3), END_OF_PARTITION]
    p.join()
    assert p.error is None
    assert server.held_channels() == []


def test_a_held_connection_nobody_expects_is_refused_after_the_timeout():
    with DataServer(HOST, 0, secret=SECRET, pending_timeout_s=0.2) as s:
        out = RemoteOutputChannel(cid(), HOST, s.start(), secret=SECRET)
        with pytest.raises(ConnectionError, match="no consumer registered for channel map->sink"):
            out.put(batch(0, 1))


def test_connect_gives_up_after_the_deadline_naming_address_and_channel():
    port = free_port()
    out = RemoteOutputChannel(cid(), HOST, port, connect_timeout_s=0.3, secret=SECRET)
    with pytest.raises(ConnectionError) as e:
        out.put(batch(0, 1))
    assert f"{HOST}:{port}" in str(e.value) and "map->sink[0->0]" in str(e.value)


def test_a_producer_started_before_the_server_connects_when_it_comes_up():
    port = free_port()
    out = RemoteOutputChannel(cid(), HOST, port, connect_timeout_s=DEADLINE_S, secret=SECRET)
    p = Producer(out, [batch(0, 2), END_OF_PARTITION])
    with DataServer(HOST, port, secret=SECRET) as s:
        s.start()
        gate = InputGate()
        s.expect(cid(), gate.add_channel(1, 2))
        assert [item for _, item in take(gate, 2)] == [batch(0, 2), END_OF_PARTITION]
        p.join()
    assert p.error is None


# -- back pressure ---------------------------------------------------------------------------------
def test_a_consumer_that_does_not_poll_stops_the_producer_after_capacity_buffers(server: DataServer):
    capacity = 3
    gate = InputGate()
    ch = gate.add_channel(1, capacity)
    server.expect(cid(), ch)
    items = [batch(i * 10, 10) for i in range(8)] + [END_OF_PARTITION]
    out = RemoteOutputChannel(cid(), HOST, server.port, secret=SECRET)
    p = Producer(out, items)
    wait_until(lambda: len(ch.queue) == capacity and p.done == capacity, "capacity buffers to arrive")
    p.thread.join(0.3)  # bounded: a put without credit would finish at once
    assert p.thread.is_alive() and p.done == capacity and len(ch.queue) == capacity
    first = take(gate, 1)[0][1]
    wait_until(lambda: p.done == capacity + 1, "the producer to resume after one poll")
    got = [first] + [item for _, item in take(gate, len(items) - 1)]
    p.join()
    assert p.error is None
    assert got == items
    assert out.back_pressured_ns > 0


def test_a_slow_consumer_keeps_its_queue_within_capacity(server: DataServer):
    capacity = 2
    gate = InputGate()
    ch = gate.add_channel(1, capacity)
    server.expect(cid(), ch)
    items = [batch(i * 5, 5, keys=i % 2 == 0) for i in range(100)] + [WatermarkEvent(500), END_OF_PARTITION]
    p = Producer(RemoteOutputChannel(cid(), HOST, server.port, secret=SECRET), items)
    got: list[Any] = []
    longest = 0
    while len(got) < len(items):
        # slow: take a buffer only once the producer filled every credit (or has nothing left)
        wait_until(lambda: len(ch.queue) >= capacity or p.done == len(items), "the producer to fill its credits")
        with gate.cond:
            longest = max(longest, len(ch.queue))
        _, item = take(gate, 1)[0]
        assert type(item) is not ChannelFailure, item
        got.append(item)
    p.join()
    assert p.error is None
    assert got == items
    assert longest == capacity


def test_many_channels_into_one_gate_deliver_a_2x2_hash_shuffle(server: DataServer):
    """Two producers hash-partition keys 0..99 over two consumers, like key_by at parallelism 2."""

    class KeyOf:
        @staticmethod
        def get_key(v: tuple[int, int]) -> int:
            return v[0]

    n = 5000
    gates = [InputGate(), InputGate()]
    for c in range(2):
        for prod in range(2):
            server.expect(cid(prod, c), gates[c].add_channel(1, 4))

    def produce(prod: int) -> None:
        channels = [RemoteOutputChannel(cid(prod, c), HOST, server.port, secret=SECRET) for c in range(2)]
        w = RecordWriter(
            channels, kind="hash", buffer_records=64, key_selector=KeyOf(), consumer_parallelism=2, subtask_index=prod
        )
        for start in range(0, n, 250):
            w.emit([(i % 100, prod * n + i) for i in range(start, start + 250)], None)
        w.flush()
        w.close()
        for c in channels:
            c.close()

    threads = [threading.Thread(target=produce, args=(prod,), daemon=True) for prod in range(2)]
    for t in threads:
        t.start()
    received: list[list[tuple[int, int]]] = [[], []]
    ended = [0, 0]
    deadline = time.monotonic() + 60
    while ended != [2, 2]:
        assert time.monotonic() < deadline, f"ended {ended}"
        for c in range(2):
            got = gates[c].poll(0.005)
            if got is None:
                continue
            item = got[1]
            assert type(item) is not ChannelFailure, item
            if type(item) is EndOfPartition:
                ended[c] += 1
            elif type(item) is tuple:
                received[c].extend(item[0])
                assert item[2] == [v[0] for v in item[0]]  # keys travel with the batch
    for t in threads:
        t.join(DEADLINE_S)
    expected: list[list[tuple[int, int]]] = [[], []]
    for prod in range(2):
        for i in range(n):
            key = i % 100
            expected[assign_to_key_group(key, 128) * 2 // 128].append((key, prod * n + i))
    for c in range(2):
        assert sorted(received[c]) == sorted(expected[c])
        for prod in range(2):  # each producer's records arrive in the order it sent them
            mine = [v for v in received[c] if prod * n <= v[1] < (prod + 1) * n]
            assert mine == [v for v in expected[c] if prod * n <= v[1] < (prod + 1) * n]


# -- cancellation and failures ---------------------------------------------------------------------
def test_abort_unblocks_a_producer_waiting_for_credit(server: DataServer):
    gate = InputGate()
    ch = gate.add_channel(1, 1)
    server.expect(cid(), ch)
    p = Producer(RemoteOutputChannel(cid(), HOST, server.port, secret=SECRET), [batch(0, 1), batch(1, 1)])
    wait_until(lambda: p.done == 1 and len(ch.queue) == 1, "the first buffer")
    p.channel.abort()
    p.join()
    assert isinstance(p.error, TaskCancelledError)
    items = [item for _, item in take(gate, 2)]
    assert items[0] == batch(0, 1)
    assert type(items[1]) is ChannelFailure and items[1].cancelled  # the consumer ends as cancelled
    assert isinstance(items[1].to_exception(), TaskCancelledError)


def test_abort_unblocks_a_producer_waiting_to_connect():
    p = Producer(RemoteOutputChannel(cid(), HOST, free_port(), connect_timeout_s=60, secret=SECRET), [batch(0, 1)])
    p.thread.join(0.05)
    p.channel.abort()
    p.join()
    assert isinstance(p.error, TaskCancelledError)


def test_a_producer_that_disconnects_mid_stream_fails_the_consumer_task(server: DataServer):
    gate = InputGate()
    ch = gate.add_channel(1, 4)
    server.expect(cid(), ch)
    Producer(RemoteOutputChannel(cid(), HOST, server.port, secret=SECRET), [batch(0, 2)], close=True).join()  # no EOP

    class Head:
        def __init__(self) -> None:
            self.records: list[Any] = []

        def open(self) -> None: ...
        def close(self) -> None: ...
        def finish(self) -> None: ...
        def end_input(self, _i: int) -> None: ...
        def process_watermark(self, _wm: int) -> None: ...
        def process_status(self, _s: Any) -> None: ...

        def process_batch(self, values: list, _ts: Any, _keys: Any) -> None:
            self.records.extend(values)

        process_batch1 = process_batch2 = process_batch
        process_watermark1 = process_watermark2 = process_watermark

    head = Head()
    done = threading.Event()
    task = StreamTask(
        name="Sink",
        subtask_index=0,
        parallelism=1,
        operators=[head],
        outputs=[],
        writers=[],
        gate=gate,
        processing_time_service=ProcessingTimeService(),
        config=None,
        on_done=lambda _t: done.set(),
    )
    task.start()
    assert done.wait(DEADLINE_S)
    assert task.state == FAILED
    assert isinstance(task.failure, ConnectionError)
    assert "map->sink[0->0]" in str(task.failure) and "before end of partition" in str(task.failure)
    assert head.records == batch(0, 2)[0]


def test_a_consumer_that_goes_away_fails_the_producers_put(server: DataServer):
    gate = InputGate()
    server.expect(cid(), gate.add_channel(1, 2))
    p = Producer(RemoteOutputChannel(cid(), HOST, server.port, secret=SECRET), [batch(i, 1) for i in range(10)])
    wait_until(lambda: p.done == 2, "the credited buffers")
    server.close()
    p.join()
    assert isinstance(p.error, ConnectionError)
    assert "map->sink[0->0]" in str(p.error) and f"{HOST}:{server.port}" in str(p.error)


def test_forget_drops_a_jobs_registrations_and_refuses_its_producers(server: DataServer):
    gate = InputGate()
    server.expect(cid(job="old"), gate.add_channel(1, 2))
    server.forget("old")
    out = RemoteOutputChannel(cid(job="old"), HOST, server.port, secret=SECRET)
    out.connect()
    wait_until(lambda: cid(job="old") in server.held_channels(), "the connection to be held")
    server.forget("old")
    with pytest.raises(ConnectionError, match="job old is no longer running"):
        out.put(batch(0, 1))
    assert gate.pending == 0


# -- across processes ------------------------------------------------------------------------------
N_RECORDS = 100_000


def reference_records() -> tuple[list[tuple[int, str, float]], list[int]]:
    return [(i, f"k{i % 7}", i * 0.5) for i in range(N_RECORDS)], [i * 3 for i in range(N_RECORDS)]


def produce_in_child(channel_id: ChannelId, port: int, forever: bool) -> None:
    """Child process: a forward RecordWriter over one remote channel, batches of 1024 records."""
    out = RemoteOutputChannel(channel_id, HOST, port, secret=SECRET)
    w = RecordWriter([out], kind="forward", buffer_records=1024)
    i = 0
    while forever or i < N_RECORDS:
        chunk = range(i, min(i + 5000, N_RECORDS)) if not forever else range(i, i + 5000)
        w.emit([(j, f"k{j % 7}", j * 0.5) for j in chunk], [j * 3 for j in chunk])
        w.broadcast_event(WatermarkEvent(chunk[-1] * 3))
        i = chunk[-1] + 1
    w.close()
    out.close()


def test_a_producer_process_feeds_a_consumer_in_another_process(server: DataServer):
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(target=produce_in_child, args=(cid(), server.port, False), daemon=True)
    child.start()  # before expect: the child may connect first and is held
    gate = InputGate()
    server.expect(cid(), gate.add_channel(1, 10))
    try:
        items = take_until_end(gate)
    finally:
        child.join(DEADLINE_S)
    assert child.exitcode == 0
    values, timestamps, watermarks = [], [], []
    for item in items:
        if type(item) is tuple:
            values.extend(item[0])
            timestamps.extend(item[1])
        elif type(item) is WatermarkEvent:
            watermarks.append(item.timestamp)
    ref_values, ref_ts = reference_records()
    assert values == ref_values
    assert timestamps == ref_ts
    assert watermarks == [min(i + 4999, N_RECORDS - 1) * 3 for i in range(0, N_RECORDS, 5000)]
    assert type(items[-1]) is EndOfPartition


def test_a_killed_producer_process_surfaces_as_a_connection_error(server: DataServer):
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(target=produce_in_child, args=(cid(), server.port, True), daemon=True)
    child.start()
    gate = InputGate()
    server.expect(cid(), gate.add_channel(1, 4))
    try:
        assert type(take(gate, 1)[0][1]) is tuple
    finally:
        child.kill()
        child.join(DEADLINE_S)
    with pytest.raises(ConnectionError, match=r"map->sink\[0->0\]"):
        take_until_end(gate)
