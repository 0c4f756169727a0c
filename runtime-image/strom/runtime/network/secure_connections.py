"""Securing an RPC or data connection: TLS (when `security.ssl.internal.enabled`), then peer authentication.

The order on every connection, accepted or opened, blocking or on the event loop:

1. TLS handshake with mutual authentication (`strom.common.tls.InternalTls`): a peer without a
   certificate from the cluster's CA, or one that speaks plain text, fails here and the connection
   is closed; OpenSSL has then decoded only TLS handshake records, nothing of ours.
2. The cluster-secret HMAC challenge (`peer_auth`) inside the TLS channel, before the first frame.

The secret stays a second factor under TLS, where Flink relies on mTLS alone: a leaked pod
certificate is not enough to submit frames to another FlinkJob's cluster (each has its own secret
but may share an issuer), and in TLS 1.3 a client learns that the server refused its certificate
only at its first read, so the HMAC exchange is also where a refusal surfaces, at connect time and
with a clear message, rather than at a later frame. It costs one round trip per connection.

Failures are logged like peer authentication's: one rate-limited WARNING line per refusal; a peer
that connects and closes without a byte (the JobManager's reachability probe of a data port, a TCP
health check) only at DEBUG.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Iterable
from typing import Any

from strom.common.tls import InternalTls
from strom.common.tls_options import INTERNAL_ENABLED
from strom.runtime.network.peer_auth import (
    _PORT_NAMES,
    HANDSHAKE_TIMEOUT_S,
    REFUSALS,
    ClosedBeforeHello,
    RefusalLog,
    accept_peer,
    accept_peer_async,
    authenticate_to_server,
)

log = logging.getLogger("strom.runtime.network.peer_auth")


class TlsRefused(ConnectionError):
    """The server closed the TLS session right after the handshake: it did not accept this process's
    certificate (a certificate of another CA, or none)."""


class StromSSLSocket(ssl.SSLSocket):
    """An SSLSocket the channel code can treat as a plain socket: `sendmsg` (refused by CPython's
    SSLSocket) sends the buffers as one TLS write, and `shutdown` keeps the TLS session (CPython's
    drops it, after which `recv` would return raw TLS records: a producer half-closes after its
    last frame and still reads the consumer's credits)."""

    def sendmsg(self, buffers: Iterable[Any], *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
        data = b"".join(buffers)
        self.sendall(data)
        return len(data)

    def shutdown(self, how: int) -> None:
        self._checkClosed()  # type: ignore[attr-defined]
        socket.socket.shutdown(self, how)


def _quiet(e: BaseException) -> bool:
    """A peer that went away without a handshake (probe, health check), not one that tried and failed."""
    return isinstance(e, ssl.SSLEOFError | ssl.SSLZeroReturnError | ConnectionResetError | BrokenPipeError)


def _why(e: BaseException) -> str:
    reason = getattr(e, "reason", None) or type(e).__name__
    return (
        f"TLS handshake failed ({reason}): it has no certificate the cluster's CA signed "
        "(security.ssl.internal.*), or it does not speak TLS"
    )


# -- blocking sockets -----------------------------------------------------------------------------
def connect_tls(sock: socket.socket, tls: InternalTls, *, timeout: float = HANDSHAKE_TIMEOUT_S) -> ssl.SSLSocket:
    """The client side of the TLS handshake on a connected socket; ssl.SSLError (an OSError) when it
    fails. The returned socket replaces `sock` (which is detached)."""
    tls.client.sslsocket_class = StromSSLSocket
    previous = sock.gettimeout()
    secured = tls.client.wrap_socket(sock, do_handshake_on_connect=False)
    try:
        secured.settimeout(timeout)
        secured.do_handshake()
        secured.settimeout(previous)
    except BaseException:
        secured.close()
        raise
    return secured


def secure_connect(
    sock: socket.socket, *, secret: bytes, tls: InternalTls | None, purpose: bytes
) -> socket.socket:
    """TLS (if configured), then prove the cluster secret: the socket to send frames on. Raises
    ssl.SSLError, TlsRefused (our certificate was not accepted), PeerAuthError or OSError; `sock` is
    closed on failure."""
    secured: socket.socket = sock
    port = _PORT_NAMES[purpose]
    try:
        if tls is not None:
            secured = connect_tls(sock, tls)
        authenticate_to_server(secured, secret, purpose)
    except ssl.SSLError as e:
        secured.close()
        if "WRONG_VERSION_NUMBER" not in str(e.reason):
            raise
        raise ConnectionError(
            f"the {port} port does not speak TLS ({e.reason}): set {INTERNAL_ENABLED.key} on every process or none"
        ) from e
    except TimeoutError as e:
        secured.close()
        if tls is not None:
            raise
        # a TLS server waits for a ClientHello as this process waits for the hello: say what may be wrong
        raise TimeoutError(f"{e}; if the peer requires TLS, set {INTERNAL_ENABLED.key} here too") from e
    except ClosedBeforeHello as e:
        secured.close()
        if tls is None:
            # a TLS server waits for a ClientHello and gives up: say so rather than only "it closed"
            raise ClosedBeforeHello(f"{e}; if the peer requires TLS, set {INTERNAL_ENABLED.key} here too") from e
        raise TlsRefused(
            f"the {port} port closed the connection after the TLS handshake: it does not accept "
            "this process's certificate (is it signed by a CA in the peer's security.ssl.internal.truststore?)"
        ) from e
    except BaseException:
        secured.close()
        raise
    return secured


def accept_tls(
    sock: socket.socket,
    tls: InternalTls,
    purpose: bytes,
    *,
    peer: str,
    timeout: float = HANDSHAKE_TIMEOUT_S,
    refusals: RefusalLog = REFUSALS,
) -> ssl.SSLSocket | None:
    """The server side of the TLS handshake: the secured socket, or None after logging why (the
    connection is closed; `sock` is detached either way)."""
    tls.server.sslsocket_class = StromSSLSocket
    previous = sock.gettimeout()
    try:
        secured = tls.server.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    except OSError as e:
        log.debug("connection from %s to the %s port ended before TLS: %s", peer, _PORT_NAMES[purpose], e)
        sock.close()
        return None
    try:
        secured.settimeout(timeout)
        secured.do_handshake()
        secured.settimeout(previous)
        return secured
    except TimeoutError:
        refusals.refused(purpose, peer, f"no complete TLS handshake within {timeout:g} s")
    except OSError as e:
        if _quiet(e):
            log.debug("connection from %s to the %s port closed before TLS: %s", peer, _PORT_NAMES[purpose], e)
        elif isinstance(e, ssl.SSLError):
            refusals.refused(purpose, peer, _why(e))
        else:
            log.debug("connection from %s to the %s port ended during TLS: %s", peer, _PORT_NAMES[purpose], e)
    secured.close()
    return None


def secure_accept(
    sock: socket.socket,
    *,
    secret: bytes,
    tls: InternalTls | None,
    purpose: bytes,
    peer: str,
    refusals: RefusalLog = REFUSALS,
) -> socket.socket | None:
    """TLS (if configured), then the peer's proof of the cluster secret: the socket to read frames
    from, or None (logged; the caller closes what it holds, which may be `sock` or nothing)."""
    secured: socket.socket | None = sock
    if tls is not None:
        secured = accept_tls(sock, tls, purpose, peer=peer, refusals=refusals)
        if secured is None:
            return None
    if not accept_peer(secured, secret, purpose, peer=peer, refusals=refusals):
        secured.close()
        return None
    return secured


# -- asyncio streams (the JobManager) -------------------------------------------------------------
async def secure_accept_async(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    secret: bytes,
    tls: InternalTls | None,
    purpose: bytes,
    timeout: float = HANDSHAKE_TIMEOUT_S,
    refusals: RefusalLog = REFUSALS,
) -> bool:
    """`secure_accept` on an event loop: the stream is upgraded to TLS in place (the handler runs
    before any byte was read from it), then the peer proves the cluster secret. False after
    logging why; the caller closes the writer."""
    if tls is not None:
        address = writer.get_extra_info("peername")
        peer = f"{address[0]}:{address[1]}" if address else "an unknown peer"
        try:
            await writer.start_tls(tls.server, ssl_handshake_timeout=timeout)
        except (TimeoutError, ConnectionAbortedError):  # asyncio aborts a slow handshake with the latter
            refusals.refused(purpose, peer, f"no complete TLS handshake within {timeout:g} s")
            return False
        except OSError as e:
            if _quiet(e) or not isinstance(e, ssl.SSLError):
                log.debug("connection from %s to the %s port ended before TLS: %s", peer, _PORT_NAMES[purpose], e)
            else:
                refusals.refused(purpose, peer, _why(e))
            return False
    return await accept_peer_async(reader, writer, secret, purpose, timeout=timeout, refusals=refusals)
