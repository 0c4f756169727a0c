"""The Helm chart: lint, render with helm-python-sdk (offline), CRD copy, least-privilege RBAC, the PodMonitor."""

from __future__ import annotations

import os

import pytest
import yaml
from strom_operator.crd.definition import CHART_CRD_FILE, CRD_FILE

from tests.operator.chart_rendering import CHART, ROOT, helm_sdk
from tests.operator.chart_rendering import render as _render

helm = helm_sdk()


def _kinds(docs: list[dict]) -> list[tuple[str, str | None]]:
    return sorted((d["kind"], d["metadata"].get("namespace")) for d in docs)


def test_chart_lints_clean():
    report = helm.lint(CHART, strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_chart_files_are_valid_yaml():
    for name in ("Chart.yaml", "values.yaml"):
        with open(os.path.join(CHART, name), encoding="utf-8") as f:
            assert isinstance(yaml.safe_load(f), dict)


def test_chart_crd_is_the_repository_crd():
    with open(os.path.join(ROOT, CRD_FILE), encoding="utf-8") as a, open(os.path.join(ROOT, CHART_CRD_FILE),
                                                                          encoding="utf-8") as b:
        assert a.read() == b.read()
    with helm.Chart.load(CHART) as chart:
        assert [c["filename"] for c in chart.crds] == ["strom-operator/crds/flinkjobs.strom.io.yaml"]


def test_defaults_render_a_namespaced_operator_for_the_release_namespace():
    docs = _render({})
    assert _kinds(docs) == [("Deployment", "ops"), ("Role", "ops"), ("RoleBinding", "ops"), ("Service", "ops"),
                            ("ServiceAccount", "ops")]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["strom-operator"]
    assert "--namespace=ops" in container["args"] and "--log-level=INFO" in container["args"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_watched_namespaces_get_a_role_each():
    docs = _render({"watchNamespaces": ["a", "b"], "logLevel": "DEBUG"})
    roles = sorted(d["metadata"]["namespace"] for d in docs if d["kind"] == "Role")
    assert roles == ["a", "b"]
    container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert {"--namespace=a", "--namespace=b", "--log-level=DEBUG"} <= set(container["args"])


def test_cluster_wide_rbac_and_service_monitor_by_value():
    docs = _render({"rbac": {"clusterWide": True}, "serviceMonitor": {"enabled": True}, "metrics": {"port": 9100}})
    kinds = {d["kind"] for d in docs}
    assert {"ClusterRole", "ClusterRoleBinding", "ServiceMonitor"} <= kinds and "Role" not in kinds
    container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert "--all-namespaces" in container["args"] and "--metrics-port=9100" in container["args"]
    service = next(d for d in docs if d["kind"] == "Service")
    assert service["spec"]["ports"][0]["port"] == 9100


def _selects(selector: dict, labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels and matchExpressions), evaluated as the API server does."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or ():
        key, op, values = e["key"], e["operator"], e.get("values") or []
        ok = {"In": key in labels and labels[key] in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def _flinkjob_deployments() -> list[dict]:
    from strom_operator.resources.jobmanager_deployment import build_jobmanager_deployment
    from strom_operator.resources.labels import FlinkJobRef
    from strom_operator.resources.taskmanager_deployment import build_taskmanager_deployment

    from tests.operator.fakes import make_spec

    ref = FlinkJobRef("wordcount", "streams", "uid-1")
    # a user template's labels must not take the pods out of the PodMonitor's sight
    spec = make_spec(podTemplate={"metadata": {"labels": {"app.kubernetes.io/managed-by": "someone-else"}}})
    return [build_jobmanager_deployment(ref, spec), build_taskmanager_deployment(ref, spec)]


def test_pod_monitor_only_when_enabled():
    assert "PodMonitor" not in {d["kind"] for d in _render({})}
    assert [d["kind"] for d in _render({"podMonitor": {"enabled": True}})].count("PodMonitor") == 1


def test_pod_monitor_scrapes_the_metrics_port_of_the_pods_the_builders_make():
    monitor = next(d for d in _render({"podMonitor": {"enabled": True, "labels": {"release": "prom"}}})
                   if d["kind"] == "PodMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    for deployment in _flinkjob_deployments():
        pod = deployment["spec"]["template"]
        assert _selects(monitor["spec"]["selector"], pod["metadata"]["labels"]), deployment["metadata"]["name"]
        ports = {p["name"]: p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", ())}
        assert endpoint["port"] in ports
        assert endpoint["path"] == pod["metadata"]["annotations"]["prometheus.io/path"]
        assert str(ports[endpoint["port"]]) == pod["metadata"]["annotations"]["prometheus.io/port"]
    # not the operator's own pod, nor a batch job's driver
    operator_pod = next(d for d in _render({}) if d["kind"] == "Deployment")["spec"]["template"]
    assert not _selects(monitor["spec"]["selector"], operator_pod["metadata"]["labels"])
    assert not _selects(monitor["spec"]["selector"], {"app.kubernetes.io/name": "strom",
                                                      "app.kubernetes.io/component": "driver"})


@pytest.mark.parametrize("values, namespaces", [
    ({}, {"matchNames": ["ops"]}),
    ({"watchNamespaces": ["a", "b"]}, {"matchNames": ["a", "b"]}),
    ({"rbac": {"clusterWide": True}}, {"any": True}),
])
def test_pod_monitor_looks_in_the_watched_namespaces(values, namespaces):
    docs = _render({**values, "podMonitor": {"enabled": True}})
    monitor = next(d for d in docs if d["kind"] == "PodMonitor")
    assert monitor["metadata"]["namespace"] == "ops"
    assert monitor["spec"]["namespaceSelector"] == namespaces
