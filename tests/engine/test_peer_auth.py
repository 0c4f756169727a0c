"""Peer authentication on the RPC and data ports (network/peer_auth.py) and the cluster secret
(network/cluster_secret.py).

The MACs are checked against the protocol written out here with hmac directly (the reference), the
refusals against real sockets: a wrong secret, an impostor server, a replay on the other port, a
truncated or stalled handshake; then the attack of issue 15 against running processes: a pickle
whose loading would create a marker file, sent to the JobManager's RPC port and to a data port before
(or instead of) authenticating. The marker must not exist afterwards and the processes keep serving.

Every test that starts processes points HOME at a temporary directory: the default secret file
(~/.strom/cluster-secret) is then created there, never in the real home.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import multiprocessing
import os
import pickle
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.runtime.network import peer_auth
from strom.runtime.network.channels import InputGate
from strom.runtime.network.cluster_secret import ENV_VAR, resolve_cluster_secret
from strom.runtime.network.data_server import DataServer
from strom.runtime.network.peer_auth import (
    DATA,
    HELLO,
    PROOF,
    RPC,
    VERDICT,
    NotAStromEndpoint,
    RefusalLog,
    SecretMismatch,
    accept_peer,
    accept_peer_async,
    authenticate_to_server,
    client_proof,
    judge_proof,
    server_hello,
)
from strom.runtime.network.tcp_channels import ChannelId, RemoteOutputChannel
from strom.runtime.network.tcp_protocol import FRAME_ITEM, HEADER, encode_handshake

from tests.engine.cluster_testing import ROOT, SessionCluster, wait_until

SECRET = b"the cluster secret of these tests"
OTHER = b"another cluster's secret, 32 byt"
DEADLINE_S = 20.0


def reference_mac(secret: bytes, label: bytes, first: bytes, second: bytes, purpose: bytes) -> bytes:
    """The protocol as written in the design: HMAC-SHA256(secret, label + nonce + nonce + purpose)."""
    return hmac.new(secret, label + first + second + purpose, hashlib.sha256).digest()


class Exploit:
    """Unpickling this creates `path`: what the attacker's frame would do if anything decoded it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


def exploit_frame(marker: Path) -> bytes:
    """One length-prefixed pickle frame, as the RPC port's framing (rpc.FramedSocket) reads them."""
    data = pickle.dumps(Exploit(marker), protocol=5)
    return struct.pack("!I", len(data)) + data


def read_until_closed(sock: socket.socket, timeout: float = DEADLINE_S) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(timeout)
    received = bytearray()
    while True:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return bytes(received)
        if not chunk:
            return bytes(received)
        received += chunk


def run_server(target: Callable[[socket.socket], Any]) -> tuple[socket.socket, list[Any], threading.Thread]:
    """A client socket connected to a thread running `target(server_socket)`; its result lands in the list."""
    client, server = socket.socketpair()
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(target(server)), daemon=True)
    t.start()
    return client, result, t


# -- the messages -------------------------------------------------------------------------------------
def test_proofs_are_the_hmacs_of_the_design():
    server_nonce, client_nonce = b"s" * 32, b"c" * 32
    proof = client_proof(SECRET, RPC, server_nonce, client_nonce)
    assert proof == client_nonce + reference_mac(SECRET, b"client", server_nonce, client_nonce, RPC)
    verdict = judge_proof(SECRET, RPC, server_nonce, proof)
    assert verdict == bytes([peer_auth.ACCEPTED]) + reference_mac(SECRET, b"server", client_nonce, server_nonce, RPC)
    assert HELLO.size == 41 and PROOF.size == 64 and VERDICT.size == 33  # fixed sizes: nothing is length-prefixed


def test_a_proof_made_with_another_secret_is_refused():
    nonce = os.urandom(32)
    assert judge_proof(SECRET, RPC, nonce, client_proof(OTHER, RPC, nonce, os.urandom(32))) is None


def test_a_proof_for_the_rpc_port_is_refused_on_a_data_port_and_the_other_way():
    nonce = os.urandom(32)
    for made_for, replayed_on in ((RPC, DATA), (DATA, RPC)):
        proof = client_proof(SECRET, made_for, nonce, os.urandom(32))
        assert judge_proof(SECRET, made_for, nonce, proof) is not None  # the transcript was valid there
        assert judge_proof(SECRET, replayed_on, nonce, proof) is None


def test_a_recorded_proof_is_refused_under_a_fresh_server_nonce():
    proof = client_proof(SECRET, RPC, os.urandom(32), os.urandom(32))
    assert judge_proof(SECRET, RPC, os.urandom(32), proof) is None


def test_the_servers_own_proof_is_not_a_client_proof():
    """Reflection: an impostor that echoes a server's MAC back as a proof gets nowhere."""
    server_nonce, client_nonce = os.urandom(32), os.urandom(32)
    verdict = judge_proof(SECRET, RPC, server_nonce, client_proof(SECRET, RPC, server_nonce, client_nonce))
    assert verdict is not None
    reflected = server_nonce + verdict[1:]
    assert judge_proof(SECRET, RPC, client_nonce, reflected) is None


# -- both sides over real sockets ---------------------------------------------------------------------
def test_the_same_secret_is_accepted_both_ways_and_frames_follow():
    client, result, t = run_server(lambda s: accept_peer(s, SECRET, DATA, peer="test") and s.recv(5))
    authenticate_to_server(client, SECRET, DATA)
    client.sendall(b"after")
    t.join(DEADLINE_S)
    assert result == [b"after"]


def test_a_client_with_another_secret_is_refused_and_told_so(caplog):
    client, result, t = run_server(lambda s: (accept_peer(s, SECRET, RPC, peer="test", refusals=RefusalLog()),
                                              s.close()))
    with caplog.at_level(logging.WARNING, logger="strom"), pytest.raises(SecretMismatch, match="secrets differ"):
        authenticate_to_server(client, OTHER, RPC)
    t.join(DEADLINE_S)
    assert result[0][0] is False
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and lines[0].exc_info is None
    assert "refused a connection to the RPC port from test: it did not prove it knows the cluster secret" in (
        lines[0].getMessage()
    )


def impostor(secret: bytes, received: bytearray) -> Callable[[socket.socket], None]:
    """A server without the cluster's secret: a well-formed hello, then 'accepted' with the MAC it can
    make, then it records whatever the client sends."""

    def serve(sock: socket.socket) -> None:
        sock.sendall(server_hello(os.urandom(32)))
        proof = sock.recv(PROOF.size, socket.MSG_WAITALL)
        received.extend(proof)
        sock.sendall(bytes([peer_auth.ACCEPTED]) + reference_mac(secret, b"server", proof[:32], b"?" * 32, DATA))
        sock.settimeout(2.0)
        try:
            while chunk := sock.recv(4096):
                received.extend(chunk)
        except OSError:
            pass

    return serve


def test_an_impostor_server_gets_nothing_but_the_proof_and_no_frame_is_accepted():
    received = bytearray()
    client, _, t = run_server(impostor(OTHER, received))
    with pytest.raises(SecretMismatch, match="did not prove"):
        authenticate_to_server(client, SECRET, DATA)
    client.close()
    t.join(DEADLINE_S)
    assert len(received) == PROOF.size  # the proof, and nothing after it


def test_a_producer_sends_no_handshake_or_record_to_an_impostor():
    received = bytearray()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept_one() -> None:
        sock, _ = listener.accept()
        with sock:
            impostor(OTHER, received)(sock)

    t = threading.Thread(target=accept_one, daemon=True)
    t.start()
    out = RemoteOutputChannel(ChannelId("job", 0, "a->b", 0, 0), "127.0.0.1", port, secret=SECRET)
    with pytest.raises(ConnectionError, match=f"cannot authenticate with the data server at 127.0.0.1:{port}"):
        out.put(([1, 2, 3], None, None))
    t.join(DEADLINE_S)
    listener.close()
    assert len(received) == PROOF.size


def test_a_server_that_is_not_strom_is_not_sent_a_proof():
    client, server = socket.socketpair()
    server.sendall(b"SSH-2.0-OpenSSH_9.6\r\n" + b"\0" * 20)
    with pytest.raises(NotAStromEndpoint):
        authenticate_to_server(client, SECRET, RPC)
    server.settimeout(0.2)
    with pytest.raises(TimeoutError):
        server.recv(1)  # nothing came from the client


def test_a_stalled_server_times_out_the_client():
    client, server = socket.socketpair()
    server.sendall(server_hello(os.urandom(32))[:10])  # a third of the hello, then silence
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        authenticate_to_server(client, SECRET, RPC, timeout=0.3)
    assert time.monotonic() - start < 3


@pytest.mark.parametrize("sent", [b"", b"x" * 10], ids=["nothing", "a truncated proof"])
def test_a_stalled_client_times_out_on_the_server(sent: bytes, caplog):
    client, result, t = run_server(lambda s: accept_peer(s, SECRET, DATA, peer="slow", timeout=0.3,
                                                         refusals=RefusalLog()))
    client.sendall(sent)
    with caplog.at_level(logging.WARNING, logger="strom"):
        t.join(DEADLINE_S)
    assert result == [False]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "refused a connection to the data port from slow: no complete peer-authentication answer within 0.3 s; "
        "nothing it sent was decoded"
    ]


def test_a_connect_and_close_probe_is_refused_quietly(caplog):
    client, result, t = run_server(lambda s: accept_peer(s, SECRET, DATA, peer="probe", refusals=RefusalLog()))
    with caplog.at_level(logging.INFO, logger="strom"):
        client.close()
        t.join(DEADLINE_S)
    assert result == [False]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_the_asyncio_server_accepts_the_blocking_client_and_refuses_another_secret():
    async def main() -> list[bool]:
        results: list[bool] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            results.append(await accept_peer_async(reader, writer, SECRET, RPC, refusals=RefusalLog()))
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        def client(secret: bytes) -> str:
            with socket.create_connection(("127.0.0.1", port)) as sock:
                try:
                    authenticate_to_server(sock, secret, RPC)
                    return "ok"
                except SecretMismatch:
                    return "refused"

        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, client, SECRET) == "ok"
        assert await loop.run_in_executor(None, client, OTHER) == "refused"
        server.close()
        return results

    assert asyncio.run(main()) == [True, False]


def test_the_asyncio_server_times_out_a_silent_client():
    async def main() -> bool:
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            done.set_result(await accept_peer_async(reader, writer, SECRET, RPC, timeout=0.3, refusals=RefusalLog()))
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        writer.write(b"\0\0\0\x10")  # a frame header, and then nothing
        result = await asyncio.wait_for(done, DEADLINE_S)
        writer.close()
        server.close()
        return result

    assert asyncio.run(main()) is False


def test_refusals_are_logged_at_most_once_per_interval_with_a_count():
    now = [0.0]
    log = RefusalLog(10.0, clock=lambda: now[0])
    assert [log.admit() for _ in range(4)] == [0, None, None, None]
    now[0] = 10.0
    assert log.admit() == 3  # the next line says how many were left out
    assert log.admit() is None


# -- the attack against a data server -----------------------------------------------------------------
def test_a_pickle_sent_to_a_data_port_without_authenticating_is_never_loaded(tmp_path: Path):
    """The data server expects the channel, so before peer authentication this frame was unpickled."""
    marker = tmp_path / "pwned"
    cid = ChannelId("job", 0, "a->b", 0, 0)
    gate = InputGate()
    channel = gate.add_channel(1, 4)
    with DataServer("127.0.0.1", 0, secret=SECRET) as server:
        port = server.start()
        server.expect(cid, channel)
        payload = pickle.dumps(Exploit(marker), protocol=5)
        for attack in (
            encode_handshake(cid) + HEADER.pack(FRAME_ITEM, len(payload)) + payload,  # the data protocol
            exploit_frame(marker),  # an RPC-style frame
            b"\0" * PROOF.size + encode_handshake(cid) + HEADER.pack(FRAME_ITEM, len(payload)) + payload,
        ):
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(attack)
                got = read_until_closed(sock)
            assert len(got) in (HELLO.size, HELLO.size + VERDICT.size)  # the hello (and a refusal), nothing more
        assert not marker.exists()
        assert len(channel.queue) == 0
        # the channel is still there for its real producer
        out = RemoteOutputChannel(cid, "127.0.0.1", port, secret=SECRET)
        out.put(([7], None, None))
        wait_until(lambda: len(channel.queue) == 1, DEADLINE_S, "the authenticated producer's buffer")
        out.close()


# -- the cluster secret ----------------------------------------------------------------------------------
def test_the_environment_wins_over_the_key_and_the_key_over_the_file(tmp_path: Path):
    config = Configuration({"security.cluster-secret": "from the configuration key",
                            "security.cluster-secret-file": str(tmp_path / "absent")})
    assert resolve_cluster_secret(config, environ={ENV_VAR: "from the environment variable"}) == (
        b"from the environment variable"
    )
    assert resolve_cluster_secret(config, environ={}) == b"from the configuration key"


def test_a_short_secret_is_an_error_naming_where_it_came_from(tmp_path: Path):
    with pytest.raises(ConfigError, match="the cluster secret from security.cluster-secret is 5 bytes; it must be at"):
        resolve_cluster_secret(Configuration({"security.cluster-secret": "short"}), environ={})
    with pytest.raises(ConfigError, match=f"from {ENV_VAR} is 3 bytes"):
        resolve_cluster_secret(Configuration(), environ={ENV_VAR: "abc"})
    short = tmp_path / "secret"
    short.write_text("tiny\n")
    with pytest.raises(ConfigError, match=f"from security.cluster-secret-file \\({short}\\) is 4 bytes"):
        resolve_cluster_secret(Configuration({"security.cluster-secret-file": str(short)}), environ={})


def test_a_named_secret_file_that_does_not_exist_is_an_error_not_created(tmp_path: Path):
    path = tmp_path / "cluster-secret"
    with pytest.raises(ConfigError, match="security.cluster-secret-file names .* which does not exist"):
        resolve_cluster_secret(Configuration({"security.cluster-secret-file": str(path)}), environ={})
    assert not path.exists()


def _resolve_in_child(home: str, queue: Any) -> None:
    os.environ["HOME"] = home
    os.environ.pop(ENV_VAR, None)
    queue.put(resolve_cluster_secret(Configuration()))


def test_the_default_secret_file_is_created_once_private_and_shared_by_racing_processes(tmp_path: Path):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    children = [ctx.Process(target=_resolve_in_child, args=(str(tmp_path), queue)) for _ in range(6)]
    for c in children:
        c.start()
    secrets = {queue.get(timeout=60) for _ in children}
    for c in children:
        c.join(10)
    path = tmp_path / ".strom" / "cluster-secret"
    assert secrets == {path.read_text().strip().encode()}
    assert len(path.read_text().strip()) == 64 and int(path.read_text(), 16) >= 0  # 32 random bytes as hex
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["cluster-secret"]  # no temporary file left


def test_the_mini_cluster_uses_a_secret_of_its_own_not_the_home_directory(tmp_path: Path, monkeypatch):
    from strom.runtime.minicluster import MiniCluster

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(ENV_VAR, raising=False)
    cluster = MiniCluster(Configuration())  # its JobManager resolved its secret already
    secret = cluster.child_env[ENV_VAR]  # what its TaskManagers get: not on their command line
    assert len(secret) == 64 and cluster._jmt.jm.secret == secret.encode()
    assert MiniCluster(Configuration()).child_env[ENV_VAR] != secret  # random per mini-cluster
    assert not (tmp_path / ".strom").exists()


def test_the_cluster_secret_is_not_part_of_a_jobs_configuration():
    from strom.runtime.jobmanager.job_configuration import effective_job_configuration

    cluster = Configuration({"security.cluster-secret": SECRET.decode(), "security.cluster-secret-file": "/etc/s",
                             "pipeline.name": "kept"})
    assert effective_job_configuration(cluster, None).to_dict() == {"pipeline.name": "kept"}


# -- running processes -----------------------------------------------------------------------------------
@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """HOME for the processes a test starts: their default secret file is created there."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(ENV_VAR, raising=False)
    yield tmp_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_pickles_sent_to_a_running_cluster_before_authenticating_run_no_code(home: Path):
    data_port = free_port()
    cluster = SessionCluster(taskmanagers=1, slots=1, extra=("-D", f"taskmanager.data.port={data_port}"))
    marker = home / "pwned"
    try:
        assert (home / ".strom" / "cluster-secret").exists()  # the JobManager and TaskManager share the cookie
        for port in (cluster.rpc_port, data_port):
            for prefix in (b"", b"\0" * PROOF.size):  # instead of the handshake, and after a forged proof
                with socket.create_connection(("127.0.0.1", port)) as sock:
                    sock.sendall(prefix + exploit_frame(marker))
                    got = read_until_closed(sock)
                assert got[: len(peer_auth.MAGIC)] == peer_auth.MAGIC  # what came back: the hello, then the close
        assert not marker.exists()
        overview = cluster.get("/overview")
        assert overview["taskmanagers"] == 1 and overview["slots-total"] == 1
    finally:
        cluster.close()
    assert not marker.exists()


def test_a_taskmanager_with_another_secret_exits_with_one_line(home: Path):
    cluster = SessionCluster(taskmanagers=0, slots=1)
    try:
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "runtime-image"), **{ENV_VAR: OTHER.decode()})
        done = subprocess.run(
            [sys.executable, "-m", "strom.cli", "taskmanager", "--jobmanager", f"127.0.0.1:{cluster.rpc_port}",
             "-D", "metrics.reporter.prom.port=0", "--log-level", "ERROR"],
            capture_output=True, text=True, env=env, timeout=60,
        )
        assert done.returncode != 0
        assert done.stderr.strip().splitlines()[-1] == (
            f"strom: error: TaskManager could not authenticate with JobManager 127.0.0.1:{cluster.rpc_port}: the "
            "cluster secrets differ; give every process the same security.cluster-secret (or STROM_CLUSTER_SECRET, "
            "or the same security.cluster-secret-file)"
        )
        assert "Traceback" not in done.stderr
        assert cluster.get("/overview")["taskmanagers"] == 0
    finally:
        cluster.close()
