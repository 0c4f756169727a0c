"""socket_text_stream against a test server on 127.0.0.1 (port 0)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest
from strom.connectors import socket as socket_connector
from strom.connectors.base import SourceReaderContext
from strom.connectors.socket import DelimitedTextDecoder, SocketTextSource
from strom.datastream import StreamExecutionEnvironment
from strom.runtime.local_executor import JobExecutionError
from strom.testing import collect

from .connector_testing import wait_until


class LineServer:
    """Accepts connections one after another; `serve(conn, i)` talks on the i-th."""

    def __init__(self, serve: Callable[[socket.socket, int], None], connections: int = 1) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self._serve = serve
        self._connections = connections
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with self.listener:
            for i in range(self._connections):
                conn, _ = self.listener.accept()
                self.accepted += 1
                with conn:
                    self._serve(conn, i)


def send_and_close(*chunks: bytes) -> Callable[[socket.socket, int], None]:
    def serve(conn: socket.socket, i: int) -> None:
        for c in chunks:
            conn.sendall(c)

    return serve


def test_lines_are_split_on_newline_and_the_stream_ends_when_the_server_closes():
    server = LineServer(send_and_close(b"alpha\nbe", b"ta\r\ngamma\n", b"tail-without-newline"))
    env = StreamExecutionEnvironment.get_execution_environment()
    got = collect(env.socket_text_stream("127.0.0.1", server.port))
    assert got == ["alpha", "beta", "gamma", "tail-without-newline"]


def test_custom_delimiter_and_multibyte_characters_split_across_packets():
    euro = "€".encode()
    server = LineServer(send_and_close(b"a;" + euro[:1], euro[1:] + b";c;"))
    env = StreamExecutionEnvironment.get_execution_environment()
    assert collect(env.socket_text_stream("127.0.0.1", server.port, delimiter=";")) == ["a", "€", "c"]


def test_reconnects_max_retry_times_after_the_server_closes(monkeypatch):
    monkeypatch.setattr(socket_connector, "RETRY_DELAY_S", 0.01)

    def serve(conn: socket.socket, i: int) -> None:
        conn.sendall(f"connection-{i}\n".encode())

    server = LineServer(serve, connections=3)
    env = StreamExecutionEnvironment.get_execution_environment()
    got = collect(env.socket_text_stream("127.0.0.1", server.port, max_retry=2))
    assert got == ["connection-0", "connection-1", "connection-2"]


def test_a_refused_connection_without_retries_fails_the_job_naming_the_address():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(JobExecutionError, match=f"127.0.0.1:{port}"):
        collect(env.socket_text_stream("127.0.0.1", port))


def test_poll_returns_promptly_while_the_server_is_silent_and_cancel_unblocks_it():
    release = threading.Event()
    server = LineServer(lambda conn, i: release.wait(10))
    reader = SocketTextSource("127.0.0.1", server.port).create_reader(SourceReaderContext(0, 1))
    try:
        wait_until(lambda: reader.poll(10) == [] and server.accepted == 1, what="connection")
        started = time.monotonic()
        assert reader.poll(10) == []
        assert time.monotonic() - started < 1.0  # bounded wait (~50 ms), not a blocking read
        reader.cancel()
        assert reader.poll(10) == []
    finally:
        release.set()
        reader.close()


def test_decoder_keeps_the_unfinished_tail_until_more_bytes_arrive():
    d = DelimitedTextDecoder("||")
    assert d.feed(b"a||b|") == ["a"]
    assert d.feed(b"|c") == ["b"]
    assert d.finish() == ["c"]
    with pytest.raises(ValueError, match="delimiter"):
        DelimitedTextDecoder("")
