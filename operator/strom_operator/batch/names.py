"""Names and labels of a batch FlinkJob's objects: driver pods, Service, ConfigMap, RBAC, executors.

They carry the same `app.kubernetes.io/*` labels as a streaming job's objects (labels.py), with
components of their own, and an ownerReference to the FlinkJob. Driver pods are numbered by
submission, so a retry or a resubmission never waits for the previous pod's name to be free.
Executor pods are Spark's: it labels them with what the driver's configuration asks
(spark.kubernetes.executor.label.*), so the operator finds them by job and by driver.
"""

from __future__ import annotations

from typing import Any

from strom_operator.resources.labels import MANAGED_BY, FlinkJobRef, owner_reference

DRIVER = "spark-driver"
EXECUTOR = "spark-executor"
CONFIG = "spark-config"
RBAC = "spark-rbac"
# Which driver pod (submission) a pod belongs to: the Service selects the current driver by it,
# and executor pods carry it so that those of an ended driver are cleaned up.
DRIVER_POD_LABEL = "strom.io/driver-pod"


def driver_pod_name(ref: FlinkJobRef, submission: int) -> str:
    return f"{ref.name}-driver-{submission}"


def driver_service_name(ref: FlinkJobRef) -> str:
    """The headless Service whose DNS name is spark.driver.host."""
    return f"{ref.name}-driver"


def spark_configmap_name(ref: FlinkJobRef) -> str:
    return f"{ref.name}-spark"


def spark_service_account_name(ref: FlinkJobRef) -> str:
    """The ServiceAccount (and Role, RoleBinding) the operator creates when spec.serviceAccount is unset."""
    return f"{ref.name}-spark"


def batch_selector(ref: FlinkJobRef, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "strom",
        "app.kubernetes.io/instance": ref.name,
        "app.kubernetes.io/component": component,
    }


def batch_labels(ref: FlinkJobRef, component: str) -> dict[str, str]:
    return {**batch_selector(ref, component), "app.kubernetes.io/managed-by": MANAGED_BY}


def batch_meta(ref: FlinkJobRef, name: str, component: str) -> dict[str, Any]:
    return {"name": name, "namespace": ref.namespace, "labels": batch_labels(ref, component),
            "ownerReferences": [owner_reference(ref)]}
