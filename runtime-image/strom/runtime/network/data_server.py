"""DataServer: the consumer end of remote channels, one TCP server per worker process.

Every connection is first secured (`secure_connections.secure_accept`: mutual TLS when internal TLS
is on, then peer authentication, where the producer proves the cluster secret and so does this
server); only then is its handshake read. The process registers
each remote input channel with `expect(channel_id, channel)`, where `channel` is the `LocalChannel`
an `InputGate` handed out. A producer connects and names its channel in a handshake; the connection
may arrive before `expect` and is then held (up to `pending_timeout_s`). Once matched, the server
announces `channel.capacity` credits and reads frames into the channel's queue as they are, serialized
(one network buffer each, at most a segment; the consumer task deserializes them when it takes them);
each buffer the task takes returns one credit through `channel.on_consumed`.

One reader thread per connection, not one selector thread: a reader blocks in recv without the GIL
until a frame arrives, frames are parsed by C code (buffered reads, unpickling), and a selector loop in
Python would do the same work with extra bookkeeping and partial-frame state. Connections per worker
are few (producers x input channels of its slot).
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from strom.common.tls import InternalTls
from strom.runtime.network.channels import LocalChannel, PartialBuffer
from strom.runtime.network.peer_auth import DATA
from strom.runtime.network.secure_connections import secure_accept
from strom.runtime.network.serialization import (
    BARRIER_SIZE,
    CHECKPOINT_BARRIER_TAG,
    END_OF_PARTITION_TAG,
    deserialize_item,
)
from strom.runtime.network.tcp_protocol import (
    FRAME_CANCEL,
    FRAME_CREDIT,
    FRAME_ITEM,
    FRAME_PART,
    FRAME_PRIORITY,
    HEADER,
    HEADER_SIZE,
    MAX_FRAME_BYTES,
    ChannelFailure,
    ChannelId,
    encode_reject,
    read_handshake,
)

log = logging.getLogger("strom.runtime.network")

_READ_BUFFER = 1 << 16


class DataServer:
    """Accepts producer connections and feeds them into the registered consumer channels."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        secret: bytes,
        tls: InternalTls | None = None,
        pending_timeout_s: float = 60.0,
        handshake_timeout_s: float = 10.0,
    ) -> None:
        self.host = host
        self.port = port
        self.secret = secret  # the cluster secret producers must prove (peer_auth) before anything is read
        self.tls = tls  # internal TLS: producers present a certificate of the cluster's CA first
        self.pending_timeout_s = pending_timeout_s
        self.handshake_timeout_s = handshake_timeout_s
        self._lock = threading.Lock()
        self._expected: dict[ChannelId, LocalChannel] = {}
        self._held: dict[ChannelId, _InboundConnection] = {}
        self._active: dict[ChannelId, _InboundConnection] = {}
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._closed = False

    def start(self) -> int:
        """Bind and listen; returns the bound port (a free one when the port was 0)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self.port))
        except OSError as e:
            listener.close()
            raise OSError(e.errno, f"data server cannot listen on {self.host}:{self.port}: {e.strerror}") from e
        listener.listen(128)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._accept_thread = threading.Thread(target=self._accept_loop, name=f"data-server:{self.port}", daemon=True)
        self._accept_thread.start()
        log.info("data server listening on %s:%d", self.host, self.port)
        return self.port

    def expect(self, channel_id: ChannelId, channel: LocalChannel) -> None:
        """Register the consumer queue for the producer that will connect as `channel_id`."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"data server on {self.host}:{self.port} is closed")
            if channel_id in self._expected or channel_id in self._active:
                raise ValueError(f"{channel_id} is already registered")
            conn = self._held.pop(channel_id, None)
            if conn is None:
                self._expected[channel_id] = channel
                return
            self._active[channel_id] = conn
        conn.attach(channel)

    def forget(self, job_id: str) -> None:
        """Drop every registration and connection of `job_id` (the job ended or restarts)."""
        with self._lock:
            for cid in [c for c in self._expected if c.job_id == job_id]:
                del self._expected[cid]
            held = [self._held.pop(c) for c in list(self._held) if c.job_id == job_id]
            active = [self._active.pop(c) for c in list(self._active) if c.job_id == job_id]
        for conn in held:
            conn.reject(f"job {job_id} is no longer running on this worker")
        for conn in active:
            conn.shutdown()

    def held_channels(self) -> list[ChannelId]:
        """Channels whose producer connected before `expect` and is waiting to be matched."""
        with self._lock:
            return list(self._held)

    def close(self) -> None:
        """Stop accepting and close every connection (consumers see a ChannelFailure)."""
        with self._lock:
            self._closed = True
            held = list(self._held.values())
            active = list(self._active.values())
            self._held.clear()
            self._active.clear()
            self._expected.clear()
        if self._listener is not None:
            try:
                # shutdown wakes the thread blocked in accept(); close alone does not on Linux
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        for conn in held:
            conn.reject(f"data server on {self.host}:{self.port} is closing")
        for conn in active:
            conn.shutdown(fail=True)
        if self._accept_thread is not None:
            self._accept_thread.join(5)

    def __enter__(self) -> DataServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- connections -------------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        listener = self._listener
        assert listener is not None
        while True:
            try:
                sock, addr = listener.accept()
            except OSError:
                return  # closed
            if self._closed:
                sock.close()
                return
            conn = _InboundConnection(self, sock, f"{addr[0]}:{addr[1]}")
            threading.Thread(target=conn.run, name=f"data-in:{addr[1]}", daemon=True).start()

    def _match(self, conn: _InboundConnection) -> LocalChannel | None:
        """The registered channel for `conn`, or None after holding it until expected or timed out."""
        cid = conn.channel_id
        assert cid is not None
        with self._lock:
            if self._closed:
                conn.reject(f"data server on {self.host}:{self.port} is closing")
                return None
            if cid in self._active or cid in self._held:
                conn.reject(f"{cid} is already connected")
                return None
            channel = self._expected.pop(cid, None)
            if channel is not None:
                self._active[cid] = conn
                return channel
            self._held[cid] = conn
        if conn.attached.wait(self.pending_timeout_s):
            return conn.channel
        with self._lock:
            if self._held.get(cid) is conn:
                del self._held[cid]
                timed_out = True
            else:
                timed_out = False  # expect() or forget() took it in the meantime
        if timed_out:
            where = f"{self.host}:{self.port}"
            conn.reject(f"no consumer registered for {cid} on {where} within {self.pending_timeout_s} s")
            return None
        conn.attached.wait()
        return conn.channel

    def _release(self, conn: _InboundConnection) -> None:
        with self._lock:
            if conn.channel_id is not None and self._active.get(conn.channel_id) is conn:
                del self._active[conn.channel_id]


class _InboundConnection:
    """One producer's connection: reads its frames into a consumer channel and returns credits."""

    def __init__(self, server: DataServer, sock: socket.socket, peer: str) -> None:
        self.server = server
        self.sock = sock
        self.peer = peer
        self.channel_id: ChannelId | None = None
        self.channel: LocalChannel | None = None
        self.attached = threading.Event()
        self.send_lock = threading.Lock()
        self.granted = 0  # credits announced to the producer so far
        self.received = 0  # buffers received so far
        self.unannounced = 0  # credits freed by the consumer, not yet announced
        self.closed = False
        self.forgotten = False  # closed on purpose (forget/close): nobody to tell

    def attach(self, channel: LocalChannel | None) -> None:
        self.channel = channel
        self.attached.set()

    def reject(self, reason: str) -> None:
        log.warning("data server rejects connection from %s: %s", self.peer, reason)
        self.forgotten = True
        with self.send_lock:
            try:
                self.sock.sendall(encode_reject(reason))
            except OSError:
                pass
        self.attach(None)
        self.shutdown()

    def shutdown(self, fail: bool = False) -> None:
        self.forgotten = not fail
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader thread
        except OSError:
            pass

    def run(self) -> None:
        sock = self.sock
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # credits are tiny frames
            # nothing is read from a producer without the cluster's certificate (TLS on) and secret; the
            # JobManager's reachability probe (connect, close) ends here quietly
            secured = secure_accept(sock, secret=self.server.secret, tls=self.server.tls, purpose=DATA, peer=self.peer)
            if secured is None:
                return
            sock = self.sock = secured
            sock.settimeout(self.server.handshake_timeout_s)
            try:
                self.channel_id = read_handshake(sock)
            except (OSError, ValueError) as e:
                log.warning("bad handshake from %s: %s", self.peer, e)
                return
            sock.settimeout(None)
            channel = self.server._match(self)
            if channel is None:
                return
            self._read_frames(channel)
        finally:
            self.closed = True
            self.server._release(self)
            sock.close()

    def _announce_initial(self, channel: LocalChannel) -> None:
        self.granted = channel.capacity
        with self.send_lock:
            self.sock.sendall(HEADER.pack(FRAME_CREDIT, channel.capacity))

    def _read_frames(self, channel: LocalChannel) -> None:
        self.channel = channel
        try:
            channel.on_consumed = self._on_consumed
            self._announce_initial(channel)
            reader = self.sock.makefile("rb", buffering=_READ_BUFFER)
        except OSError as e:
            self._fail(channel, f"connection from producer {self.peer} failed: {e}")
            return
        read = reader.read
        unpack = HEADER.unpack
        gate = channel.gate
        cond = gate.cond
        queue = channel.queue
        costs = channel.costs
        capacity = channel.capacity
        ended = False
        continuing = False  # the previous frame was a fragment: this one continues its batch
        eop = bytes([END_OF_PARTITION_TAG])
        try:
            # hot path: one iteration per buffer received
            while True:
                head = read(HEADER_SIZE)
                if len(head) < HEADER_SIZE:
                    if not ended:
                        self._fail(channel, f"producer {self.peer} closed the connection before end of partition")
                    return
                kind, n = unpack(head)
                if kind == FRAME_PRIORITY:
                    if not self._read_priority(channel, read, n):
                        return
                    continue
                if kind != FRAME_ITEM and kind != FRAME_PART:
                    if kind == FRAME_CANCEL:
                        self._fail(channel, f"producer {self.peer} was cancelled", cancelled=True)
                    else:
                        self._fail(channel, f"protocol error: unknown frame kind {kind} from {self.peer}")
                    return
                if n > MAX_FRAME_BYTES or ended:
                    why = f"frame of {n} bytes" if not ended else "data after end of partition"
                    self._fail(channel, f"protocol error: {why} from {self.peer}")
                    return
                payload = read(n)
                if len(payload) < n:
                    self._fail(channel, f"producer {self.peer} closed the connection in the middle of a buffer")
                    return
                if kind == FRAME_ITEM:
                    item: object = payload
                    ended = not continuing and payload == eop
                    continuing = False
                else:
                    item = PartialBuffer(payload)
                    continuing = True
                with cond:
                    if channel.queued >= capacity:
                        # cannot happen with a correct producer: it sends only with credit
                        overflow = True
                    else:
                        overflow = False
                        queue.append(item)
                        costs.append(1)
                        channel.queued += 1
                        gate.pending += 1
                        self.received += 1
                        channel.bytes_received += n + 5  # payload and frame header
                        cond.notify_all()
                if overflow:
                    self._fail(channel, f"protocol error: {self.peer} sent beyond its {capacity} credits")
                    return
        except OSError as e:
            self._fail(channel, f"connection to producer {self.peer} lost: {e}")
        except Exception as e:  # noqa: BLE001 - a frame that does not decode fails the channel, with its cause
            self._fail(channel, f"cannot read a buffer from {self.peer}: {type(e).__name__}: {e}")
        finally:
            reader.close()

    def _read_priority(self, channel: LocalChannel, read: Any, n: int) -> bool:
        """An unaligned checkpoint barrier: decoded here (a fixed-size event, never a pickle) and put
        at the head of the queue without credit. False when the frame is not one (the channel failed)."""
        payload = read(n) if n == BARRIER_SIZE else b""
        if len(payload) != BARRIER_SIZE or payload[0] != CHECKPOINT_BARRIER_TAG:
            self._fail(channel, f"protocol error: a priority frame from {self.peer} is not a checkpoint barrier")
            return False
        barrier = deserialize_item(payload)
        with channel.gate.cond:
            channel.gate.insert_priority(channel, barrier)
        return True

    def _fail(self, channel: LocalChannel, reason: str, *, cancelled: bool = False) -> None:
        if self.forgotten:
            return
        gate = channel.gate
        with gate.cond:
            # one item past capacity at most: the connection ends here
            channel.queue.append(ChannelFailure(str(self.channel_id), reason, cancelled))
            channel.costs.append(0)
            gate.pending += 1
            gate.cond.notify_all()

    # hot path: called by the consumer task per buffer taken
    def _on_consumed(self) -> None:
        self.unannounced += 1
        # Announce right away while the producer is low on credit (it may be waiting); otherwise let
        # a few credits gather into one frame. The producer holds at most granted - received credits.
        if (self.granted - self.received) * 2 <= self.channel.capacity:  # type: ignore[union-attr]
            self._announce()

    def _announce(self) -> None:
        with self.send_lock:
            n = self.unannounced
            if n == 0 or self.closed:
                return
            self.unannounced = 0
            self.granted += n
            try:
                self.sock.sendall(HEADER.pack(FRAME_CREDIT, n))
            except OSError:
                pass  # the reader thread sees the broken connection and reports it
