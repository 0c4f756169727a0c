"""Each FlinkJob's cluster secret: a Secret of its own, created once and never rewritten, reaching the
JobManager's and TaskManagers' containers (and only theirs) as STROM_CLUSTER_SECRET by reference."""

from __future__ import annotations

import base64
import uuid

import yaml
from strom.common.configuration import Configuration
from strom.runtime.network.cluster_secret import resolve_cluster_secret
from strom_operator.batch.driver import build_executor_pod_template, driver_objects
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.reconcile.owned_secrets import ensure_cluster_secret
from strom_operator.resources.builders import build_job_objects
from strom_operator.resources.cluster_secret import build_cluster_secret, cluster_secret_name
from strom_operator.resources.jobmanager_deployment import build_jobmanager_deployment
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.taskmanager_deployment import build_taskmanager_deployment

from tests.operator.fakes import make_spec, spec_dict
from tests.operator.operator_harness import Cluster

REF = FlinkJobRef("wordcount", "streams", "uid-1")


def _value(secret: dict) -> str:
    return base64.b64decode(secret["data"]["secret"]).decode()


def test_the_secret_is_the_flinkjobs_own_with_32_random_bytes_as_hex():
    secret = build_cluster_secret(REF)
    assert secret["metadata"]["name"] == cluster_secret_name(REF) == "wordcount-cluster-secret"
    assert secret["metadata"]["namespace"] == "streams" and secret["type"] == "Opaque"
    assert secret["metadata"]["ownerReferences"] == [{
        "apiVersion": "strom.io/v1beta1", "kind": "FlinkJob", "name": "wordcount", "uid": "uid-1",
        "controller": True, "blockOwnerDeletion": True}]  # deleted with the FlinkJob
    value = _value(secret)
    assert len(value) == 64 and int(value, 16) >= 0
    assert _value(build_cluster_secret(REF)) != value  # random each time it is built


def test_the_engine_accepts_the_generated_value_from_its_environment_variable():
    value = _value(build_cluster_secret(REF))
    assert resolve_cluster_secret(Configuration(), environ={"STROM_CLUSTER_SECRET": value}) == value.encode()


def test_both_containers_read_it_by_reference_and_it_is_never_applied_or_in_the_configmap():
    spec = make_spec()
    objects = build_job_objects(REF, spec)
    assert "Secret" not in [o["kind"] for o in objects]  # an apply would write a new random value over it
    for deployment in (build_jobmanager_deployment(REF, spec), build_taskmanager_deployment(REF, spec)):
        env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["STROM_CLUSTER_SECRET"] == {"name": "STROM_CLUSTER_SECRET", "valueFrom": {
            "secretKeyRef": {"name": "wordcount-cluster-secret", "key": "secret"}}}
    configmap = next(o for o in objects if o["kind"] == "ConfigMap")
    assert "security." not in yaml.safe_dump(configmap) and "cluster-secret" not in yaml.safe_dump(configmap)


def test_spark_batch_pods_do_not_get_it():
    spec = FlinkJobSpec.from_dict({"image": "strom/runtime:test", "mode": "batch", "job": {"entry": "/opt/job.py"}})
    pods = [o for o in driver_objects(REF, spec, submission=1) if o["kind"] == "Pod"]
    pods.append(build_executor_pod_template(REF, spec))
    text = yaml.safe_dump(pods)
    assert len(pods) == 2 and "STROM_CLUSTER_SECRET" not in text and "cluster-secret" not in text


def test_ensure_creates_it_once_and_never_changes_it(own_namespace: Cluster) -> None:
    k8s = own_namespace  # no operator there makes the Secret first
    # a FlinkJob that exists: a real API server garbage-collects a Secret whose owner does not
    body = {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
            "metadata": {"name": f"cs-{uuid.uuid4().hex[:6]}", "namespace": k8s.namespace}, "spec": spec_dict()}
    ref = FlinkJobRef.from_metadata(k8s.call(lambda k: k.create(body))["metadata"])
    name = cluster_secret_name(ref)
    try:
        assert k8s.call(lambda k: ensure_cluster_secret(k, ref)) is True
        first = _value(k8s.get("Secret", name))
        for _ in range(2):  # later deployments of the same FlinkJob: upgrades, restarts, rescales
            assert k8s.call(lambda k: ensure_cluster_secret(k, ref)) is False
        assert _value(k8s.get("Secret", name)) == first
    finally:
        k8s.call(lambda k: k.delete("Secret", k8s.namespace, name))
        k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, ref.name))
