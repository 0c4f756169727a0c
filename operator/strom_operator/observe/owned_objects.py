"""The JobManager/TaskManager Deployments and pods of each FlinkJob, as the operator's watches last saw them.

Observation used to GET both Deployments and LIST the pods on every pass of every FlinkJob. Kopf
watches them instead (the `@kopf.index` handlers in handlers.py, which call `index_entry`): kopf
keeps, per FlinkJob (namespace, app.kubernetes.io/instance), a snapshot of each of its objects,
updated by the watch events and complete before any other handler runs (kopf pre-populates indexes
from the initial listing). The observer reads this view and asks the API only when the view cannot
answer (`None`):

* not attached: the operator runs without kopf (a test's Reconciler) or no handler has run yet;
* read-your-writes: after the operator applied (or deleted) the Deployments itself, until the
  watch shows the JobManager Deployment present (or gone); a pass right after a DeployJob must not
  take a watch event still in flight for "no Deployment";
* not checked lately: kopf re-lists after each watch timeout and learns nothing of an object deleted
  between a watch's end and the next listing, so the view is trusted only for `resync_s` after the
  API last showed the same objects (by name; as informers resync): a first look at a FlinkJob, then
  one every 5 minutes, reads the API; a view that disagrees is not used until it agrees again.

Pure apart from the index objects it reads (kopf.Index: key -> collection of values).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from strom_operator.resources.labels import FlinkJobRef, jobmanager_name, taskmanager_name

NAME_LABEL = "app.kubernetes.io/name"
INSTANCE_LABEL = "app.kubernetes.io/instance"
COMPONENT_LABEL = "app.kubernetes.io/component"
# What the index handlers watch (a label filter: the objects the builders label for a FlinkJob).
WATCHED_LABELS = {NAME_LABEL: "strom"}
COMPONENTS = ("jobmanager", "taskmanager")

RESYNC_S = 300.0  # how long the view is trusted without the API showing the same objects
Key = tuple[str, str]  # (namespace, FlinkJob name)
Index = Mapping[Key, Collection[Mapping[str, Any]]]


def index_entry(namespace: str | None, body: Mapping[str, Any]) -> dict[Key, dict[str, Any]]:
    """What an index handler stores for one watched Deployment or pod: {(namespace, FlinkJob): snapshot},
    or nothing for objects that are not a FlinkJob's JobManager or TaskManager."""
    meta = body.get("metadata") or {}
    labels = meta.get("labels") or {}
    if namespace is None or labels.get(NAME_LABEL) != "strom" or labels.get(COMPONENT_LABEL) not in COMPONENTS:
        return {}
    instance = labels.get(INSTANCE_LABEL)
    if not instance:
        return {}
    # A plain copy (kopf's body is a view that later events change) of what the observer reads: metadata
    # without the server's field bookkeeping (the bulk of an object), and status.
    kept = {k: v for k, v in meta.items() if k != "managedFields"}
    snapshot = {"metadata": copy.deepcopy(kept), "status": copy.deepcopy(dict(body.get("status") or {}))}
    return {(namespace, instance): snapshot}


class OwnedObjects:
    """The view the observer reads; `attach` hands it kopf's indexes (the handlers do, each time: cheap)."""

    def __init__(self, *, resync_s: float = RESYNC_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._deployments: Index | None = None
        self._pods: Index | None = None
        self._expected: dict[Key, bool] = {}  # FlinkJob -> the JobManager Deployment must be there (or not)
        self._agreed: dict[Key, float] = {}  # FlinkJob -> when the API last showed what the view shows
        self._resync_s = resync_s
        self._clock = clock

    @property
    def attached(self) -> bool:
        return self._deployments is not None and self._pods is not None

    def attach(self, deployments: Index | None, pods: Index | None) -> None:
        if deployments is not None and pods is not None:
            self._deployments, self._pods = deployments, pods

    def expect(self, ref: FlinkJobRef, *, jobmanager: bool) -> None:
        """The operator just created (True) or deleted (False) the FlinkJob's Deployments."""
        self._expected[(ref.namespace, ref.name)] = jobmanager

    def forget(self, ref: FlinkJobRef) -> None:
        self._expected.pop((ref.namespace, ref.name), None)
        self._agreed.pop((ref.namespace, ref.name), None)

    def compare(self, ref: FlinkJobRef, deployments: Iterable[Mapping[str, Any] | None],
                pods: Iterable[Mapping[str, Any]]) -> bool:
        """What the API answered in place of the view: the view is trusted again (for `resync_s`) when it
        shows the same Deployments and pods; otherwise the API keeps answering until it does."""
        key = (ref.namespace, ref.name)
        if self._deployments is None or self._pods is None:
            return False
        shown = (_names(self._deployments.get(key, ())), _names(self._pods.get(key, ())))
        answered = (_names(d for d in deployments if d is not None),
                    _names(p for p in pods if _labels(p).get(COMPONENT_LABEL) in COMPONENTS))
        if shown == answered:
            self._agreed[key] = self._clock()
            return True
        self._agreed.pop(key, None)
        return False

    def view(self, ref: FlinkJobRef) -> tuple[list[dict[str, Any] | None], list[dict[str, Any]]] | None:
        """([JobManager Deployment, TaskManager Deployment] (None: absent), the pods), or None: ask the API."""
        key = (ref.namespace, ref.name)
        agreed = self._agreed.get(key)
        if self._deployments is None or self._pods is None or agreed is None or \
                self._clock() - agreed > self._resync_s:
            return None
        by_name = {d["metadata"].get("name"): dict(d) for d in self._deployments.get(key, ())}
        deployments = [by_name.get(jobmanager_name(ref)), by_name.get(taskmanager_name(ref))]
        expected = self._expected.get(key)
        if expected is not None:
            if (deployments[0] is not None) != expected:
                return None  # the watch has not shown the operator's own change yet
            del self._expected[key]
        return deployments, [dict(p) for p in self._pods.get(key, ())]


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _names(objects: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    return frozenset((o.get("metadata") or {}).get("name") or "" for o in objects)
