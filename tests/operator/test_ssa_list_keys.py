"""Server-side apply refuses an associative list whose element omits a key field ("associative list
with keys has an element that omits key field protocol", as v1.19 answered the chart's Deployment).
Every object the chart renders and the operator builds carries the keys of every such list.

The key table is Kubernetes' API (k8s.io/api, the `+listType=map` / `+listMapKey=` markers of the
fields below, which v1.19's OpenAPI publishes as x-kubernetes-list-type/-list-map-keys). A defaulted
key (a port's protocol) counts as omitted: v1.19 merges before it defaults.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from strom_operator.autoscaler.configmap_store import build_autoscaler_configmap
from strom_operator.autoscaler.state import AutoscalerState
from strom_operator.batch.driver import EXECUTOR_TEMPLATE_FILE, build_spark_configmap, driver_objects
from strom_operator.resources.builders import build_job_objects
from strom_operator.resources.labels import FlinkJobRef

from tests.operator.chart_rendering import render
from tests.operator.fakes import make_spec

# (Kubernetes type, field) -> the list's map keys.
LIST_MAP_KEYS: dict[tuple[str, str], tuple[str, ...]] = {
    ("PodSpec", "containers"): ("name",),
    ("PodSpec", "initContainers"): ("name",),
    ("PodSpec", "ephemeralContainers"): ("name",),
    ("PodSpec", "volumes"): ("name",),
    ("PodSpec", "imagePullSecrets"): ("name",),
    ("PodSpec", "hostAliases"): ("ip",),
    ("PodSpec", "topologySpreadConstraints"): ("topologyKey", "whenUnsatisfiable"),
    ("PodSpec", "resourceClaims"): ("name",),
    ("PodSpec", "schedulingGates"): ("name",),
    ("Container", "ports"): ("containerPort", "protocol"),
    ("Container", "env"): ("name",),
    ("Container", "volumeMounts"): ("mountPath",),
    ("Container", "volumeDevices"): ("devicePath",),
    ("ServiceSpec", "ports"): ("port", "protocol"),
}
# Where the typed parts of an object are: (type, field) -> the field's type (a list's items' type).
FIELD_TYPES: dict[tuple[str, str], str] = {
    ("Deployment", "spec"): "DeploymentSpec",
    ("DeploymentSpec", "template"): "PodTemplateSpec",
    ("PodTemplateSpec", "spec"): "PodSpec",
    ("Pod", "spec"): "PodSpec",
    ("PodSpec", "containers"): "Container",
    ("PodSpec", "initContainers"): "Container",
    ("PodSpec", "ephemeralContainers"): "Container",
    ("Service", "spec"): "ServiceSpec",
}


def missing_keys(obj: dict[str, Any]) -> list[str]:
    """'path: key' for each element of an associative list that lacks one of the list's keys."""
    return list(_walk(obj, obj["kind"], f"{obj['kind']}/{obj['metadata']['name']}"))


def _walk(node: Any, type_: str, path: str) -> Iterator[str]:
    if not isinstance(node, dict):
        return
    for field, value in node.items():
        keys = LIST_MAP_KEYS.get((type_, field), ())
        sub = FIELD_TYPES.get((type_, field))
        if isinstance(value, list):
            for i, item in enumerate(value):
                for key in keys:
                    if not isinstance(item, dict) or item.get(key) in (None, ""):
                        yield f"{path}.{field}[{i}]: {key}"
                if sub is not None:
                    yield from _walk(item, sub, f"{path}.{field}[{i}]")
        elif sub is not None:
            yield from _walk(value, sub, f"{path}.{field}")


REF = FlinkJobRef("wordcount", "streams", "uid-1")
USER_TEMPLATE = {"spec": {
    "containers": [{"name": "flink-main-container", "env": [{"name": "EXTRA", "value": "1"}],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]},
                   {"name": "sidecar", "image": "busybox", "ports": [{"containerPort": 8000, "protocol": "TCP"}]}],
    "volumes": [{"name": "scratch", "emptyDir": {}}],
    "imagePullSecrets": [{"name": "registry"}],
}}


def _operator_objects() -> list[dict[str, Any]]:
    streaming = make_spec(podTemplate=USER_TEMPLATE, s3={"credentialsSecret": "s3", "endpoint": "http://minio:9000"})
    batch = make_spec(mode="batch", podTemplate=USER_TEMPLATE, spark={"executor": {"instances": 2}})
    executor = yaml.safe_load(build_spark_configmap(REF, batch)["data"][EXECUTOR_TEMPLATE_FILE])
    return [*build_job_objects(REF, streaming, vertex_parallelism={"a": 3}),
            *driver_objects(REF, batch, submission=1),
            {**executor, "metadata": {**executor.get("metadata", {}), "name": "executor-template"}},
            build_autoscaler_configmap(REF, AutoscalerState())]


@pytest.mark.parametrize("values", [{}, {"rbac": {"clusterWide": True}, "serviceMonitor": {"enabled": True},
                                         "podMonitor": {"enabled": True}, "imagePullSecrets": [{"name": "r"}]}])
def test_the_charts_objects_carry_every_list_key(values):
    docs = render(values)
    assert {"Deployment", "Service"} <= {d["kind"] for d in docs}
    assert [m for d in docs for m in missing_keys(d)] == []


def test_the_operators_objects_carry_every_list_key():
    objects = _operator_objects()
    assert {"Deployment", "Service", "ConfigMap", "Pod"} <= {o["kind"] for o in objects}
    assert [m for o in objects for m in missing_keys(o)] == []


def test_the_check_finds_a_port_without_its_protocol():
    deployment = {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [
        {"name": "c", "ports": [{"name": "health", "containerPort": 8080}], "env": [{"value": "x"}]}]}}}}
    service = {"kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "protocol": "TCP"},
                                                                                {"port": 81}]}}
    assert missing_keys(deployment) == ["Deployment/d.spec.template.spec.containers[0].ports[0]: protocol",
                                        "Deployment/d.spec.template.spec.containers[0].env[0]: name"]
    assert missing_keys(service) == ["Service/s.spec.ports[1]: protocol"]
