"""Remote channels over TCP: the producer end (`RemoteOutputChannel`) and the names a process needs.

A `RemoteOutputChannel` stands where a `LocalChannel` would in a `RecordWriter`: `put(item)` sends a
buffer or event to a consumer subtask in another process, whose `DataServer` feeds it into the
consumer's `InputGate`. Flow control is credit-based: the consumer announces how many buffers it has
room for, `put` sends only while it holds a credit and otherwise blocks (back pressure, measured in
`back_pressured_ns`). A buffer is at most `segment_size` bytes: a serialized batch larger than that goes
as several fragments (PART frames, then an ITEM), one credit each, so a record larger than a segment
spans buffers as in Flink and the consumer holds credits x segment size bytes at most. Events take a
credit too, so the consumer's queue never exceeds its capacity.

The producer task's own thread reads credit frames, only when it has run out: no extra thread per
channel, and credits that arrive while it still holds some simply wait in the socket buffer (at most
`capacity` of them).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from strom.common.tls import InternalTls
from strom.runtime.network.channels import TaskCancelledError
from strom.runtime.network.data_server import DataServer
from strom.runtime.network.events import EndOfPartition
from strom.runtime.network.peer_auth import DATA, PeerAuthError
from strom.runtime.network.secure_connections import secure_connect
from strom.runtime.network.serialization import serialize_item
from strom.runtime.network.tcp_protocol import (
    FRAME_CANCEL,
    FRAME_CREDIT,
    FRAME_ITEM,
    FRAME_PART,
    FRAME_PRIORITY,
    FRAME_REJECT,
    HEADER,
    HEADER_SIZE,
    ChannelFailure,
    ChannelId,
    encode_handshake,
)

__all__ = ["ChannelFailure", "ChannelId", "DataServer", "RemoteOutputChannel"]

_CLOSE_DRAIN_TIMEOUT_S = 5.0


class RemoteOutputChannel:
    """The producer end of one channel to a consumer subtask in another process."""

    def __init__(
        self,
        channel_id: ChannelId,
        host: str,
        port: int,
        *,
        secret: bytes,
        tls: InternalTls | None = None,
        connect_timeout_s: float = 30.0,
        segment_size: int = 32 * 1024,
    ) -> None:
        self.channel_id = channel_id
        self.segment_size = segment_size  # the most bytes one buffer (one credit) carries
        self.host = host
        self.port = port
        self.secret = secret  # the cluster secret: both ends prove it before the channel's handshake
        self.tls = tls  # internal TLS (mutual), set up before the secret is proved
        self.connect_timeout_s = connect_timeout_s
        self.back_pressured_ns = 0
        self.bytes_sent = 0
        self.credits = 0
        self._sock: socket.socket | None = None
        self._announced = False  # the consumer's initial credit arrived
        self._finished = False  # END_OF_PARTITION sent, write side shut
        self._closed = False
        self._aborted = threading.Event()
        self._send_lock = threading.Lock()  # put() and abort() may write concurrently
        self._control = bytearray()  # partial control frames from the consumer

    def __repr__(self) -> str:
        return f"RemoteOutputChannel({self.channel_id}, {self.host}:{self.port})"

    # -- connection --------------------------------------------------------------------------------
    def connect(self) -> None:
        """Connect and send the handshake, retrying until `connect_timeout_s` (the consumer's
        process may start later). Called by the first `put` if not called before."""
        if self._sock is not None:
            return
        deadline = time.monotonic() + self.connect_timeout_s
        delay = 0.01
        while True:
            if self._aborted.is_set():
                raise TaskCancelledError(f"{self.channel_id}: cancelled while connecting")
            remaining = deadline - time.monotonic()
            try:
                sock = socket.create_connection((self.host, self.port), timeout=max(0.05, min(remaining, 5.0)))
                break
            except OSError as e:
                if time.monotonic() + delay > deadline:
                    raise ConnectionError(
                        f"cannot connect {self.channel_id} to the data server at {self.host}:{self.port} "
                        f"within {self.connect_timeout_s} s: {e}"
                    ) from e
                self._aborted.wait(delay)  # wakes at once on abort()
                delay = min(delay * 2, 0.5)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            # no record goes to a server without the cluster's certificate (TLS on) and secret
            sock = secure_connect(sock, secret=self.secret, tls=self.tls, purpose=DATA)
            sock.settimeout(None)
            sock.sendall(encode_handshake(self.channel_id))
        except PeerAuthError as e:
            sock.close()
            where = f"the data server at {self.host}:{self.port}"
            raise PeerAuthError(f"{self.channel_id}: cannot authenticate with {where}: {e}") from None
        except OSError as e:
            sock.close()
            raise self._lost(e) from e
        with self._send_lock:
            self._sock = sock
        if self._aborted.is_set():
            self._shutdown()
            raise TaskCancelledError(f"{self.channel_id}: cancelled while connecting")

    def _lost(self, e: BaseException | None) -> Exception:
        if self._aborted.is_set():
            return TaskCancelledError(f"{self.channel_id}: cancelled")
        why = f": {e}" if e is not None else ""
        return ConnectionError(f"{self.channel_id}: connection to the consumer at {self.host}:{self.port} lost{why}")

    # -- sending -----------------------------------------------------------------------------------
    # hot path: called per buffer
    def put(self, item: Any, size_hint: int = 0) -> None:
        """Send a batch or event, one segment-sized buffer per credit; blocks while the consumer has no
        credit left. (`size_hint` is for in-process channels; here the serialized size is known.)"""
        data = serialize_item(item)
        segment = self.segment_size
        if len(data) <= segment:
            self._send_buffer(FRAME_ITEM, data)
        else:
            view = memoryview(data)
            last = (len(data) - 1) // segment * segment
            for start in range(0, last, segment):
                self._send_buffer(FRAME_PART, view[start : start + segment])
            self._send_buffer(FRAME_ITEM, view[last:])
        if type(item) is EndOfPartition:
            self._finished = True
            try:
                self._sock.shutdown(socket.SHUT_WR)  # type: ignore[union-attr]  # FIN after the last frame
            except OSError:
                pass

    def put_priority(self, barrier: Any) -> None:
        """Send an unaligned checkpoint barrier now, without credit: the consumer puts it at the head of
        its queue (the buffers it overtakes are stored with the checkpoint)."""
        if self._sock is None:
            self.connect()
        self._send_buffer(FRAME_PRIORITY, serialize_item(barrier), credit=False)

    def _send_buffer(self, kind: int, data: bytes | memoryview, *, credit: bool = True) -> None:
        if credit and self.credits == 0:
            self._await_credit()
        header = HEADER.pack(kind, len(data))
        total = HEADER_SIZE + len(data)
        with self._send_lock:
            if self._aborted.is_set():
                raise TaskCancelledError(f"{self.channel_id}: cancelled")
            sock = self._sock
            assert sock is not None
            try:
                sent = sock.sendmsg([header, data])  # one syscall, no header+payload copy
                if sent < total:
                    sock.sendall((header + bytes(data))[sent:])
            except OSError as e:
                raise self._lost(e) from e
        if credit:
            self.credits -= 1
        self.bytes_sent += total

    def _await_credit(self) -> None:
        if self._aborted.is_set():
            raise TaskCancelledError(f"{self.channel_id}: cancelled")
        if self._closed or self._finished:
            raise RuntimeError(f"{self} is closed")
        if self._sock is None:
            self.connect()
        # waiting for the first announcement is connection setup, not back pressure
        setup = not self._announced
        start = time.perf_counter_ns()
        while self.credits == 0:
            self._read_control()
        if not setup:
            self.back_pressured_ns += time.perf_counter_ns() - start

    def _read_control(self) -> None:
        """Block until at least one control frame from the consumer arrived and apply it."""
        sock = self._sock
        assert sock is not None
        try:
            chunk = sock.recv(4096)
        except OSError as e:
            raise self._lost(e) from e
        if not chunk:
            if self._aborted.is_set():
                raise TaskCancelledError(f"{self.channel_id}: cancelled")
            raise ConnectionError(f"{self.channel_id}: the consumer at {self.host}:{self.port} closed the connection")
        buf = self._control
        buf += chunk
        pos = 0
        while len(buf) - pos >= HEADER_SIZE:
            kind, value = HEADER.unpack_from(buf, pos)
            if kind == FRAME_CREDIT:
                self.credits += value
                self._announced = True
                pos += HEADER_SIZE
            elif kind == FRAME_REJECT:
                if len(buf) - pos - HEADER_SIZE < value:
                    break  # the reason is still arriving
                reason = bytes(buf[pos + HEADER_SIZE : pos + HEADER_SIZE + value]).decode(errors="replace")
                where = f"{self.host}:{self.port}"
                raise ConnectionError(f"{self.channel_id}: the data server at {where} refused: {reason}")
            else:
                raise ConnectionError(f"{self.channel_id}: protocol error: unknown control frame {kind}")
        del buf[:pos]

    # -- ending ------------------------------------------------------------------------------------
    def abort(self) -> None:
        """Wake a producer blocked in put() with TaskCancelledError (the job is being cancelled) and
        tell the consumer, so that its task ends as cancelled rather than failed."""
        self._aborted.set()
        sock = self._sock
        if sock is None:
            return
        if not self._finished and self._send_lock.acquire(blocking=False):
            try:
                sock.sendall(HEADER.pack(FRAME_CANCEL, 0))
            except OSError:
                pass
            finally:
                self._send_lock.release()
        self._shutdown()

    def _shutdown(self) -> None:
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a put() blocked in recv or send
            except OSError:
                pass

    def close(self) -> None:
        """Close the connection. After END_OF_PARTITION this waits (bounded) for the consumer to
        close its end first: closing with unread credits would reset the connection and could drop
        the last frames before the consumer read them."""
        if self._closed:
            return
        self._closed = True
        sock = self._sock
        if sock is None:
            return
        if not self._aborted.is_set():
            try:
                if not self._finished:
                    sock.shutdown(socket.SHUT_WR)
                sock.settimeout(_CLOSE_DRAIN_TIMEOUT_S)
                while sock.recv(4096):
                    pass
            except OSError:
                pass
        sock.close()
