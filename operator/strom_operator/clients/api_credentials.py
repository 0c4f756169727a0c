"""How the operator's API client authenticates: from kopf's ConnectionInfo, and kept fresh.

Credentials expire: EKS/GKE exec plugins mint tokens for minutes, a pod's projected ServiceAccount
token is rotated by the kubelet (the file changes, the old token stops working within the hour).
So the client keeps what it needs to renew them: a `TokenFile` that is re-read when the file
changes (cheap: one stat per request), and a login function that re-runs the operator's login
(handlers.obtain_credentials: the kubernetes client's loaders run the exec plugin again, re-read the
kubeconfig or the in-cluster token) when the server answers 401 anyway.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

# Where the kubelet mounts (and rotates) a pod's ServiceAccount token.
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"

# Re-runs the login; returns a kopf.ConnectionInfo (or anything with its attributes).
Relogin = Callable[[], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request needs: the server, the Authorization header, the TLS context."""

    server: str
    authorization: str | None
    ssl_context: ssl.SSLContext | bool | None

    @classmethod
    def of(cls, info: Any) -> Credentials:
        """From a `kopf.ConnectionInfo` (what kopf's login handlers return)."""
        authorization = None
        if info.token:
            authorization = f"{info.scheme or 'Bearer'} {info.token}"
        elif info.username and info.password:
            raw = f"{info.username}:{info.password}".encode()
            authorization = "Basic " + base64.b64encode(raw).decode()
        context: ssl.SSLContext | bool | None = None
        if str(info.server).startswith("https"):
            if info.insecure:
                context = False
            else:
                context = ssl.create_default_context(cafile=_path(info.ca_path), cadata=_text(info.ca_data))
            cert = _file(info.certificate_path, info.certificate_data)
            key = _file(info.private_key_path, info.private_key_data)
            if cert and isinstance(context, ssl.SSLContext):
                context.load_cert_chain(cert, key)
        return cls(str(info.server).rstrip("/"), authorization, context)


class TokenFile:
    """A bearer token kept in a file that is replaced when it rotates (projected tokens)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._signature: tuple[int, int, int] | None = None

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)  # follows the kubelet's ..data symlink swap
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def changed_token(self) -> str | None:
        """The token when the file changed since the last call (or on the first call), else None."""
        signature = self._stat()
        if signature is None or signature == self._signature:
            return None
        try:
            with open(self.path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError:
            return None
        self._signature = signature
        return token or None


def token_file_of(info: Any, candidates: tuple[str, ...] = (SERVICE_ACCOUNT_TOKEN,)) -> str | None:
    """The file the login's token was read from, when it is one of `candidates` (so it can be
    re-read when it rotates); None for tokens from elsewhere (exec plugins, kubeconfig)."""
    token = getattr(info, "token", None)
    if not token:
        return None
    for path in candidates:
        try:
            with open(path, encoding="utf-8") as f:
                if f.read().strip() == token:
                    return path
        except OSError:
            continue
    return None


def _path(p: Any) -> str | None:
    return None if p is None else (p.decode() if isinstance(p, bytes) else str(p))


def _text(d: Any) -> str | None:
    if d is None:
        return None
    raw = d if isinstance(d, bytes) else d.encode()
    try:  # kubeconfig's *-data fields are base64 of the PEM text
        decoded = base64.b64decode(raw, validate=True)
        if b"-----BEGIN" in decoded:
            return decoded.decode()
    except ValueError:
        pass
    return raw.decode()


def _file(path: Any, data: Any) -> str | None:
    """ssl wants files for client certificates: inline data goes to a private temporary file."""
    if path is not None:
        return _path(path)
    text = _text(data)
    if text is None:
        return None
    f = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)  # noqa: SIM115 - lives with the process
    with f:
        f.write(text)
    return f.name
