"""`SocketTextSource`: the text stream behind `env.socket_text_stream` (Flink's SocketTextStreamFunction).

Connects to a TCP server, decodes UTF-8, splits on the delimiter (dropping a '\\r'
before '\\n' when the delimiter is '\\n'), and ends when the server closes the
connection. After a close (or a failed reconnect) it waits `RETRY_DELAY_S` and
reconnects, `max_retry` times in all (-1: forever); a connection failure with no
retry left fails the job. Sockets are non-blocking and waits are bounded, so poll()
never blocks longer than ~50 ms and cancel() takes effect within that.
"""

from __future__ import annotations

import codecs
import errno
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext

RETRY_DELAY_S = 0.5  # Flink's DEFAULT_CONNECTION_RETRY_SLEEP
_MAX_POLL_WAIT_S = 0.05
_RECV_BYTES = 65536


class DelimitedTextDecoder:
    """Bytes in, complete delimited records out; keeps the unfinished tail. Pure, no I/O."""

    def __init__(self, delimiter: str) -> None:
        if not delimiter:
            raise ValueError("socket_text_stream: the delimiter must not be empty")
        self._delimiter = delimiter
        self._strip_cr = delimiter == "\n"
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail = ""

    def feed(self, data: bytes) -> list[str]:
        text = self._tail + self._decoder.decode(data)
        parts = text.split(self._delimiter)
        self._tail = parts.pop()
        if self._strip_cr:
            return [p[:-1] if p.endswith("\r") else p for p in parts]
        return parts

    def finish(self) -> list[str]:
        """The end of the stream: whatever is left is the last record, as Flink emits it."""
        rest = self._tail + self._decoder.decode(b"", final=True)
        self._tail = ""
        return [rest] if rest else []


class SocketTextReader(SourceReader):
    def __init__(
        self, hostname: str, port: int, delimiter: str, max_retry: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._address = (hostname, port)
        self._decoder = DelimitedTextDecoder(delimiter)
        self._max_retry = max_retry
        self._clock = clock
        self._attempts = 0
        self._sock: socket.socket | None = None
        self._connected = False
        self._retry_at: float | None = None  # set while waiting to reconnect
        self._ended = False
        self._backlog: list[str] = []  # decoded records beyond what the last poll could take
        self._cancelled = threading.Event()

    # -- connection ---------------------------------------------------------------------------
    def _start_connect(self) -> None:
        family, type_, proto, _, addr = socket.getaddrinfo(*self._address, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, type_, proto)
        sock.setblocking(False)
        err = sock.connect_ex(addr)
        if err not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            sock.close()
            raise ConnectionError(self._connect_error(err))
        self._sock = sock
        self._connected = err == 0

    def _finish_connect(self) -> bool:
        """Wait up to the poll limit for the pending connect; True once connected."""
        assert self._sock is not None
        _, writable, _ = select.select([], [self._sock], [], _MAX_POLL_WAIT_S)
        if not writable:
            return False
        err = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self._drop_socket()
            raise ConnectionError(self._connect_error(err))
        self._connected = True
        return True

    def _connect_error(self, err: int) -> str:
        host, port = self._address
        return f"socket text stream: could not connect to {host}:{port}: {os.strerror(err)}"

    def _drop_socket(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._connected = False

    def _connection_lost(self) -> bool:
        """The server closed the connection or a reconnect failed: schedule a retry if any is left.
        True if a retry is scheduled."""
        self._drop_socket()
        self._attempts += 1
        if self._max_retry == -1 or self._attempts <= self._max_retry:
            self._retry_at = self._clock() + RETRY_DELAY_S
            return True
        return False

    # -- reading ------------------------------------------------------------------------------
    def poll(self, max_records: int) -> list[Any] | None:
        if self._backlog:
            batch, self._backlog = self._backlog[:max_records], self._backlog[max_records:]
            return batch
        if self._ended:
            return None
        if self._cancelled.is_set():
            return []
        if self._retry_at is not None:
            wait = self._retry_at - self._clock()
            if wait > 0:
                self._cancelled.wait(min(wait, _MAX_POLL_WAIT_S))
                return []
            self._retry_at = None
        try:
            if self._sock is None:
                self._start_connect()
            if not self._connected and not self._finish_connect():
                return []
        except ConnectionError:
            if self._attempts == 0 or not self._connection_lost():
                raise  # the first connection fails the job, as in Flink; so does the last retry
            return []
        records = self._read()
        if records is not None and len(records) > max_records:
            records, self._backlog = records[:max_records], records[max_records:]
        return records

    def _read(self) -> list[Any] | None:
        sock = self._sock
        assert sock is not None
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            # Wait for data, then report "nothing available": the task counts such a poll as idle, so
            # a quiet socket is idle time; the next poll reads what arrived.
            select.select([sock], [], [], _MAX_POLL_WAIT_S)
            return []
        try:
            data = sock.recv(_RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            data = b""  # a reset connection ends like a closed one
        if data:
            return self._decoder.feed(data)
        if self._connection_lost():
            return []
        self._ended = True
        rest = self._decoder.finish()
        return rest or None

    def cancel(self) -> None:
        self._cancelled.set()
        sock = self._sock
        if sock is not None:
            # Wakes a select() on it in the task thread; the task thread closes it.
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._drop_socket()


class SocketTextSource(Source):
    name = "Socket Stream"

    def __init__(self, hostname: str, port: int, delimiter: str = "\n", max_retry: int = 0) -> None:
        if max_retry < -1:
            raise ValueError(f"socket_text_stream: max_retry must be >= -1 (-1 = forever), got {max_retry}")
        DelimitedTextDecoder(delimiter)  # validates the delimiter when the job is built
        self.hostname = hostname
        self.port = port
        self.delimiter = delimiter
        self.max_retry = max_retry

    def get_boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED

    @property
    def max_parallelism(self) -> int | None:
        return 1

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        return SocketTextReader(self.hostname, self.port, self.delimiter, self.max_retry)
