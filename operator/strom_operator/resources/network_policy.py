"""The NetworkPolicy `<name>` of a FlinkJob: who may connect to its JobManager and TaskManagers.

Ingress to the job's pods (selected by the job's instance label, both components) is allowed only:

* on the RPC (6123), REST (8081) and data ports (6121 + slot) from the job's own pods: TaskManagers
  register with the JobManager and exchange records with each other, the JobManager runs the job's
  entry point and serves REST to its TaskManagers' clients;
* on the REST port from the operator's pods (the operator's only way to the engine): its namespace
  and pod labels come from its environment (the chart sets `STROM_OPERATOR_NAMESPACE` by the downward
  API and `STROM_OPERATOR_POD_LABELS`). Unknown (an operator outside the cluster), the rule is left
  out, so nothing outside the job reaches REST;
* on the REST port from pods of the namespaces spec.ingress.controllerNamespaceSelector selects (the
  ingress controller's), when the job has an Ingress and that selector is set;
* on the metrics port (9249) from pods of the namespaces spec.security.networkPolicy.metricsNamespaceSelector
  selects (unset: every namespace, where Prometheus may run).

Egress is not restricted: jobs reach S3, Kafka, databases. The namespace of the operator is selected by
`kubernetes.io/metadata.name`, a label Kubernetes sets on every namespace from v1.21 (on older servers
label the operator's namespace with it); an operator in the job's own namespace needs no namespace
selector. A policy only acts where the cluster's network plugin enforces NetworkPolicies. Ports are
listed one by one (`endPort` needs Kubernetes v1.25); `protocol` is spelled out: server-side apply on
v1.19 refuses a list element without its key fields.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.labels import DATA_PORT, METRICS_PORT, REST_PORT, RPC_PORT, FlinkJobRef, object_meta

OPERATOR_NAMESPACE_ENV = "STROM_OPERATOR_NAMESPACE"
OPERATOR_POD_LABELS_ENV = "STROM_OPERATOR_POD_LABELS"  # k=v,k2=v2
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True, slots=True)
class OperatorPods:
    """Where the operator's own pods are: their namespace and labels."""

    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OperatorPods | None:
        """From the chart's environment variables; None when either is unset."""
        env = os.environ if environ is None else environ
        namespace = env.get(OPERATOR_NAMESPACE_ENV, "").strip()
        raw = env.get(OPERATOR_POD_LABELS_ENV, "").strip()
        if not namespace or not raw:
            return None
        labels: dict[str, str] = {}
        for term in raw.split(","):
            key, sep, value = term.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"invalid {OPERATOR_POD_LABELS_ENV} term {term!r}: expected key=value[,key=value]")
            labels[key.strip()] = value.strip()
        return cls(namespace, labels)


def network_policy_name(ref: FlinkJobRef) -> str:
    return ref.name


def job_pod_labels(ref: FlinkJobRef) -> dict[str, str]:
    """The labels every pod of the job has, JobManager and TaskManagers (labels.selector_labels minus component)."""
    return {"app.kubernetes.io/name": "strom", "app.kubernetes.io/instance": ref.name}


def _ports(numbers: list[int]) -> list[dict[str, Any]]:
    return [{"port": p, "protocol": "TCP"} for p in numbers]


def internal_ports(spec: FlinkJobSpec) -> list[int]:
    """RPC, REST and every data port a TaskManager of this spec serves, each once (slot 2's data port is
    6123, the JobManager's RPC port, on other pods)."""
    return sorted({RPC_PORT, REST_PORT, *(DATA_PORT + i for i in range(spec.task_manager.slots))})


def operator_peer(ref: FlinkJobRef, operator: OperatorPods) -> dict[str, Any]:
    peer: dict[str, Any] = {"podSelector": {"matchLabels": dict(operator.labels)}}
    if operator.namespace != ref.namespace:  # without a namespaceSelector, a podSelector means the policy's namespace
        peer["namespaceSelector"] = {"matchLabels": {NAMESPACE_NAME_LABEL: operator.namespace}}
    return peer


def build_network_policy(ref: FlinkJobRef, spec: FlinkJobSpec, operator: OperatorPods | None) -> dict[str, Any]:
    selector = spec.security.network_policy.metrics_namespace_selector
    ingress: list[dict[str, Any]] = [
        {"from": [{"podSelector": {"matchLabels": job_pod_labels(ref)}}], "ports": _ports(internal_ports(spec))},
    ]
    if operator is not None:
        ingress.append({"from": [operator_peer(ref, operator)], "ports": _ports([REST_PORT])})
    controllers = spec.ingress.controller_namespace_selector if spec.ingress is not None else None
    if controllers is not None:  # spec.ingress: its controller's pods reach the dashboard (REST)
        peer = {"namespaceSelector": copy.deepcopy(dict(controllers))}
        ingress.append({"from": [peer], "ports": _ports([REST_PORT])})
    ingress.append({"from": [{"namespaceSelector": dict(selector or {})}], "ports": _ports([METRICS_PORT])})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": object_meta(ref, network_policy_name(ref), "config"),
        "spec": {
            "podSelector": {"matchLabels": job_pod_labels(ref)},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }
