"""The TaskManager Deployment of a FlinkJob: enough pods for the job's parallelism.

Each pod runs `strom taskmanager --jobmanager <jobmanager service>:6123` with
`taskManager.slots` slots, so replicas = ceil(parallelism / slots) gives the job the slots it
needs (slot sharing: a job needs as many slots as its highest parallelism; with the autoscaler's
per-vertex parallelism, the highest of those).
"""

from __future__ import annotations

from typing import Any

from strom_operator.labels import (
    METRICS_PORT,
    RPC_PORT,
    FlinkJobRef,
    jobmanager_name,
    object_meta,
    selector_labels,
    taskmanager_name,
)
from strom_operator.pods import build_pod_template
from strom_operator.spec import FlinkJobSpec

CONTAINER = "taskmanager"


def taskmanager_replicas(parallelism: int, slots: int) -> int:
    """ceil(parallelism / slots) in integers: floats would round wrongly for large values."""
    return -(-parallelism // slots)


def build_taskmanager_deployment(ref: FlinkJobRef, spec: FlinkJobSpec, *, slots: int | None = None) -> dict[str, Any]:
    """`slots`: the slots the job needs (default spec.job.parallelism; the autoscaler's overrides may differ)."""
    container = {
        "name": CONTAINER,
        "command": ["strom"],
        "args": ["taskmanager", "--jobmanager", f"{jobmanager_name(ref)}:{RPC_PORT}"],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
    }
    template = build_pod_template(ref, spec, component="taskmanager", container=container,
                                  resources=spec.task_manager.resources,
                                  user_template=dict(spec.task_manager.pod_template))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(ref, taskmanager_name(ref), "taskmanager"),
        "spec": {
            "replicas": taskmanager_replicas(slots or spec.job.parallelism, spec.task_manager.slots),
            # TaskManagers of two spec versions must not serve one job together.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector_labels(ref, "taskmanager")},
            "template": template,
        },
    }
