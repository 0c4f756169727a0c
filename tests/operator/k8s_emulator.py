"""A Kubernetes API for the operator's integration tests: kmock's emulator with the fixes it needs.

kmock (by Kopf's author) keeps objects in memory and serves list/watch/get/create/patch/delete,
but as plain JSON storage. What the operator and kopf rely on and kmock does not do, this adds:

* metadata a server assigns: `uid`, `resourceVersion` (increasing), `creationTimestamp`,
  `generation` (1 at creation, +1 when `spec` changes), and the namespace from the URL;
* a create answers `201 Created` (kmock: 200);
* `PUT` replaces the object (kmock: no route), stale `metadata.resourceVersion` -> 409;
* the `status` subresource: `PATCH .../status` changes only `status`, a patch of the object
  leaves `status` alone (for resources declared with the subresource, as the CRD declares it);
* `labelSelector` (equality terms) on lists and watches;
* server-side apply (`PATCH` as `application/apply-patch+yaml` with a `fieldManager`), simplified:
  a missing object is created; otherwise the applied fields are set (force: taken from whoever set
  them), and the fields this manager applied last time and omits now are removed, unless another
  writer changed them since (then they are that writer's, as a real server's managedFields would
  say). Lists are atomic (a real server merges list-maps such as containers by their keys), no
  `managedFields` are stored or served, and conflicts are never reported (as with `force=true`);
* garbage collection: deleting an object deletes its dependents (by `ownerReferences` uid);
* graceful deletion of a Pod bound to a node (`spec.nodeName`), as a real server does it: a delete
  (or the garbage collector) only marks it (`deletionTimestamp`, `deletionGracePeriodSeconds` from the
  request, else the pod's `terminationGracePeriodSeconds`, else 30); it goes once its kubelet, having
  ended its processes, deletes it with `gracePeriodSeconds: 0`. So a Pod object outlives its processes,
  never the other way round;
* for tests that count or refuse what a client asks: `served`, every request as it arrives
  (method, path, query, User-Agent: kopf's watches tell themselves from the operator's own calls),
  and `refuse`, a test's rule answering a request with an error status as RBAC or admission would;
* a request log of the requests in flight only: kmock keeps every request forever (in its log and
  in each reaction's) and finds a request's reaction by scanning them all, for each reaction, with
  each filter: quadratic, 0.25 s per request after 600 requests (measured), which stalls an
  operator that polls.

`EmulatedCluster` runs it on 127.0.0.1 in a thread with its own event loop and writes a
kubeconfig for it, so an operator subprocess, kopf and the tests reach it like any API server.
CRD schema validation is not emulated: the CRD's schema is tested with jsonschema (test_crd.py).
"""

from __future__ import annotations

import asyncio
import collections
import copy
import datetime
import itertools
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp.web
import attrs
import kmock
import yaml
from kmock._internal import enums, rendering

# What the operator and kopf use; (namespaced, kind, subresources)
RESOURCES: dict[str, tuple[bool, str, tuple[str, ...]]] = {
    "strom.io/v1beta1/flinkjobs": (True, "FlinkJob", ("status", "scale")),
    "apps/v1/deployments": (True, "Deployment", ("status", "scale")),
    "v1/pods": (True, "Pod", ("status",)),
    "v1/services": (True, "Service", ("status",)),
    "v1/configmaps": (True, "ConfigMap", ()),
    "v1/secrets": (True, "Secret", ()),
    "v1/events": (True, "Event", ()),
    "v1/namespaces": (False, "Namespace", ("status",)),
    "networking.k8s.io/v1/networkpolicies": (True, "NetworkPolicy", ()),
    "networking.k8s.io/v1/ingresses": (True, "Ingress", ()),
    "cert-manager.io/v1/certificates": (True, "Certificate", ("status",)),
}
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}
APPLY_PATCH = "application/apply-patch+yaml"
REACTION_LOG_KEPT = 4  # requests each reaction remembers (kmock: all; they are scanned like the log)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _replacement_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch that turns `old` into exactly `new` (kmock only merges)."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(old.get(key), Mapping):
            patch[key] = _replacement_patch(old[key], value)
        else:
            patch[key] = copy.deepcopy(value)
    return patch


def _selector_matches(selector: str, labels: Mapping[str, str]) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.split("==", 1) if "==" in term else term.split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


@attrs.frozen
class Served:
    """A request as it reached the emulator; `refused`: answered by a test's `refuse` rule."""

    at: float  # time.monotonic()
    method: str
    path: str
    query: Mapping[str, str]
    user_agent: str
    refused: int | None = None

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")


# A test's refusal rule: (method, path, parsed JSON body or None) -> (HTTP status, message), or None to serve.
Refusal = Callable[[str, str, Any], "tuple[int, str] | None"]


@attrs.define(kw_only=True)
class StromKubernetesEmulator(kmock.KubernetesEmulator):
    _versions: Any = attrs.field(factory=lambda: itertools.count(1000), init=False)
    _origins: dict[int, Any] = attrs.field(factory=dict, init=False)  # id(evolved request) -> the request parsed
    # (resource, namespace, name, field manager) -> (object uid, {leaf path: value} it applied last)
    _applied: dict[tuple[Any, ...], tuple[str | None, dict[tuple[str, ...], Any]]] = attrs.field(
        factory=dict, init=False)

    served: collections.deque[Served] = attrs.field(factory=lambda: collections.deque(maxlen=50_000), init=False)
    refuse: Refusal | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        for key, (namespaced, kind, subresources) in RESOURCES.items():
            self.resources[key] = kmock.ResourceInfo(namespaced=namespaced, kind=kind, verbs=VERBS,
                                                     subresources=set(subresources),
                                                     singular=kind.lower())

    def _has_status_subresource(self, resource: Any) -> bool:
        return any(r == resource and "status" in self.resources[r].subresources for r in list(self.resources))

    def _evolve(self, request: rendering.Request, **changes: Any) -> rendering.Request:
        """A changed request, swapped into the request log: kmock finds a request's reactions by identity."""
        new = attrs.evolve(request, **changes)
        for i in range(len(self._requests) - 1, -1, -1):
            if self._requests[i] is request:
                self._requests[i] = new
                break
        self._origins[id(new)] = self._origins.pop(id(request), request)
        return new

    def _forget(self, original: rendering.Request) -> None:
        """Drop a served request (and what it was evolved into) from the log; see the module docstring."""
        def served(r: rendering.Request) -> bool:
            return r is original or self._origins.get(id(r)) is original

        done = [r for r in self._requests if served(r)]
        self._requests[:] = [r for r in self._requests if not served(r)]
        for r in done:
            self._origins.pop(id(r), None)
        for payload in self._payloads:
            log = getattr(payload, "_requests", None)
            if isinstance(log, list) and len(log) > REACTION_LOG_KEPT:
                del log[:-REACTION_LOG_KEPT]

    def _stored(self, request: rendering.Request) -> Any:
        key = (request.resource, request.namespace, request.name)
        if key in self._objects and not self._objects[key].deleted:
            return self._objects[key]
        return None

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        refused = await self._refused(raw_request)
        self.served.append(Served(time.monotonic(), raw_request.method, raw_request.path, dict(raw_request.query),
                                  raw_request.headers.get("User-Agent", ""), refused[0] if refused else None))
        if refused is not None:
            code, message = refused
            reason = {403: "Forbidden", 422: "Invalid", 409: "Conflict"}.get(code, "BadRequest")
            return aiohttp.web.json_response({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                                              "message": message, "reason": reason, "code": code}, status=code)
        # kmock cannot parse the cluster-wide namespace list (`/api/v1/namespaces` has no name after
        # `namespaces`); kopf lists and watches it when told which namespaces to serve.
        if raw_request.path.rstrip("/") == "/api/v1/namespaces" and raw_request.method == "GET":
            return await self._serve_namespaces(raw_request)
        return await super().__call__(raw_request)

    async def _refused(self, raw_request: aiohttp.web.BaseRequest) -> tuple[int, str] | None:
        if self.refuse is None:
            return None
        body: Any = None
        if raw_request.can_read_body:
            try:
                body = json.loads(await raw_request.read() or b"null")  # aiohttp keeps the bytes for kmock
            except ValueError:
                body = None
        return self.refuse(raw_request.method, raw_request.path, body)

    async def _serve_namespaces(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        names = sorted({"default", *(ns for (_, ns, _), o in list(self._objects.items()) if ns and not o.deleted)})
        items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "uid": n, "resourceVersion": "1"}}
                 for n in names]
        if raw_request.query.get("watch") != "true":
            return aiohttp.web.json_response({"apiVersion": "v1", "kind": "NamespaceList", "items": items,
                                              "metadata": {"resourceVersion": "1"}})
        response = aiohttp.web.StreamResponse()
        await response.prepare(raw_request)
        try:  # namespaces never change here: hold the watch open until the client leaves
            await asyncio.sleep(float(raw_request.query.get("timeoutSeconds") or 3600))
        except asyncio.CancelledError:
            pass
        return response

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        try:
            return await self._handle_request(request)
        finally:
            self._forget(request)

    async def _handle_request(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if request.resource is None:
            return await super()._handle(request)
        if request.action == enums.action.DELETE and request.name is not None and _is_pods(request.resource):
            marked = await self._delete_gracefully(request)
            if marked is not None:
                return marked
        if request.method == enums.method.PUT and request.name is not None:
            request = await self._put_as_patch(request)
        applied: tuple[tuple[Any, ...], dict[tuple[str, ...], Any]] | None = None
        if request.method == enums.method.PATCH and APPLY_PATCH in request.headers.get("Content-Type", ""):
            request, applied = await self._prepare_apply(request)
            response = await self._handle_request(request)
            if response.status < 300:
                where = applied[0][:3]  # (resource, namespace, name)
                async with self._lock:
                    stored = self._objects[where] if where in self._objects else None
                    uid = stored.raw.get("metadata", {}).get("uid") if stored is not None else None
                self._applied[applied[0]] = (uid, applied[1])
            return response
        if request.action == enums.action.CREATE and isinstance(request.data, Mapping):
            data = copy.deepcopy(dict(request.data))
            meta = data.setdefault("metadata", {})
            if request.namespace and not meta.get("namespace"):
                meta["namespace"] = request.namespace
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            meta.update(uid=str(uuid.uuid4()), resourceVersion=str(next(self._versions)),
                        creationTimestamp=_now(), generation=1)
            meta.pop("deletionTimestamp", None)
            request = self._evolve(request, data=data)
            response = await super()._handle(request)
            if response.status == 200:
                response.set_status(201)
            return response
        if request.action == enums.action.UPDATE and isinstance(request.data, Mapping):
            request = await self._prepare_update(request)
        elif request.action == enums.action.UPDATE and isinstance(request.data, list):
            request = await self._prepare_json_patch(request)
        response = await super()._handle(request)
        if request.action in (enums.action.DELETE, enums.action.UPDATE) and response.status < 300:
            await self._collect_garbage()  # an update may have released the last finalizer
        return response

    async def _put_as_patch(self, request: rendering.Request) -> rendering.Request:
        async with self._lock:
            stored = self._stored(request)
            old = dict(stored.raw) if stored is not None else None
        if old is None:
            raise kmock.KubernetesObjectNotFoundError()
        new = copy.deepcopy(dict(request.data or {}))
        new_meta = new.setdefault("metadata", {})
        for key in ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp"):
            if key in old.get("metadata", {}):
                new_meta.setdefault(key, old["metadata"][key])
        return self._evolve(request, method=enums.method.PATCH, action=enums.action.UPDATE,
                            data=_replacement_patch(old, new))

    async def _prepare_apply(self, request: rendering.Request
                             ) -> tuple[rendering.Request, tuple[tuple[Any, ...], dict[tuple[str, ...], Any]]]:
        """Server-side apply as a create or a replacing merge patch (see the module docstring)."""
        manager = request.params.get("fieldManager")
        if not manager:
            raise kmock.KubernetesError(status=400, reason="BadRequest",
                                        message="PATCH with application/apply-patch+yaml requires fieldManager")
        config = request.data if isinstance(request.data, Mapping) else yaml.safe_load(request.text or "{}")
        config = copy.deepcopy(dict(config or {}))
        if config.get("metadata", {}).get("name") not in (None, request.name):
            raise kmock.KubernetesError(status=400, reason="BadRequest",
                                        message="the name of the object does not match the name on the URL")
        key = (request.resource, request.namespace, request.name, manager)
        leaves = dict(_leaves(config))
        async with self._lock:
            stored = self._stored(request)
            old = copy.deepcopy(dict(stored.raw)) if stored is not None else None
        if old is None:
            config.setdefault("metadata", {})["name"] = request.name
            return self._evolve(request, method=enums.method.POST, action=enums.action.CREATE, data=config,
                                name=None, headers=_as_json(request.headers)), (key, leaves)
        uid, before = self._applied.get(key, (None, {}))
        if uid != old.get("metadata", {}).get("uid"):
            before = {}  # applied to an earlier object of that name
        new = copy.deepcopy(old)
        for path, value in before.items():
            if path not in leaves and _get_path(new, path) == value:
                _remove_path(new, path)
        new = _merged(new, config)
        return self._evolve(request, action=enums.action.UPDATE, data=_replacement_patch(old, new),
                            headers=_as_json(request.headers)), (key, leaves)

    async def _prepare_update(self, request: rendering.Request) -> rendering.Request:
        async with self._lock:
            stored = self._stored(request)
            old = copy.deepcopy(dict(stored.raw)) if stored is not None else None
        if old is None:
            raise kmock.KubernetesObjectNotFoundError()
        patch = copy.deepcopy(dict(request.data))
        meta_patch = patch.get("metadata") or {}
        expected = meta_patch.get("resourceVersion") if isinstance(meta_patch, Mapping) else None
        if expected and expected != old.get("metadata", {}).get("resourceVersion"):
            raise kmock.KubernetesError(status=409, reason="Conflict",
                                        message="the object has been modified; please apply your changes to the "
                                                "latest version and try again")
        if request.subresource == "status":
            patch = {"status": patch.get("status")} if "status" in patch else {}
        elif self._has_status_subresource(request.resource):
            patch.pop("status", None)
        meta = dict(patch.get("metadata") or {})
        for immutable in ("uid", "creationTimestamp", "generation", "namespace", "name"):
            meta.pop(immutable, None)
        meta["resourceVersion"] = str(next(self._versions))
        if "spec" in patch and request.subresource is None:
            if _merged(old.get("spec"), patch["spec"]) != old.get("spec"):
                meta["generation"] = int(old.get("metadata", {}).get("generation", 1)) + 1
        patch["metadata"] = meta
        return self._evolve(request, data=patch)

    async def _prepare_json_patch(self, request: rendering.Request) -> rendering.Request:
        """A failed `test` operation is 422 Unprocessable (kmock: 500); the patch bumps resourceVersion."""
        async with self._lock:
            stored = self._stored(request)
            old = copy.deepcopy(dict(stored.raw)) if stored is not None else None
        if old is None:
            raise kmock.KubernetesObjectNotFoundError()
        import jsonpatch

        ops = list(request.data)
        try:
            jsonpatch.apply_patch(old, ops, in_place=False)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
            raise kmock.KubernetesError(status=422, reason="Invalid", message=f"the JSON patch failed: {e}") from None
        ops.append({"op": "add", "path": "/metadata/resourceVersion", "value": str(next(self._versions))})
        return self._evolve(request, data=ops)

    async def _delete_gracefully(self, request: rendering.Request) -> aiohttp.web.StreamResponse | None:
        """A delete of a Pod bound to a node: marked, not removed (see the module docstring); None when it
        is removed now (not bound, gracePeriodSeconds 0: the kubelet's confirmation) or does not exist."""
        grace = (request.data or {}).get("gracePeriodSeconds") if isinstance(request.data, Mapping) else None
        async with self._lock:
            stored = self._stored(request)
            if stored is None or not (stored.raw.get("spec") or {}).get("nodeName") or grace == 0:
                return None
            if not stored.raw.get("metadata", {}).get("deletionTimestamp"):
                await self._mark_for_deletion(request.resource, stored, grace)
            return aiohttp.web.json_response(stored.raw)

    async def _mark_for_deletion(self, resource: Any, stored: Any, grace: Any = None) -> None:
        """Called with the lock held: the Pod's deletion starts; its kubelet ends it."""
        if grace is None:
            grace = (stored.raw.get("spec") or {}).get("terminationGracePeriodSeconds", DEFAULT_GRACE_S)
        stored.patch({"metadata": {"deletionTimestamp": _now(), "deletionGracePeriodSeconds": int(grace),
                                   "resourceVersion": str(next(self._versions))}})
        await self._buses[resource].put({"type": "MODIFIED", "object": stored.raw})

    async def _collect_garbage(self) -> None:
        """Delete every object whose owners are all gone, until none is left (cascading); a Pod bound to a
        node is deleted gracefully (marked; its kubelet removes it once its processes ended)."""
        while True:
            async with self._lock:
                alive = {o.raw.get("metadata", {}).get("uid") for o in self._objects.values() if not o.deleted}
                orphans = []
                for key, obj in self._objects.items():
                    if obj.deleted or obj.raw.get("metadata", {}).get("deletionTimestamp"):
                        continue
                    owners = [r.get("uid") for r in obj.raw.get("metadata", {}).get("ownerReferences") or ()]
                    if owners and not any(uid in alive for uid in owners):
                        orphans.append((key, obj))
                for (resource, _, _), obj in orphans:
                    if _is_pods(resource) and (obj.raw.get("spec") or {}).get("nodeName"):
                        await self._mark_for_deletion(resource, obj)
                        continue
                    raw = obj.raw
                    obj.delete()
                    await self._buses[resource].put({"type": "DELETED", "object": raw})
            if not orphans:
                return

    async def _serve_list(self, request: rendering.Request) -> rendering.Payload:
        payload = await super()._serve_list(request)
        selector = request.params.get("labelSelector")
        if selector and isinstance(payload, dict):
            payload["items"] = [i for i in payload["items"]
                                if _selector_matches(selector, i.get("metadata", {}).get("labels") or {})]
        if isinstance(payload, dict):
            payload["metadata"] = {"resourceVersion": str(next(self._versions))}
        return payload

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        selector = request.params.get("labelSelector")
        async for event in super()._serve_watch(request):
            if selector and isinstance(event, dict):
                labels = (event.get("object") or {}).get("metadata", {}).get("labels") or {}
                if not _selector_matches(selector, labels):
                    continue
            yield event


DEFAULT_GRACE_S = 30  # Kubernetes' default terminationGracePeriodSeconds


def _is_pods(resource: Any) -> bool:
    return getattr(resource, "plural", None) == "pods" and not getattr(resource, "group", "")


def _as_json(headers: Mapping[str, str]) -> dict[str, str]:
    return {**{k: v for k, v in headers.items() if k.lower() != "content-type"},
            "Content-Type": "application/merge-patch+json"}


def _leaves(obj: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, value) of every leaf of a map: scalars, lists (atomic here) and empty maps."""
    for key, value in obj.items():
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, prefix + (key,))
        else:
            yield prefix + (key,), value


_MISSING = object()


def _get_path(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def _remove_path(obj: dict[str, Any], path: tuple[str, ...]) -> None:
    """Remove the leaf at `path`, and maps left empty by it (as a real server prunes them)."""
    parents = [obj]
    for key in path[:-1]:
        parents.append(parents[-1][key])
    parents[-1].pop(path[-1], None)
    for depth in range(len(path) - 1, 0, -1):
        if not parents[depth]:
            parents[depth - 1].pop(path[depth - 1], None)


def _merged(old: Any, patch: Any) -> Any:
    if isinstance(old, Mapping) and isinstance(patch, Mapping):
        out = dict(old)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = _merged(old.get(k), v)
        return out
    return patch


class EmulatedCluster:
    """The emulator served on 127.0.0.1 from a background thread; `kubeconfig` points at it."""

    def __init__(self, work_dir: Path, *, namespace: str = "default") -> None:
        self.namespace = namespace
        self.kubeconfig = work_dir / "kubeconfig.yaml"
        self.url = ""
        self.emulator: StromKubernetesEmulator | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="k8s-emulator", daemon=True)

    def start(self) -> EmulatedCluster:
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"the Kubernetes emulator did not start: {self._error!r}")
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "emulator",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "emulator", "user": {"token": "emulator"}}],
            "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "emulator",
                                                          "namespace": self.namespace}}],
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as e:  # noqa: BLE001 - reported by start()
            self._error = e
            self._ready.set()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with StromKubernetesEmulator() as emulator, kmock.Server(emulator) as server:
            self.emulator = emulator
            self.url = f"http://127.0.0.1:{server.port}"
            self._ready.set()
            await self._stop.wait()

    def stop(self) -> None:
        if self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)
