"""The few Kubernetes API calls the operator makes, over aiohttp with kopf's credentials.

Kopf logs in (kubeconfig, in-cluster service account, or the `kubernetes` client's loaders) and
hands over a `kopf.ConnectionInfo`; the same credentials serve these calls, so the operator has
one way to the API and no thread pool. Credentials are renewed (api_credentials.py): a rotated
token file is re-read before a request, and a 401 re-runs the login once and retries the request.
Objects are plain dicts. `apply` is server-side apply with the field manager `strom-operator`
(forced: the operator's desired state wins), so keys the operator stops setting are removed and
fields other managers set are left alone; status is written with merge patches of the status
subresource.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import aiohttp

from strom_operator.clients.api_credentials import Credentials, Relogin, TokenFile, token_file_of

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 15.0
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"  # JSON is YAML: the body is sent as JSON
FIELD_MANAGER = "strom-operator"


class KubeApiError(Exception):
    """An API error answer; `status` is the HTTP status (0: no answer), `reason` Kubernetes' reason,
    `api_message` the server's message, `verb` what the operator tried (create, apply, get, ...)."""

    def __init__(self, method: str, path: str, status: int, reason: str, message: str, *, verb: str = "") -> None:
        super().__init__(f"{method} {path}: {status} {reason}: {message}")
        self.method = method
        self.path = path
        self.status = status
        self.reason = reason
        self.api_message = message
        self.verb = verb or _VERBS.get(method, method.lower())


_VERBS = {"GET": "get", "POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}


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
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies"),
    "Ingress": ("/apis/networking.k8s.io/v1", "ingresses"),
    "Certificate": ("/apis/cert-manager.io/v1", "certificates"),  # cert-manager's (tls_secret.py)
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



def describe_path(path: str) -> str:
    """`/apis/apps/v1/namespaces/ns/deployments/x/status` -> `deployments ns/x (status)`: the object
    of a request, in the words of `kubectl get`."""
    parts = path.strip("/").split("/")
    if "namespaces" not in parts or parts.index("namespaces") + 2 >= len(parts):
        return path
    i = parts.index("namespaces")
    namespace, rest = parts[i + 1], parts[i + 2:]
    plural = rest[0]
    group = parts[1] if parts[0] == "apis" and len(parts) > 1 else ""
    kind = f"{plural}.{group}" if group else plural
    if len(rest) == 1:
        return f"{kind} in {namespace}"
    text = f"{kind} {namespace}/{rest[1]}"
    return text + (f" ({rest[2]})" if len(rest) > 2 else "")


class KubeApi:
    """An API server client; `server` is its base URL.

    `token_file`: re-read when it changes (a projected ServiceAccount token). `relogin`: called
    once on a 401 (concurrent 401s share one call) for fresh credentials; the request is retried
    once with them.
    """

    def __init__(self, server: str, *, headers: Mapping[str, str] | None = None,
                 ssl_context: ssl.SSLContext | bool | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 token_file: str | None = None, relogin: Relogin | None = None) -> None:
        self.server = server.rstrip("/")
        self._headers = {k: v for k, v in (headers or {}).items() if k.lower() != "authorization"}
        self._authorization = next((v for k, v in (headers or {}).items() if k.lower() == "authorization"), None)
        self._ssl = ssl_context
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._token_file = TokenFile(token_file) if token_file else None
        self._relogin = relogin
        self._login_lock = asyncio.Lock()
        self.generation = 0  # +1 per credentials change: concurrent 401s re-login once
        if self._token_file is not None:
            self._reread_token_file()

    @classmethod
    def from_connection_info(cls, info: Any, *, relogin: Relogin | None = None,
                             token_file: str | None = None) -> KubeApi:
        """From a `kopf.ConnectionInfo` (what kopf's login handlers return); the token file is found
        when the token came from the pod's ServiceAccount token (api_credentials.token_file_of)."""
        creds = Credentials.of(info)
        headers = {"Authorization": creds.authorization} if creds.authorization else None
        return cls(creds.server, headers=headers, ssl_context=creds.ssl_context, relogin=relogin,
                   token_file=token_file or token_file_of(info))

    def update_credentials(self, info: Any) -> None:
        """Take fresh credentials from a `kopf.ConnectionInfo` (a re-login, by kopf or by us)."""
        creds = Credentials.of(info)
        self.server, self._authorization, self._ssl = creds.server, creds.authorization, creds.ssl_context
        if self._token_file is None and (path := token_file_of(info)) is not None:
            self._token_file = TokenFile(path)
            self._token_file.changed_token()  # this token is the file's
        self.generation += 1

    def _reread_token_file(self) -> bool:
        token = self._token_file.changed_token() if self._token_file is not None else None
        if token is None:
            return False
        self._authorization = f"Bearer {token}"
        self.generation += 1
        return True

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout, headers=self._headers)
        return self._session

    async def request(self, method: str, path: str, *, body: Any = None, params: Mapping[str, str] | None = None,
                      content_type: str = "application/json", verb: str = "") -> Any:
        self._reread_token_file()
        generation = self.generation
        try:
            return await self._send(method, path, body=body, params=params, content_type=content_type, verb=verb)
        except KubeApiError as e:
            if e.status != 401 or not await self._renew(generation):
                raise
        return await self._send(method, path, body=body, params=params, content_type=content_type, verb=verb)

    async def _renew(self, generation: int) -> bool:
        """After a 401 with the credentials of `generation`: whether fresh ones are in place now."""
        async with self._login_lock:
            if self.generation != generation:
                return True  # another request renewed them meanwhile
            if self._reread_token_file():
                return True
            if self._relogin is None:
                return False
            try:
                info = await self._relogin()
            except Exception as e:  # noqa: BLE001 - the 401 is the error to report
                log.warning("re-login after 401 Unauthorized failed: %s", e)
                return False
            if info is None:
                return False
            self.update_credentials(info)
            log.info("credentials renewed after 401 Unauthorized")
            return True

    async def _send(self, method: str, path: str, *, body: Any, params: Mapping[str, str] | None,
                    content_type: str, verb: str) -> Any:
        data = json.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        if self._authorization:
            headers["Authorization"] = self._authorization
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
                    if not isinstance(err, dict):
                        err = {}
                    raise KubeApiError(method, path, r.status, str(err.get("reason", "")),
                                       str(err.get("message", text[:300])), verb=verb)
                return json.loads(text) if text else None
        except (TimeoutError, aiohttp.ClientConnectionError) as e:
            raise KubeApiError(method, path, 0, "Unreachable", f"{type(e).__name__}: {e}", verb=verb) from None

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
        body = await self.request("GET", object_path(kind, namespace), params=params, verb="list")
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

    async def apply(self, obj: Mapping[str, Any], *, field_manager: str = FIELD_MANAGER) -> dict[str, Any]:
        """Server-side apply of `obj` (created when missing): the fields in `obj` become this field
        manager's, taken over from others (force); its fields missing from `obj` are removed."""
        meta = obj["metadata"]
        return await self.request("PATCH", object_path(obj["kind"], meta["namespace"], meta["name"]), body=obj,
                                  params={"fieldManager": field_manager, "force": "true"},
                                  content_type=APPLY_PATCH, verb="apply")

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
