"""The TaskManager Deployment of a FlinkJob: enough pods for the job's parallelism.

Each pod runs `strom taskmanager --jobmanager <jobmanager service>:6123 -D taskmanager.host=$(POD_IP)`
with `taskManager.slots` slots, so replicas = ceil(parallelism / slots) gives the job the slots it
needs (slot sharing: a job needs as many slots as its highest parallelism; with the autoscaler's
per-vertex parallelism, the highest of those). A TaskManager advertises its pod IP, which the
downward API puts in POD_IP and the kubelet expands in the args, so TaskManagers in other pods
reach its data ports (6121 + slot, declared as data-<slot>).
"""

from __future__ import annotations

from typing import Any

from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.labels import (
    DATA_PORT,
    METRICS_PORT,
    RPC_PORT,
    FlinkJobRef,
    jobmanager_name,
    object_meta,
    selector_labels,
    taskmanager_name,
)
from strom_operator.resources.pods import build_pod_template

CONTAINER = "taskmanager"
POD_IP_ENV = "POD_IP"
ADVERTISED_HOST_KEY = "taskmanager.host"


def taskmanager_replicas(parallelism: int, slots: int) -> int:
    """ceil(parallelism / slots) in integers: floats would round wrongly for large values."""
    return -(-parallelism // slots)


def taskmanager_args(ref: FlinkJobRef, spec: FlinkJobSpec) -> list[str]:
    """`strom` arguments: the JobManager's Service, and the pod IP as the advertised host unless the
    user's flinkConfiguration names one (a -D would win over the config file)."""
    args = ["taskmanager", "--jobmanager", f"{jobmanager_name(ref)}:{RPC_PORT}"]
    if ADVERTISED_HOST_KEY not in spec.flink_configuration:
        args += ["-D", f"{ADVERTISED_HOST_KEY}=$({POD_IP_ENV})"]
    return args


def taskmanager_ports(slots: int) -> list[dict[str, Any]]:
    """The metrics port and one data port per slot (taskmanager.data.port + slot index)."""
    ports = [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}]
    return ports + [{"name": f"data-{i}", "containerPort": DATA_PORT + i, "protocol": "TCP"} for i in range(slots)]


def build_taskmanager_deployment(ref: FlinkJobRef, spec: FlinkJobSpec, *, slots: int | None = None) -> dict[str, Any]:
    """`slots`: the slots the job needs (default spec.job.parallelism; the autoscaler's overrides may differ)."""
    container = {
        "name": CONTAINER,
        "command": ["strom"],
        "args": taskmanager_args(ref, spec),
        "env": [{"name": POD_IP_ENV, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
        "ports": taskmanager_ports(spec.task_manager.slots),
        # Ready once the process is up and its exporter listens on the pod's address (it starts
        # before registering; the TaskManager keeps retrying registration while the JobManager is away).
        "readinessProbe": {"tcpSocket": {"port": "metrics"}, "periodSeconds": 5, "failureThreshold": 3},
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
