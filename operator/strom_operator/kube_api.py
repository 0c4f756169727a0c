"""The few Kubernetes API calls the operator makes, over aiohttp with kopf's credentials.

Kopf logs in (kubeconfig, in-cluster service account, or the `kubernetes` client's loaders) and
hands over a `kopf.ConnectionInfo`; the same credentials serve these calls, so the operator has
one way to the API and no thread pool. Objects are plain dicts. `apply` creates an object or
merge-patches it to the desired state; lists are replaced whole by a merge patch, which is what
the operator's own objects want (it owns every field it sets).
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import aiohttp

DEFAULT_TIMEOUT_S = 15.0
MERGE_PATCH = "application/merge-patch+json"


class KubeApiError(Exception):
    """An API error answer; `status` is the HTTP status, `reason` Kubernetes' reason."""

    def __init__(self, method: str, path: str, status: int, reason: str, message: str) -> None:
        super().__init__(f"{method} {path}: {status} {reason}: {message}")
        self.status = status
        self.reason = reason


# Where each kind the operator touches lives: (API prefix, plural).
_KINDS: dict[str, tuple[str, str]] = {
    "ConfigMap": ("/api/v1", "configmaps"),
    "Service": ("/api/v1", "services"),
    "Secret": ("/api/v1", "secrets"),
    "Pod": ("/api/v1", "pods"),
    "Event": ("/api/v1", "events"),
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    "Deployment": ("/apis/apps/v1", "deployments"),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    "FlinkJob": ("/apis/strom.io/v1beta1", "flinkjobs"),
}


def object_path(kind: str, namespace: str, name: str | None = None, subresource: str | None = None) -> str:
    if kind not in _KINDS:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(sorted(_KINDS))}")
    prefix, plural = _KINDS[kind]
    path = f"{prefix}/namespaces/{quote(namespace)}/{plural}"
    if name is not None:
        path += f"/{quote(name)}"
    if subresource is not None:
        path += f"/{subresource}"
    return path


class KubeApi:
    """An API server client; `server` is its base URL."""

    def __init__(self, server: str, *, headers: Mapping[str, str] | None = None,
                 ssl_context: ssl.SSLContext | bool | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.server = server.rstrip("/")
        self._headers = dict(headers or {})
        self._ssl = ssl_context
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_connection_info(cls, info: Any) -> KubeApi:
        """From a `kopf.ConnectionInfo` (what kopf's login handlers return)."""
        headers: dict[str, str] = {}
        if info.token:
            headers["Authorization"] = f"{info.scheme or 'Bearer'} {info.token}"
        elif info.username and info.password:
            raw = f"{info.username}:{info.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        context: ssl.SSLContext | bool | None = None
        if str(info.server).startswith("https"):
            if info.insecure:
                context = False
            else:
                context = ssl.create_default_context(
                    cafile=_path(info.ca_path), cadata=_text(info.ca_data))
            cert, key = _file(info.certificate_path, info.certificate_data), _file(info.private_key_path,
                                                                                   info.private_key_data)
            if cert and isinstance(context, ssl.SSLContext):
                context.load_cert_chain(cert, key)
        return cls(str(info.server), headers=headers, ssl_context=context)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout, headers=self._headers)
        return self._session

    async def request(self, method: str, path: str, *, body: Any = None, params: Mapping[str, str] | None = None,
                      content_type: str = "application/json") -> Any:
        data = json.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        kwargs: dict[str, Any] = {"params": dict(params or {}), "data": data, "headers": headers}
        if self._ssl is not None:
            kwargs["ssl"] = self._ssl
        try:
            async with self._client().request(method, self.server + path, **kwargs) as r:
                text = await r.text()
                if r.status >= 400:
                    try:
                        err = json.loads(text)
                    except ValueError:
                        err = {}
                    raise KubeApiError(method, path, r.status, str(err.get("reason", "")),
                                       str(err.get("message", text[:300])))
                return json.loads(text) if text else None
        except (TimeoutError, aiohttp.ClientConnectionError) as e:
            raise KubeApiError(method, path, 0, "Unreachable", f"{type(e).__name__}: {e}") from None

    # -- objects ---------------------------------------------------------------------------------

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return await self.request("GET", object_path(kind, namespace, name))
        except KubeApiError as e:
            if e.status == 404:
                return None
            raise

    async def list(self, kind: str, namespace: str, *, labels: Mapping[str, str] | None = None
                   ) -> list[dict[str, Any]]:
        params = {"labelSelector": ",".join(f"{k}={v}" for k, v in labels.items())} if labels else None
        body = await self.request("GET", object_path(kind, namespace), params=params)
        items = list((body or {}).get("items") or [])
        # The selector again on our side: a minimal API server (a test emulator) may ignore it.
        if labels:
            items = [i for i in items if all(((i.get("metadata") or {}).get("labels") or {}).get(k) == v
                                             for k, v in labels.items())]
        return items

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return await self.request("POST", object_path(obj["kind"], meta["namespace"]), body=obj)

    async def merge_patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any], *,
                          subresource: str | None = None) -> dict[str, Any]:
        return await self.request("PATCH", object_path(kind, namespace, name, subresource), body=patch,
                                  content_type=MERGE_PATCH)

    async def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create the object, or merge-patch an existing one to it."""
        meta = obj["metadata"]
        try:
            return await self.create(obj)
        except KubeApiError as e:
            if e.status != 409:
                raise
        return await self.merge_patch(obj["kind"], meta["namespace"], meta["name"], obj)

    async def delete(self, kind: str, namespace: str, name: str, *, propagation: str = "Background") -> bool:
        """True when it was deleted now, False when it was already gone."""
        try:
            await self.request("DELETE", object_path(kind, namespace, name),
                               body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation})
            return True
        except KubeApiError as e:
            if e.status == 404:
                return False
            raise


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
