"""All Kubernetes objects of a deployed FlinkJob, in the order they are applied.

The config first (pods mount it), the NetworkPolicy (spec.security.networkPolicy, before any pod
exists that it guards), then the Service (TaskManagers dial it) and its Ingress (spec.ingress), then the
JobManager and TaskManager Deployments. The Secrets the pods read (cluster secret, TLS material) are made
before this list, once, and never applied (cluster_secret.py, tls_secret.py). Each object is built by its own module;
this is the one list a handler applies for a `DeployJob` step. The autoscaler's per-vertex parallelism reaches the job
as the engine option `pipeline.jobvertex-parallelism-overrides` and sizes the TaskManagers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import Scaling
from strom_operator.resources.configmap import PARALLELISM_OVERRIDES_KEY, build_configmap, parallelism_overrides_value
from strom_operator.resources.ingress import build_ingress
from strom_operator.resources.jobmanager_deployment import build_jobmanager_deployment, build_jobmanager_service
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.network_policy import OperatorPods, build_network_policy
from strom_operator.resources.taskmanager_deployment import build_taskmanager_deployment, taskmanager_replicas


def with_vertex_parallelism(spec: FlinkJobSpec, vertex_parallelism: Mapping[str, int] | None) -> FlinkJobSpec:
    """The spec whose engine configuration carries the autoscaler's overrides (they win over the user's)."""
    if not vertex_parallelism:
        return spec
    conf = {**spec.flink_configuration, PARALLELISM_OVERRIDES_KEY: parallelism_overrides_value(vertex_parallelism)}
    return replace(spec, flink_configuration=conf)


def slots_needed(spec: FlinkJobSpec, vertex_parallelism: Mapping[str, int] | None = None) -> int:
    """Slots the job needs: its highest vertex parallelism (slot sharing). The autoscaler sets every
    vertex, so its overrides alone decide; otherwise spec.job.parallelism."""
    return max(vertex_parallelism.values()) if vertex_parallelism else spec.job.parallelism


def build_job_objects(ref: FlinkJobRef, spec: FlinkJobSpec, *, restore_from: str | None = None,
                      allow_non_restored_state: bool = False,
                      vertex_parallelism: Mapping[str, int] | None = None,
                      operator: OperatorPods | None = None) -> list[dict[str, Any]]:
    """`operator`: where the operator's pods are, whom the NetworkPolicy lets reach REST."""
    deployed = with_vertex_parallelism(spec, vertex_parallelism)
    policy = [build_network_policy(ref, spec, operator)] if spec.security.network_policy.enabled else []
    ingress = [build_ingress(ref, spec.ingress)] if spec.ingress is not None else []
    return [
        build_configmap(ref, deployed),
        *policy,
        build_jobmanager_service(ref),
        *ingress,
        build_jobmanager_deployment(ref, deployed, restore_from=restore_from,
                                    allow_non_restored_state=allow_non_restored_state),
        build_taskmanager_deployment(ref, deployed, slots=slots_needed(spec, vertex_parallelism)),
    ]


def scaling_of(spec: FlinkJobSpec, vertex_parallelism: Mapping[str, int] | None = None,
               autoscaler: Mapping[str, Any] | None = None) -> Scaling:
    """What status.scaling reports for a deployed spec; the autoscaler's latest record is carried over."""
    tms = taskmanager_replicas(slots_needed(spec, vertex_parallelism), spec.task_manager.slots)
    parallelism = slots_needed(spec, vertex_parallelism)
    return Scaling(parallelism, tms, tms * spec.task_manager.slots, dict(vertex_parallelism or {}), autoscaler)
