"""Names, labels and owner references of the objects the operator creates for a FlinkJob.

Every object carries the `app.kubernetes.io/*` labels and an ownerReference to its FlinkJob, so
`kubectl get all -l app.kubernetes.io/instance=<job>` finds them and Kubernetes deletes them with
the FlinkJob.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strom_operator.crd.definition import GROUP, KIND, VERSION

MANAGED_BY = "strom-operator"
COMPONENTS = ("jobmanager", "taskmanager", "config", "autoscaler")

REST_PORT = 8081
RPC_PORT = 6123
METRICS_PORT = 9249
DATA_PORT = 6121  # slot i of a TaskManager serves its data on DATA_PORT + i (taskmanager.data.port)
METRICS_PATH = "/metrics"
CONF_DIR = "/opt/strom/conf"


@dataclass(frozen=True, slots=True)
class FlinkJobRef:
    """Identity of the FlinkJob that owns the objects: from its metadata."""

    name: str
    namespace: str
    uid: str

    @classmethod
    def from_metadata(cls, meta: dict[str, Any]) -> FlinkJobRef:
        return cls(meta["name"], meta.get("namespace", "default"), meta.get("uid", ""))


def configmap_name(ref: FlinkJobRef) -> str:
    return f"{ref.name}-config"


def jobmanager_name(ref: FlinkJobRef) -> str:
    """Name of the JobManager Deployment and of its Service (TaskManagers dial it)."""
    return f"{ref.name}-jobmanager"


def taskmanager_name(ref: FlinkJobRef) -> str:
    return f"{ref.name}-taskmanager"


def selector_labels(ref: FlinkJobRef, component: str) -> dict[str, str]:
    """The labels that select a component's pods; they must never change for a live Deployment."""
    if component not in COMPONENTS:
        raise ValueError(f"unknown component {component!r}; expected one of {', '.join(COMPONENTS)}")
    return {
        "app.kubernetes.io/name": "strom",
        "app.kubernetes.io/instance": ref.name,
        "app.kubernetes.io/component": component,
    }


def labels(ref: FlinkJobRef, component: str) -> dict[str, str]:
    return {**selector_labels(ref, component), "app.kubernetes.io/managed-by": MANAGED_BY}


def owner_reference(ref: FlinkJobRef) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "name": ref.name,
        "uid": ref.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def object_meta(ref: FlinkJobRef, name: str, component: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": ref.namespace,
        "labels": labels(ref, component),
        "ownerReferences": [owner_reference(ref)],
    }
