"""Wire protocol of remote channels: channel ids, the handshake, frame headers, channel failures.

A producer subtask opens one TCP connection per channel and starts it with a handshake naming the
channel (`MAGIC`, version, length-prefixed `ChannelId`). After that both directions carry frames
with a 5-byte header `[kind u8][value u32]`:

  producer -> consumer   ITEM    value = payload length, then a `serialize_item` payload, or the last
                                 fragment of one
                         PART    value = fragment length, then a fragment of a `serialize_item` payload
                                 that continues in the next frame (a batch larger than a segment)
                         PRIORITY value = payload length, then an unaligned checkpoint barrier: it takes
                                 no credit and goes to the head of the consumer's queue
                         CANCEL  value = 0: the producer task was cancelled
  consumer -> producer   CREDIT  value = number of buffers the consumer has room for (added up)
                         REJECT  value = length of a utf-8 reason that follows; the connection closes

A producer sends an ITEM or PART (a network buffer, at most `taskmanager.memory.segment-size` bytes)
only while it holds a credit, so the consumer's queue never holds more than the channel's capacity.
A connection that ends before the END_OF_PARTITION item, or breaks, reaches the consumer task as a
`ChannelFailure` item in its queue.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from strom.runtime.network.channels import TaskCancelledError

MAGIC = b"STRM"
VERSION = 1
HEADER = struct.Struct("!BI")
HEADER_SIZE = HEADER.size

FRAME_ITEM, FRAME_CANCEL, FRAME_PART, FRAME_PRIORITY = 1, 2, 3, 4
FRAME_CREDIT, FRAME_REJECT = 1, 2

MAX_FRAME_BYTES = 1 << 30  # a longer frame means a corrupt stream, not a big buffer

_ID_HEAD = struct.Struct("!HHIII")
_HANDSHAKE_HEAD = struct.Struct("!4sBH")


@dataclass(frozen=True, slots=True)
class ChannelId:
    """Names one channel of one execution attempt: edge `edge` from producer subtask `producer` to
    consumer subtask `consumer`. Attempts keep a restarted job's channels apart from stale ones."""

    job_id: str
    attempt: int
    edge: str
    producer: int
    consumer: int

    def to_bytes(self) -> bytes:
        job, edge = self.job_id.encode(), self.edge.encode()
        return _ID_HEAD.pack(len(job), len(edge), self.attempt, self.producer, self.consumer) + job + edge

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> ChannelId:
        nj, ne, attempt, producer, consumer = _ID_HEAD.unpack_from(data)
        start = _ID_HEAD.size
        if len(data) != start + nj + ne:
            raise ValueError(f"malformed channel id: {len(data)} bytes, expected {start + nj + ne}")
        job = bytes(data[start : start + nj]).decode()
        edge = bytes(data[start + nj : start + nj + ne]).decode()
        return cls(job, attempt, edge, producer, consumer)

    def __str__(self) -> str:
        return f"channel {self.edge}[{self.producer}->{self.consumer}] of job {self.job_id} (attempt {self.attempt})"


@dataclass(frozen=True, slots=True)
class ChannelFailure:
    """Queued into a consumer's channel when its remote producer is gone; the task raises it."""

    channel: str
    reason: str
    cancelled: bool = False

    def to_exception(self) -> Exception:
        if self.cancelled:
            return TaskCancelledError(f"{self.channel}: {self.reason}")
        return ConnectionError(f"{self.channel}: {self.reason}")


def encode_handshake(channel_id: ChannelId) -> bytes:
    body = channel_id.to_bytes()
    return _HANDSHAKE_HEAD.pack(MAGIC, VERSION, len(body)) + body


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Read exactly `n` bytes; ConnectionError if the peer closes first."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError(f"connection closed after {got} of {n} bytes")
        got += k
    return bytes(buf)


def read_handshake(sock: socket.socket) -> ChannelId:
    magic, version, n = _HANDSHAKE_HEAD.unpack(recv_exact(sock, _HANDSHAKE_HEAD.size))
    if magic != MAGIC:
        raise ValueError(f"not a Strom data connection (magic {magic!r})")
    if version != VERSION:
        raise ValueError(f"data protocol version {version} not supported, expected {VERSION}")
    return ChannelId.from_bytes(recv_exact(sock, n))


def encode_reject(reason: str) -> bytes:
    msg = reason.encode()
    return HEADER.pack(FRAME_REJECT, len(msg)) + msg
