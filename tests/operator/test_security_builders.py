"""spec.security's objects, built offline: the NetworkPolicy judged by a NetworkPolicy evaluator written
here from Kubernetes' documented semantics, the pods' securityContext and writable directories, the TLS
volume and the engine keys of the contract (common-s25's table, copied here), the cert-manager Certificate."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import pytest
import yaml
from strom_operator.batch.driver import build_executor_pod_template, driver_objects
from strom_operator.crd.spec import FlinkJobSpec, IssuerRef
from strom_operator.lifecycle.validation import validate_flinkjob_spec
from strom_operator.resources.builders import build_job_objects
from strom_operator.resources.configmap import build_configmap
from strom_operator.resources.jobmanager_deployment import build_jobmanager_deployment
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.network_policy import OperatorPods, build_network_policy
from strom_operator.resources.taskmanager_deployment import build_taskmanager_deployment
from strom_operator.resources.tls_secret import build_certificate

from tests.operator.fakes import make_spec

REF = FlinkJobRef("wordcount", "streams", "uid-1")
OPERATOR = OperatorPods("ops", {"app.kubernetes.io/name": "strom-operator", "app.kubernetes.io/instance": "strom"})
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The contract of common-s25 ("Operator-generated material"), written out.
CONTRACT_KEYS = {
    "security.ssl.internal.enabled": "true",
    "security.ssl.internal.keystore-type": "PEM",
    "security.ssl.internal.keystore": "/opt/strom/tls/tls.crt",
    "security.ssl.internal.key": "/opt/strom/tls/tls.key",
    "security.ssl.internal.truststore": "/opt/strom/tls/ca.crt",
    "security.ssl.rest.enabled": "true",
    "security.ssl.rest.authentication-enabled": "true",
    "security.ssl.rest.keystore-type": "PEM",
    "security.ssl.rest.keystore": "/opt/strom/tls/tls.crt",
    "security.ssl.rest.key": "/opt/strom/tls/tls.key",
    "security.ssl.rest.truststore": "/opt/strom/tls/ca.crt",
}


def _pod(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment["spec"]["template"]


def _tls_spec(**security: Any) -> FlinkJobSpec:
    return make_spec(security={"tls": {"enabled": True}, **security})


# -- NetworkPolicy ---------------------------------------------------------------------------------


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector: matchLabels all equal, every matchExpression holds; {} selects everything."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or ():
        key, op, values = req["key"], req["operator"], req.get("values") or []
        ok = {"In": key in labels and labels[key] in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def _allowed(policy: dict[str, Any], *, to: Mapping[str, str], port: int, src_namespace: str,
             src_labels: Mapping[str, str], src_namespace_labels: Mapping[str, str]) -> bool:
    """Whether `policy` (in its namespace) lets a pod in `src_namespace` connect to a pod labelled `to` on
    TCP `port`: Kubernetes' rules. A pod the policy does not select is not isolated by it."""
    spec = policy["spec"]
    if not _selects(spec["podSelector"], to) or "Ingress" not in spec.get("policyTypes", ["Ingress"]):
        return True
    for rule in spec.get("ingress") or ():
        ports = rule.get("ports")
        if ports and not any(p.get("protocol", "TCP") == "TCP" and p["port"] == port for p in ports):
            continue
        peers = rule.get("from")
        if not peers:
            return True
        for peer in peers:
            ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
            ns_ok = _selects(ns_sel, src_namespace_labels) if ns_sel is not None else (
                src_namespace == policy["metadata"]["namespace"])
            if ns_ok and (pod_sel is None or _selects(pod_sel, src_labels)):
                return True
    return False


JM = {"app.kubernetes.io/name": "strom", "app.kubernetes.io/instance": "wordcount",
      "app.kubernetes.io/component": "jobmanager"}
TM = {**JM, "app.kubernetes.io/component": "taskmanager"}
OTHER_JOB_TM = {**TM, "app.kubernetes.io/instance": "other"}
OPERATOR_POD = {"app.kubernetes.io/name": "strom-operator", "app.kubernetes.io/instance": "strom",
                "pod-template-hash": "abc"}
PROMETHEUS = {"app": "prometheus"}


def _ns(name: str, **labels: str) -> tuple[str, dict[str, str]]:
    return name, {"kubernetes.io/metadata.name": name, **labels}


STREAMS, OPS, MONITORING, ELSEWHERE = (_ns("streams"), _ns("ops"), _ns("monitoring", purpose="monitoring"),
                                       _ns("elsewhere"))
# (source namespace, source pod labels, destination pod, port, allowed?) for 2 slots per TaskManager.
CONNECTIONS = [
    (STREAMS, TM, JM, 6123, True),        # a TaskManager registers with the JobManager
    (STREAMS, TM, TM, 6121, True),        # records between TaskManagers, slot 0
    (STREAMS, TM, TM, 6122, True),        # slot 1
    (STREAMS, JM, JM, 8081, True),        # the job's own pods on REST
    (STREAMS, TM, TM, 6123, True),        # RPC port on a TaskManager: not served there, but the job's own
    (STREAMS, TM, TM, 6124, False),       # no slot 3
    (STREAMS, OTHER_JOB_TM, JM, 6123, False),  # another job in the same namespace
    (STREAMS, OTHER_JOB_TM, TM, 6121, False),
    (STREAMS, OPERATOR_POD, JM, 8081, False),  # operator labels, but not the operator's namespace
    (OPS, OPERATOR_POD, JM, 8081, True),  # the operator on REST
    (OPS, OPERATOR_POD, JM, 6123, False),  # and nowhere else
    (OPS, OPERATOR_POD, TM, 6121, False),
    (OPS, {"app": "other"}, JM, 8081, False),
    (MONITORING, PROMETHEUS, TM, 9249, True),  # metrics open to every namespace by default
    (ELSEWHERE, PROMETHEUS, JM, 9249, True),
    (MONITORING, PROMETHEUS, JM, 8081, False),
    (ELSEWHERE, {}, JM, 6123, False),
]


@pytest.mark.parametrize("source, src_labels, destination, port, allowed", CONNECTIONS)
def test_the_network_policy_lets_only_the_job_and_the_operator_in(source, src_labels, destination, port, allowed):
    policy = build_network_policy(REF, make_spec(taskManager__slots=2), OPERATOR)
    assert _allowed(policy, to=destination, port=port, src_namespace=source[0], src_labels=src_labels,
                    src_namespace_labels=source[1]) is allowed


def test_metrics_only_from_the_selected_namespaces():
    selector = {"matchLabels": {"purpose": "monitoring"}}
    spec = make_spec(security={"networkPolicy": {"metricsNamespaceSelector": selector}})
    policy = build_network_policy(REF, spec, OPERATOR)
    for (namespace, ns_labels), allowed in ((MONITORING, True), (ELSEWHERE, False), (STREAMS, False)):
        assert _allowed(policy, to=TM, port=9249, src_namespace=namespace, src_labels=PROMETHEUS,
                        src_namespace_labels=ns_labels) is allowed
    assert _allowed(policy, to=TM, port=9249, src_namespace="streams", src_labels=TM,
                    src_namespace_labels=STREAMS[1]) is False  # metrics is not one of the job's internal ports


def test_the_policy_is_ingress_only_names_every_port_with_its_protocol_and_is_owned():
    policy = build_network_policy(REF, make_spec(taskManager__slots=3), OPERATOR)
    assert policy["apiVersion"] == "networking.k8s.io/v1" and policy["metadata"]["name"] == "wordcount"
    assert policy["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress stays open: S3, Kafka
    # (rule, port): the job's own pods on RPC, REST and three data ports (slot 2's is 6123 as RPC's, once);
    # the operator on REST; metrics
    ports = [(i, p["port"]) for i, rule in enumerate(policy["spec"]["ingress"]) for p in rule["ports"]]
    assert ports == [(0, 6121), (0, 6122), (0, 6123), (0, 8081), (1, 8081), (2, 9249)]
    assert all(p["protocol"] == "TCP" for rule in policy["spec"]["ingress"] for p in rule["ports"])


def test_an_operator_in_the_jobs_namespace_is_selected_by_pod_labels_there():
    policy = build_network_policy(REF, make_spec(), OperatorPods("streams", OPERATOR.labels))
    assert _allowed(policy, to=JM, port=8081, src_namespace="streams", src_labels=OPERATOR_POD,
                    src_namespace_labels={}) is True  # no namespace label needed (Kubernetes before v1.21)
    assert _allowed(policy, to=JM, port=8081, src_namespace="ops", src_labels=OPERATOR_POD,
                    src_namespace_labels=OPS[1]) is False


def test_without_a_known_operator_nothing_outside_the_job_reaches_rest():
    policy = build_network_policy(REF, make_spec(), None)
    assert _allowed(policy, to=JM, port=8081, src_namespace="ops", src_labels=OPERATOR_POD,
                    src_namespace_labels=OPS[1]) is False
    assert _allowed(policy, to=JM, port=8081, src_namespace="streams", src_labels=TM,
                    src_namespace_labels=STREAMS[1]) is True


def test_the_operators_pods_come_from_the_charts_environment():
    env = {"STROM_OPERATOR_NAMESPACE": "ops",
           "STROM_OPERATOR_POD_LABELS": "app.kubernetes.io/name=strom-operator,app.kubernetes.io/instance=strom"}
    assert OperatorPods.from_env(env) == OPERATOR
    assert OperatorPods.from_env({}) is None and OperatorPods.from_env({"STROM_OPERATOR_NAMESPACE": "ops"}) is None
    with pytest.raises(ValueError, match="STROM_OPERATOR_POD_LABELS term 'oops'"):
        OperatorPods.from_env({**env, "STROM_OPERATOR_POD_LABELS": "a=b,oops"})


def test_the_policy_is_applied_before_the_pods_and_can_be_turned_off():
    kinds = [o["kind"] for o in build_job_objects(REF, make_spec(), operator=OPERATOR)]
    assert kinds.index("NetworkPolicy") < kinds.index("Deployment")
    off = make_spec(security={"networkPolicy": {"enabled": False}})
    assert "NetworkPolicy" not in [o["kind"] for o in build_job_objects(REF, off, operator=OPERATOR)]


# -- securityContext -------------------------------------------------------------------------------


def _image_user() -> int:
    """The uid runtime-image/Dockerfile's USER names."""
    with open(os.path.join(ROOT, "runtime-image", "Dockerfile"), encoding="utf-8") as f:
        text = f.read()
    [user] = re.findall(r"^USER (\d+)(?::\d+)?$", text, re.M)
    assert f"--uid {user}" in text  # the user exists in the image
    return int(user)


POD_CONTEXT = {"runAsNonRoot": True, "runAsUser": _image_user(), "runAsGroup": _image_user(),
               "fsGroup": _image_user(), "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_CONTEXT = {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                     "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
# Where the engine writes (tempfile, the default cluster-secret file ~/.strom with HOME /opt/strom, the image's
# local state directory); Spark: its scratch space.
ENGINE_WRITES = {"/tmp", "/opt/strom/.strom", "/opt/strom/state"}
SPARK_WRITES = {"/tmp"}


def _pods() -> list[tuple[dict[str, Any], set[str]]]:
    spec = make_spec()
    batch = FlinkJobSpec.from_dict({"image": "strom/runtime:test", "mode": "batch", "job": {"entry": "/opt/job.py"}})
    driver = next(o for o in driver_objects(REF, batch, submission=1) if o["kind"] == "Pod")
    return [(_pod(build_jobmanager_deployment(REF, spec)), ENGINE_WRITES),
            (_pod(build_taskmanager_deployment(REF, spec)), ENGINE_WRITES),
            (driver, SPARK_WRITES), (build_executor_pod_template(REF, batch), SPARK_WRITES)]


@pytest.mark.parametrize("index", range(4), ids=["jobmanager", "taskmanager", "spark-driver", "spark-executor"])
def test_pods_run_non_root_read_only_without_privileges_and_can_write_where_they_write(index):
    pod, writes = _pods()[index]
    assert pod["spec"]["securityContext"] == POD_CONTEXT
    [container] = pod["spec"]["containers"]
    assert container["securityContext"] == CONTAINER_CONTEXT
    empty_dirs = {v["name"] for v in pod["spec"]["volumes"] if v.get("emptyDir") == {}}
    writable = {m["mountPath"] for m in container["volumeMounts"] if m["name"] in empty_dirs and not m.get("readOnly")}
    assert writable == writes
    assert all(m.get("readOnly") for m in container["volumeMounts"] if m["mountPath"] not in writes)


def test_a_pod_template_may_override_the_user():
    spec = make_spec(podTemplate={"spec": {"securityContext": {"runAsUser": 2000},
                                           "containers": [{"name": "flink-main-container",
                                                           "securityContext": {"readOnlyRootFilesystem": False}}]}})
    pod = _pod(build_taskmanager_deployment(REF, spec))
    assert pod["spec"]["securityContext"] == {**POD_CONTEXT, "runAsUser": 2000}
    assert pod["spec"]["containers"][0]["securityContext"] == {**CONTAINER_CONTEXT, "readOnlyRootFilesystem": False}


# -- TLS in the pods and the configuration ---------------------------------------------------------


def test_tls_writes_exactly_the_contracts_keys_and_mounts_the_secret_read_only_in_both_pods():
    spec = _tls_spec()
    conf = yaml.safe_load(build_configmap(REF, spec)["data"]["config.yaml"])
    assert {k: v for k, v in conf.items() if k.startswith("security.ssl.")} == CONTRACT_KEYS
    for deployment in (build_jobmanager_deployment(REF, spec), build_taskmanager_deployment(REF, spec)):
        pod = _pod(deployment)["spec"]
        [volume] = [v for v in pod["volumes"] if "secret" in v]
        assert volume["secret"] == {"secretName": "wordcount-tls", "defaultMode": 0o440,
                                    "items": [{"key": k, "path": k} for k in ("tls.crt", "tls.key", "ca.crt")]}
        [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == volume["name"]]
        assert mount == {"name": volume["name"], "mountPath": "/opt/strom/tls", "readOnly": True}


def test_without_tls_no_secret_volume_and_no_ssl_key():
    spec = make_spec()
    conf = yaml.safe_load(build_configmap(REF, spec)["data"]["config.yaml"])
    assert not [k for k in conf if k.startswith("security.ssl.")]
    for deployment in (build_jobmanager_deployment(REF, spec), build_taskmanager_deployment(REF, spec)):
        assert not [v for v in _pod(deployment)["spec"]["volumes"] if "secret" in v]


def test_with_tls_the_jobmanager_is_ready_when_its_rest_port_accepts_connections():
    """REST asks every client for a certificate the kubelet's HTTP probe does not have."""
    plain = _pod(build_jobmanager_deployment(REF, make_spec()))["spec"]["containers"][0]["readinessProbe"]
    tls = _pod(build_jobmanager_deployment(REF, _tls_spec()))["spec"]["containers"][0]["readinessProbe"]
    assert plain["httpGet"] == {"path": "/overview", "port": "rest"} and "tcpSocket" not in plain
    assert tls["tcpSocket"] == {"port": "rest"} and "httpGet" not in tls


def test_the_certificate_asks_cert_manager_for_the_secret_with_the_service_names():
    cert = build_certificate(REF, IssuerRef("job-ca", "ClusterIssuer", "cert-manager.io"))
    assert (cert["apiVersion"], cert["kind"], cert["metadata"]["name"]) == ("cert-manager.io/v1", "Certificate",
                                                                           "wordcount-tls")
    assert cert["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert cert["spec"] == {
        "secretName": "wordcount-tls",
        "issuerRef": {"name": "job-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
        "commonName": "wordcount-jobmanager",
        "dnsNames": ["wordcount-jobmanager", "wordcount-jobmanager.streams", "wordcount-jobmanager.streams.svc",
                     "wordcount-jobmanager.streams.svc.cluster.local"],
        "duration": "8760h", "renewBefore": "720h",
        "usages": ["digital signature", "key encipherment", "server auth", "client auth"],
    }


def test_the_spec_defaults_tls_off_and_the_network_policy_on():
    spec = make_spec()
    assert spec.security.tls.enabled is False and spec.security.tls.issuer_ref is None
    policy = spec.security.network_policy
    assert policy.enabled is True and policy.metrics_namespace_selector is None
    issued = make_spec(security={"tls": {"enabled": True, "issuerRef": {"name": "ca"}}})
    assert issued.security.tls.issuer_ref == IssuerRef("ca", "Issuer", "cert-manager.io")
    assert FlinkJobSpec.from_dict(issued.to_dict()) == issued


@pytest.mark.parametrize("security, extra, error", [
    ({"tls": {"enabled": True, "issuerRef": {"name": ""}}}, {},
     "spec.security.tls.issuerRef.name: required"),
    ({"tls": {"enabled": True}}, {"flinkConfiguration": {"security.ssl.internal.truststore": "/x.pem"}},
     "spec.flinkConfiguration[security.ssl.internal.truststore]: set by spec.security.tls"),
    ({"networkPolicy": {"metricsNamespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}}, {},
     "spec.security.networkPolicy.metricsNamespaceSelector.matchExpressions[0].values: operator In needs"),
    ({"networkPolicy": {"metricsNamespaceSelector": {"matchExpressions": [
        {"key": "a", "operator": "Exists", "values": ["b"]}]}}}, {},
     "matchExpressions[0].values: operator Exists takes no values"),
])
def test_invalid_security_is_refused_with_its_field_path(security, extra, error):
    assert error in (validate_flinkjob_spec(make_spec(security=security, **extra)) or "")


def test_tls_is_refused_for_batch_and_ssl_keys_are_the_users_while_tls_is_off():
    batch = FlinkJobSpec.from_dict({"image": "i", "mode": "batch", "job": {"entry": "/j.py"},
                                    "security": {"tls": {"enabled": True}}})
    assert (validate_flinkjob_spec(batch) or "").startswith("spec.security.tls.enabled: TLS is for streaming jobs")
    assert validate_flinkjob_spec(make_spec()) is None and validate_flinkjob_spec(_tls_spec()) is None


def test_the_chart_tells_the_operator_labels_its_own_pods_carry_and_runs_it_restricted():
    """The NetworkPolicies select the operator by what STROM_OPERATOR_POD_LABELS says: the chart's operator pods
    must carry those labels, in the namespace the downward API gives."""
    from tests.operator.chart_rendering import render

    [deployment] = [d for d in render({}) if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["STROM_OPERATOR_NAMESPACE"]["valueFrom"] == {"fieldRef": {"apiVersion": "v1",
                                                                          "fieldPath": "metadata.namespace"}}
    operator = OperatorPods.from_env({"STROM_OPERATOR_NAMESPACE": "ops",
                                      "STROM_OPERATOR_POD_LABELS": env["STROM_OPERATOR_POD_LABELS"]["value"]})
    assert operator is not None and _selects({"matchLabels": dict(operator.labels)}, pod["metadata"]["labels"])
    assert {**POD_CONTEXT, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001}.items() <= \
        pod["spec"]["securityContext"].items()
    container = pod["spec"]["containers"][0]["securityContext"]
    assert container["readOnlyRootFilesystem"] is True and container["allowPrivilegeEscalation"] is False
    assert container["capabilities"] == {"drop": ["ALL"]}
