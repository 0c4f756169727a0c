"""Peer authentication: the one place that decides whether a peer on an RPC or data port may talk.

Every connection to the JobManager's RPC port and to a slot's data port starts with a mutual
HMAC-SHA256 challenge-response over the cluster secret (`cluster_secret.py`), before the first byte
of the port's own protocol, so nothing from an unauthenticated peer is ever unpickled:

  server -> client   HELLO    MAGIC, VERSION, server nonce (32 random bytes)
  client -> server   PROOF    client nonce, HMAC(secret, b"client" + server nonce + client nonce + purpose)
  server -> client   VERDICT  ACCEPTED + HMAC(secret, b"server" + client nonce + server nonce + purpose),
                              or REFUSED (then the server closes)

The client sends its proof only to a server whose hello looks right, and sends or accepts no frame
until the server's own proof checks out, so a server without the secret learns nothing it can use
and gets nothing to decode. `purpose` (RPC or DATA) is in both MACs: a transcript of one cannot be
replayed on the other; fresh nonces on both sides stop replays on the same port. Every message has a
fixed size, read with a deadline (`HANDSHAKE_TIMEOUT_S`); a peer that fails is logged at most once
per `WARN_INTERVAL_S` on one line. A peer that closes before sending anything is only logged at
DEBUG: that is the JobManager's reachability probe of a data port (or a TCP health check).

The messages are built and judged by pure functions; `authenticate_to_server`, `accept_peer`
(blocking sockets: TaskManager, data servers, producers) and `accept_peer_async` (the JobManager's
event loop) only move their bytes.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable

log = logging.getLogger("strom.runtime.network.peer_auth")

MAGIC = b"STRMAUTH"
VERSION = 1
NONCE_BYTES = 32
HANDSHAKE_TIMEOUT_S = 5.0
WARN_INTERVAL_S = 10.0

RPC = b"strom-rpc"
DATA = b"strom-data"
_PORT_NAMES = {RPC: "RPC", DATA: "data"}

ACCEPTED, REFUSED = 1, 2

HELLO = struct.Struct(f"!{len(MAGIC)}sB{NONCE_BYTES}s")
PROOF = struct.Struct(f"!{NONCE_BYTES}s32s")
VERDICT = struct.Struct("!B32s")

_SECRETS_DIFFER = "the cluster secrets differ"


class PeerAuthError(ConnectionError):
    """The handshake failed; the message is one line (no errno: it is not the network's fault)."""


class NotAStromEndpoint(PeerAuthError):
    """The server's hello is not a Strom peer-authentication hello of this version."""


class SecretMismatch(PeerAuthError):
    """The server refused this process's proof, or could not prove the secret itself."""


# -- the messages (pure) -------------------------------------------------------------------------
def new_nonce() -> bytes:
    return os.urandom(NONCE_BYTES)


def _mac(secret: bytes, label: bytes, first: bytes, second: bytes, purpose: bytes) -> bytes:
    return hmac.new(secret, label + first + second + purpose, hashlib.sha256).digest()


def server_hello(server_nonce: bytes) -> bytes:
    return HELLO.pack(MAGIC, VERSION, server_nonce)


def parse_server_hello(hello: bytes) -> bytes:
    """The server nonce of a hello; NotAStromEndpoint when it is not one this process speaks."""
    magic, version, nonce = HELLO.unpack(hello)
    if magic != MAGIC:
        raise NotAStromEndpoint(f"not a Strom endpoint (it greeted with {magic!r})")
    if version != VERSION:
        raise NotAStromEndpoint(f"peer authentication version {version}, this process speaks {VERSION}")
    return bytes(nonce)


def client_proof(secret: bytes, purpose: bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    return PROOF.pack(client_nonce, _mac(secret, b"client", server_nonce, client_nonce, purpose))


def judge_proof(secret: bytes, purpose: bytes, server_nonce: bytes, proof: bytes) -> bytes | None:
    """The server's verdict: ACCEPTED with its own proof when the client's proof is right for this
    secret, purpose and server nonce; None when it is not (send `refusal()` and close)."""
    client_nonce, mac = PROOF.unpack(proof)
    if not hmac.compare_digest(mac, _mac(secret, b"client", server_nonce, client_nonce, purpose)):
        return None
    return VERDICT.pack(ACCEPTED, _mac(secret, b"server", client_nonce, server_nonce, purpose))


def refusal() -> bytes:
    return VERDICT.pack(REFUSED, bytes(32))


def check_verdict(secret: bytes, purpose: bytes, server_nonce: bytes, client_nonce: bytes, verdict: bytes) -> None:
    """Raise SecretMismatch unless the server accepted and proved it knows the secret."""
    status, mac = VERDICT.unpack(verdict)
    if status == REFUSED:
        raise SecretMismatch(f"{_SECRETS_DIFFER} (the server refused this process's proof)")
    expected = _mac(secret, b"server", client_nonce, server_nonce, purpose)
    if status != ACCEPTED or not hmac.compare_digest(mac, expected):
        raise SecretMismatch(f"{_SECRETS_DIFFER} (the server did not prove it knows this process's secret)")


# -- refusal log ------------------------------------------------------------------------------------
class RefusalLog:
    """At most one WARNING per `interval_s`; the next one counts those left out in between. A flood
    of bad connections costs a line every few seconds, not a line (or a traceback) each."""

    def __init__(self, interval_s: float = WARN_INTERVAL_S, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self._suppressed = 0

    def admit(self) -> int | None:
        """How many refusals were left out since the last line, or None to leave this one out too."""
        with self._lock:
            now = self.clock()
            if self._last is not None and now - self._last < self.interval_s:
                self._suppressed += 1
                return None
            self._last, left_out, self._suppressed = now, self._suppressed, 0
            return left_out

    def refused(self, purpose: bytes, peer: str, reason: str) -> None:
        left_out = self.admit()
        if left_out is None:
            return
        more = f" ({left_out} more refused since the last such line)" if left_out else ""
        log.warning(
            "refused a connection to the %s port from %s: %s; nothing it sent was decoded%s",
            _PORT_NAMES.get(purpose, purpose.decode(errors="replace")),
            peer,
            reason,
            more,
        )


REFUSALS = RefusalLog()


class ClosedBeforeHello(ConnectionError):
    """The server closed without sending its hello. Over TLS that is its verdict on this process's
    certificate (TLS 1.3 tells a client only after its handshake completed; a server that accepted it
    sends the hello at once)."""


class _ClosedEarly(Exception):
    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


# -- blocking sockets -----------------------------------------------------------------------------
def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        sock.settimeout(remaining)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise _ClosedEarly(len(buf))
        buf += chunk
    return bytes(buf)


def authenticate_to_server(
    sock: socket.socket, secret: bytes, purpose: bytes, *, timeout: float = HANDSHAKE_TIMEOUT_S
) -> None:
    """The client's side, on a connected socket: returns once both sides proved the secret (the
    socket's timeout restored); raises PeerAuthError (NotAStromEndpoint, SecretMismatch) or an
    OSError (TimeoutError, ConnectionError) otherwise. Nothing but the proof is sent before."""
    previous = sock.gettimeout()
    deadline = time.monotonic() + timeout
    try:
        server_nonce = parse_server_hello(_recv_exact(sock, HELLO.size, deadline))
        client_nonce = new_nonce()
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(client_proof(secret, purpose, server_nonce, client_nonce))
        verdict = _recv_exact(sock, VERDICT.size, deadline)
    except TimeoutError:
        raise TimeoutError(f"no complete peer-authentication answer within {timeout:g} s") from None
    except _ClosedEarly as e:
        why = f"the server closed the connection during peer authentication (after {e.received} bytes)"
        raise (ClosedBeforeHello if e.received == 0 else ConnectionError)(why) from None
    check_verdict(secret, purpose, server_nonce, client_nonce, verdict)
    sock.settimeout(previous)


def accept_peer(
    sock: socket.socket,
    secret: bytes,
    purpose: bytes,
    *,
    peer: str,
    timeout: float = HANDSHAKE_TIMEOUT_S,
    refusals: RefusalLog = REFUSALS,
) -> bool:
    """The server's side, on an accepted socket: True once both sides proved the secret (the
    socket's timeout restored), False after logging why (the caller closes the socket)."""
    previous = sock.gettimeout()
    deadline = time.monotonic() + timeout
    server_nonce = new_nonce()
    try:
        sock.settimeout(timeout)
        sock.sendall(server_hello(server_nonce))
        proof = _recv_exact(sock, PROOF.size, deadline)
        verdict = judge_proof(secret, purpose, server_nonce, proof)
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(verdict if verdict is not None else refusal())
    except TimeoutError:
        refusals.refused(purpose, peer, f"no complete peer-authentication answer within {timeout:g} s")
        return False
    except _ClosedEarly as e:
        _closed_early(purpose, peer, e.received, refusals)
        return False
    except OSError as e:
        log.debug("connection from %s to the %s port ended during authentication: %s", peer, _PORT_NAMES[purpose], e)
        return False
    if verdict is None:
        refusals.refused(purpose, peer, _not_proved())
        return False
    sock.settimeout(previous)
    return True


def _closed_early(purpose: bytes, peer: str, received: int, refusals: RefusalLog) -> None:
    if received == 0:
        # a reachability probe or a TCP health check: connected, closed, sent nothing
        log.debug("connection from %s to the %s port closed before authenticating", peer, _PORT_NAMES[purpose])
    else:
        refusals.refused(purpose, peer, f"it closed the connection in the middle of authenticating ({received} bytes)")


def _not_proved() -> str:
    return (
        "it did not prove it knows the cluster secret (a process with another security.cluster-secret, "
        "or not a Strom process)"
    )


# -- asyncio streams (the JobManager) -------------------------------------------------------------
async def accept_peer_async(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    secret: bytes,
    purpose: bytes,
    *,
    timeout: float = HANDSHAKE_TIMEOUT_S,
    refusals: RefusalLog = REFUSALS,
) -> bool:
    """`accept_peer` on an event loop: True once both sides proved the secret, False after logging
    why (the caller closes the writer). Never blocks the loop; bounded by `timeout` in all."""
    address = writer.get_extra_info("peername")
    peer = f"{address[0]}:{address[1]}" if address else "an unknown peer"
    server_nonce = new_nonce()

    async def exchange() -> bytes | None:
        writer.write(server_hello(server_nonce))
        await writer.drain()
        proof = await reader.readexactly(PROOF.size)
        verdict = judge_proof(secret, purpose, server_nonce, proof)
        writer.write(verdict if verdict is not None else refusal())
        await writer.drain()
        return verdict

    try:
        verdict = await asyncio.wait_for(exchange(), timeout)
    except TimeoutError:
        refusals.refused(purpose, peer, f"no complete peer-authentication answer within {timeout:g} s")
        return False
    except asyncio.IncompleteReadError as e:
        _closed_early(purpose, peer, len(e.partial), refusals)
        return False
    except OSError as e:
        log.debug("connection from %s to the %s port ended during authentication: %s", peer, _PORT_NAMES[purpose], e)
        return False
    if verdict is None:
        refusals.refused(purpose, peer, _not_proved())
        return False
    return True
