"""The chart's RBAC is exactly what the operator calls, in both modes, and Secrets only where chosen.

The table below is the audit: each grant names the code that needs it. A grant the code stops
using, or a call the code starts making, changes this table and the chart's _helpers.tpl together.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.operator.chart_rendering import RELEASE_NAMESPACE, render

Grants = dict[tuple[str, str], frozenset[str]]
SPREAD = ("get", "list", "watch", "create", "patch", "delete", "deletecollection")

# (apiGroup, resource, verbs, who needs it). Server-side apply of an object that does not exist yet
# is authorized as patch and create (the API server's patch handler checks "create" for that name).
NAMESPACED: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("strom.io", "flinkjobs", ("list", "watch"), "kopf's watch of FlinkJobs (handlers.py)"),
    ("strom.io", "flinkjobs", ("patch",), "kopf: finalizer, progress and diff-base annotations"),
    ("strom.io", "flinkjobs", ("get",), "reconciler.py reads the FlinkJob afresh before each pass"),
    ("strom.io", "flinkjobs/status", ("patch",), "reconciler._write_status: merge patch of status"),
    ("strom.io", "flinkjobs/finalizers", ("update",),
     "ownerReferences with blockOwnerDeletion (labels.owner_reference) under OwnerReferencesPermissionEnforcement"),
    ("apps", "deployments", ("list", "watch"), "kopf's index of the job's Deployments (handlers.owned_deployments)"),
    ("apps", "deployments", ("get",), "observer.owned_objects until the watch shows the operator's own apply/delete"),
    ("apps", "deployments", ("create", "patch"), "kube.apply of build_job_objects (reconciler DeployJob)"),
    ("apps", "deployments", ("delete",), "reconciler DeleteDeployments (upgrades, suspend)"),
    ("", "services", ("create", "patch"), "kube.apply: the JobManager Service, a batch job's driver Service"),
    ("", "configmaps", ("get",), "autoscaling.py reads the autoscaler's ConfigMap; sql_checker.py spec.job.sqlFrom's"),
    ("", "configmaps", ("create", "patch"), "kube.apply: the job's config, the autoscaler's state, Spark's conf"),
    ("", "pods", ("list", "watch"), "kopf's index of the job's pods (handlers.owned_pods); batch_reconciler"),
    ("", "pods", ("list",), "observer.owned_objects before the index is attached; batch_reconciler (drivers)"),
    ("", "pods", ("get", "create", "delete"), "batch_reconciler: the driver pod; executor cleanup"),
    # batch/driver.py DRIVER_RULES: the driver's Role, which the operator may only grant holding it.
    ("", "pods", SPREAD, "escalation check on batch/driver.py's Role for the Spark driver"),
    ("", "configmaps", SPREAD, "escalation check on batch/driver.py's Role for the Spark driver"),
    ("", "persistentvolumeclaims", SPREAD, "escalation check on batch/driver.py's Role for the Spark driver"),
    ("", "serviceaccounts", ("create", "patch"), "kube.apply of batch/driver.py's ServiceAccount"),
    ("rbac.authorization.k8s.io", "roles", ("create", "patch"), "kube.apply of batch/driver.py's Role"),
    ("rbac.authorization.k8s.io", "rolebindings", ("create", "patch"), "kube.apply of batch/driver.py's RoleBinding"),
    ("", "events", ("create",), "kopf.event via handlers._post_event, and kopf's own warnings"),
    ("", "events", ("patch",), "event_recorder.py: a repeated Event's count and lastTimestamp"),
    ("", "secrets", ("create",), "owned_secrets.ensure_cluster_secret (reconciler DeployJob): create, 409 = there"),
    ("", "secrets", ("create",), "owned_secrets.ensure_tls_secret: the generated <name>-tls, created once"),
    ("networking.k8s.io", "networkpolicies", ("create", "patch"),
     "kube.apply of network_policy.build_network_policy (build_job_objects, reconciler DeployJob)"),
    ("networking.k8s.io", "ingresses", ("create", "patch"),
     "kube.apply of ingress.build_ingress (build_job_objects with spec.ingress, reconciler DeployJob)"),
    ("networking.k8s.io", "ingresses", ("delete",),
     "reconciler DeployJob without spec.ingress: kube.delete of ingress_name (a removed spec.ingress)"),
)
SECRETS = ("", "secrets", ("get",), "reconciler._s3_access / secret_cache.py: spec.s3.credentialsSecret; "
           "jobmanager_tls.follow_deployed_tls and owned_secrets.ensure_tls_secret read <name>-tls")
# Only with certManager.enabled: spec.security.tls.issuerRef makes the operator apply a Certificate.
CERT_MANAGER = ("cert-manager.io", "certificates", ("create", "patch"),
                "kube.apply of tls_secret.build_certificate (owned_secrets.ensure_tls_secret)")
# Cluster-wide, kopf watches CRDs (kopf's resource_observer); namespaces it never lists when it watches
# all of them. Namespaced, nothing cluster-scoped: kopf's scanning is off (main.py) and finds 403 nowhere.
CLUSTER_ONLY = (("apiextensions.k8s.io", "customresourcedefinitions", ("list", "watch"),
                 "kopf's resource_observer: the FlinkJob CRD coming and going"),)


def _table(*rows: tuple[str, str, tuple[str, ...], str]) -> Grants:
    grants: dict[tuple[str, str], set[str]] = {}
    for group, resource, verbs, _why in rows:
        grants.setdefault((group, resource), set()).update(verbs)
    return {k: frozenset(v) for k, v in grants.items()}


def _grants(role: dict[str, Any]) -> Grants:
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert "resourceNames" not in rule or rule["resources"] == ["secrets"], rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    return {k: frozenset(v) for k, v in grants.items()}


def _roles(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _bound_to_the_operator(docs: list[dict[str, Any]], role: dict[str, Any]) -> bool:
    kind = "ClusterRoleBinding" if role["kind"] == "ClusterRole" else "RoleBinding"
    return any(b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role["kind"],
                                "name": role["metadata"]["name"]}
               and b["metadata"].get("namespace") == role["metadata"].get("namespace")
               and b["subjects"] == [{"kind": "ServiceAccount", "name": "strom-strom-operator",
                                      "namespace": RELEASE_NAMESPACE}]
               for b in _roles(docs, kind))


@pytest.mark.parametrize("values, namespaces", [({}, [RELEASE_NAMESPACE]),
                                                ({"watchNamespaces": ["a", "b"]}, ["a", "b"])])
def test_namespaced_mode_grants_the_table_in_each_watched_namespace_and_nothing_cluster_wide(values, namespaces):
    docs = render(values)
    assert _roles(docs, "ClusterRole") == [] and _roles(docs, "ClusterRoleBinding") == []
    roles = _roles(docs, "Role")
    assert sorted(r["metadata"]["namespace"] for r in roles) == namespaces
    for role in roles:
        assert _grants(role) == _table(*NAMESPACED, SECRETS)
        assert _bound_to_the_operator(docs, role)


def test_cluster_wide_mode_grants_the_table_and_no_secret_to_read():
    docs = render({"rbac": {"clusterWide": True}})
    [role] = _roles(docs, "ClusterRole")
    assert _grants(role) == _table(*NAMESPACED, *CLUSTER_ONLY)
    assert _grants(role)[("", "secrets")] == {"create"}  # its FlinkJobs' cluster secrets: no Secret is readable
    assert ("", "namespaces") not in _grants(role)
    assert _roles(docs, "Role") == [] and _bound_to_the_operator(docs, role)


def test_cluster_wide_secrets_by_name_in_every_namespace():
    docs = render({"rbac": {"clusterWide": True, "secrets": {"names": ["s3-credentials"]}}})
    [role] = _roles(docs, "ClusterRole")
    assert _grants(role) == _table(*NAMESPACED, *CLUSTER_ONLY, SECRETS)
    [rule] = [r for r in role["rules"] if r["resources"] == ["secrets"] and "get" in r["verbs"]]
    assert rule["resourceNames"] == ["s3-credentials"]


def test_cluster_wide_secrets_in_chosen_namespaces_only():
    docs = render({"rbac": {"clusterWide": True, "secrets": {"namespaces": ["jobs"], "allNamespaces": True}}})
    [cluster_role] = _roles(docs, "ClusterRole")
    assert _grants(cluster_role)[("", "secrets")] == {"create"}
    [role] = _roles(docs, "Role")
    assert role["metadata"]["namespace"] == "jobs" and _grants(role) == _table(SECRETS)
    assert _bound_to_the_operator(docs, role)


def test_every_secret_of_the_cluster_only_when_asked_for():
    docs = render({"rbac": {"clusterWide": True, "secrets": {"allNamespaces": True}}})
    [role] = _roles(docs, "ClusterRole")
    [rule] = [r for r in role["rules"] if r["resources"] == ["secrets"] and "get" in r["verbs"]]
    assert rule["verbs"] == ["get"] and "resourceNames" not in rule


def test_named_secrets_in_namespaced_mode():
    [role] = _roles(render({"rbac": {"secrets": {"names": ["s3"]}}}), "Role")
    [rule] = [r for r in role["rules"] if r["resources"] == ["secrets"] and "get" in r["verbs"]]
    assert rule == {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["s3"]}


def test_no_wildcards_and_none_of_the_grants_the_operator_never_used():
    for values in ({}, {"rbac": {"clusterWide": True, "secrets": {"allNamespaces": True}}}):
        for role in _roles(render(values), "Role") + _roles(render(values), "ClusterRole"):
            grants = _grants(role)
            assert all("*" not in verbs and "update" not in verbs for (_, r), verbs in grants.items()
                       if r != "flinkjobs/finalizers")
            assert not {("strom.io", "flinkjobs/scale"), ("events.k8s.io", "events"), ("", "namespaces")} & set(grants)
            assert all(k[1] != "*" and k[0] != "*" for k in grants)


def test_rbac_off_renders_no_role():
    docs = render({"rbac": {"create": False}})
    assert not {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} & {d["kind"] for d in docs}


@pytest.mark.parametrize("values", [{}, {"rbac": {"clusterWide": True}}])
def test_cert_manager_certificates_only_when_enabled(values):
    kind = "ClusterRole" if values else "Role"
    [without] = _roles(render(values), kind)
    assert ("cert-manager.io", "certificates") not in _grants(without)
    [role] = _roles(render({**values, "certManager": {"enabled": True}}), kind)
    extra = (*CLUSTER_ONLY,) if values else (SECRETS,)
    assert _grants(role) == _table(*NAMESPACED, *extra, CERT_MANAGER)
