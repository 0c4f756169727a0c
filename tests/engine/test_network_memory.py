"""Network memory bounded in bytes: segment-sized buffers and credits, records spanning buffers, the
configuration keys and their refusals.

Remote channels run on loopback (a `DataServer` and `RemoteOutputChannel`s in threads); what a
consumer's queue holds is read under the gate's lock. Expected values are worked from the
configuration in each test (credits x segment size), never from the engine's earlier output.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from strom.common import config_options as opts
from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.runtime.network.channels import InputGate, PartialBuffer
from strom.runtime.network.events import END_OF_PARTITION, EndOfPartition
from strom.runtime.network.network_memory import NetworkBuffers
from strom.runtime.network.record_writer import RecordWriter
from strom.runtime.network.tcp_channels import ChannelId, DataServer, RemoteOutputChannel

HOST = "127.0.0.1"
SECRET = b"a test cluster secret of 32 bytes"
DEADLINE_S = 20.0
SEGMENT = 4 * 1024


def wait_until(condition: Any, what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.001)


@pytest.fixture
def server() -> Iterator[DataServer]:
    s = DataServer(HOST, 0, secret=SECRET)
    s.start()
    yield s
    s.close()


def payload(i: int, size: int) -> bytes:
    """Record `i`: `size` bytes that differ per record (so a mixed-up fragment changes the checksum)."""
    return (i.to_bytes(4, "big") * (size // 4 + 1))[:size]


# -- configuration ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("taskmanager.memory.segment-size", "32xb"),
        ("taskmanager.memory.segment-size", "1kb"),  # below Flink's 4 kb minimum
        ("taskmanager.memory.segment-size", "48kb"),  # not a power of two
        ("taskmanager.memory.segment-size", "-32kb"),
        ("taskmanager.memory.network.max", "lots"),
        ("taskmanager.network.memory.buffers-per-channel", "0"),
        ("execution.checkpointing.unaligned.enabled", "maybe"),
        ("execution.checkpointing.aligned-checkpoint-timeout", "soon"),
    ],
)
def test_a_bad_network_memory_setting_is_one_line_naming_the_key(key: str, value: str):
    with pytest.raises(ConfigError) as e:
        Configuration({key: value}).get(opts.OPTIONS[key])
    message = str(e.value)
    assert "\n" not in message and repr(key) in message and repr(value) in message


def test_memory_sizes_read_as_flink_reads_them():
    sizes = {"32kb": 32768, "32 KB": 32768, "1 mb": 1 << 20, "4096": 4096, "64m": 64 << 20, "1g": 1 << 30}
    for text, expected in sizes.items():
        assert opts.parse_memory_size(text) == expected, text
    assert Configuration().get(opts.SEGMENT_SIZE) == 32 * 1024  # Flink's default


def test_a_deployment_beyond_the_network_memory_is_refused_naming_the_keys():
    buffers = NetworkBuffers(segment_size=32 * 1024, exclusive=2, floating=8, max_bytes=1 << 20, buffer_records=1024)
    # 4 gates of 4 channels: 4 x (4 x 2 + 8) = 64 buffers, plus 16 output channels: 80 x 32 kb = 2.5 mb > 1 mb
    with pytest.raises(ConfigError) as e:
        buffers.check_budget(input_buffers=4 * buffers.gate_buffers(4), output_channels=16, where="subtasks x")
    message = str(e.value)
    assert "\n" not in message and "'taskmanager.memory.network.max' is 1 mb" in message and "2560 kb" in message
    buffers.check_budget(input_buffers=16, output_channels=16, where="subtasks x")  # 1 mb exactly fits


def test_floating_buffers_are_spread_over_the_gate_and_add_up():
    buffers = NetworkBuffers(segment_size=SEGMENT, exclusive=2, floating=8, max_bytes=1 << 30, buffer_records=1024)
    for n in (1, 3, 8, 11):
        credits = [buffers.channel_credits(n, i) for i in range(n)]
        assert sum(credits) == 2 * n + 8 == buffers.gate_buffers(n)
        assert min(credits) >= 2


# -- records spanning buffers ----------------------------------------------------------------------
def test_a_record_larger_than_the_segment_spans_buffers_and_the_queue_stays_within_credits(server: DataServer):
    capacity = 3
    gate = InputGate(SEGMENT)
    ch = gate.add_channel(1, capacity)
    cid = ChannelId("job-1", 0, "src->sink", 0, 0)
    server.expect(cid, ch)
    records = [payload(i, 100_000 + i) for i in range(6)]  # each ~25 buffers of 4 kb
    out = RemoteOutputChannel(cid, HOST, server.port, secret=SECRET, segment_size=SEGMENT)
    done = threading.Event()

    def produce() -> None:
        for r in records:
            out.put(([r], None, None))
        out.put(END_OF_PARTITION)
        done.set()  # before close(), which waits for the consumer to close its end
        out.close()

    threading.Thread(target=produce, daemon=True).start()
    got: list[bytes] = []
    # the producer fills its initial credits, then waits: 3 buffers of at most a segment, not 3 records
    wait_until(lambda: len(ch.queue) == capacity, "the producer to use its credits")
    most_bytes = most_items = 0
    while True:
        with gate.cond:
            most_items = max(most_items, len(ch.queue))
            most_bytes = max(most_bytes, sum(len(x.data if type(x) is PartialBuffer else x) for x in ch.queue))
        polled = gate.poll(DEADLINE_S)
        assert polled is not None
        item = polled[1]
        if type(item) is EndOfPartition:
            break
        got.extend(item[0])
    assert [zlib.crc32(r) for r in got] == [zlib.crc32(r) for r in records]
    assert most_items == capacity  # back pressure reached, never beyond the credits
    assert most_bytes <= capacity * SEGMENT  # what the channel holds is credits x segment, not records
    assert out.bytes_sent > sum(len(r) for r in records)


def test_an_in_process_batch_costs_its_buffers_and_a_big_one_goes_alone():
    gate = InputGate(SEGMENT)
    ch = gate.add_channel(1, 4)
    ch.put(([b"x"], None, None), 3 * SEGMENT)  # 3 of 4 buffers
    blocked = threading.Event()
    sent = threading.Event()

    def put_big() -> None:
        blocked.set()
        ch.put(([b"y" * (10 * SEGMENT)], None, None), 10 * SEGMENT)  # more than the whole capacity
        sent.set()

    threading.Thread(target=put_big, daemon=True).start()
    blocked.wait(DEADLINE_S)
    assert not sent.wait(0.2)  # bounded: queued 3 + 10 > 4, it waits for the queue to empty
    assert ch.queued == 3
    gate.poll(0)
    assert sent.wait(DEADLINE_S)  # an empty queue takes a record larger than the capacity, alone
    assert ch.queued == 10


def test_the_writer_cuts_buffers_by_bytes_not_records():
    class Recorder:
        def __init__(self) -> None:
            self.batches: list[int] = []

        def put(self, item: Any, size_hint: int = 0) -> None:
            if type(item) is tuple:
                self.batches.append(len(item[0]))

    small, big = Recorder(), Recorder()
    w = RecordWriter([small], kind="forward", buffer_records=1024, segment_size=32 * 1024)
    w.emit(list(range(5000)), None)
    w.flush()
    assert max(small.batches) == 1024  # small records: the record cap
    w = RecordWriter([big], kind="forward", buffer_records=1024, segment_size=32 * 1024)
    w.emit([payload(i, 20 * 1024) for i in range(50)], None)
    w.flush()
    assert max(big.batches) == 1 and sum(big.batches) == 50  # 20 kb records: 32 kb // ~20 kb = 1 per buffer
