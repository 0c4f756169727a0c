"""The Helm chart: lint, render with helm-python-sdk (offline), CRD copy, least-privilege RBAC."""

from __future__ import annotations

import os

import pytest
import yaml
from strom_operator.crd import CHART_CRD_FILE, CRD_FILE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "charts", "strom-operator")
helm = pytest.importorskip("helm_python", reason="helm-python-sdk is in the [test] extra (Linux x86_64)")


def _render(values: dict) -> list[dict]:
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(values, name="strom", namespace="ops")
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]


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


def test_rbac_grants_exactly_what_the_operator_uses():
    role = next(d for d in _render({}) if d["kind"] == "Role")
    grants = {(g, r): set(rule["verbs"])
              for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    crud = {"get", "list", "watch", "create", "patch", "update", "delete"}
    assert grants[("strom.io", "flinkjobs")] == {"get", "list", "watch", "patch", "update"}
    assert grants[("strom.io", "flinkjobs/status")] == {"get", "patch", "update"}
    assert grants[("strom.io", "flinkjobs/scale")] == {"get", "patch", "update"}
    assert grants[("apps", "deployments")] == crud
    assert grants[("", "services")] == crud
    # batch FlinkJobs (strom_operator/batch): driver pods, executor cleanup, the driver's Role (batch/driver.py)
    assert grants[("", "configmaps")] == crud | {"deletecollection"}
    driver_rule = {"get", "list", "watch", "create", "patch", "delete", "deletecollection"}
    assert grants[("", "pods")] == driver_rule and grants[("", "persistentvolumeclaims")] == driver_rule
    assert grants[("", "serviceaccounts")] == {"get", "create", "patch"}
    assert grants[("rbac.authorization.k8s.io", "roles")] == grants[("rbac.authorization.k8s.io", "rolebindings")] \
        == {"get", "create", "patch"}
    assert grants[("", "secrets")] == {"get"}
    assert grants[("", "events")] == {"create", "patch"}
    assert all("*" not in verbs for verbs in grants.values()) and ("", "*") not in grants
    assert set(grants) == {("strom.io", "flinkjobs"), ("strom.io", "flinkjobs/status"), ("strom.io", "flinkjobs/scale"),
                           ("apps", "deployments"), ("", "services"), ("", "configmaps"), ("", "pods"),
                           ("", "secrets"), ("", "events"), ("events.k8s.io", "events"),
                           ("", "persistentvolumeclaims"), ("", "serviceaccounts"),
                           ("rbac.authorization.k8s.io", "roles"), ("rbac.authorization.k8s.io", "rolebindings")}
