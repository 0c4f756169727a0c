"""The operator against a Kubernetes API: objects it creates, status, events, invalid specs, deletion.

The job of these FlinkJobs never runs (its entry file does not exist, so the JobManager process
exits): what is checked is what the operator writes to the API, not the job.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from strom_operator.clients.kube_api import KubeApiError
from strom_operator.resources.labels import MANAGED_BY

from tests.operator.operator_harness import Cluster, RunningOperator, wait_until

IMAGE = "strom/runtime:test"


def flinkjob(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"image": IMAGE, "job": {"entry": "/nonexistent/job.py", "parallelism": 3},
                            "taskManager": {"slots": 2}}
    body.update(spec)
    return {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": body}


def lifecycle_events(k8s: Cluster, name: str) -> list[str]:
    return [e["message"] for e in k8s.events(name) if e.get("reason") == "LifecycleState"]


def test_create_applies_owned_labelled_objects_and_the_status_goes_created_then_deployed(
        k8s: Cluster, operator: RunningOperator):
    created = k8s.call(lambda k: k.create(flinkjob("objects", k8s.namespace)))
    uid = created["metadata"]["uid"]
    wait_until(lambda: k8s.status("objects").get("lifecycleState") == "DEPLOYED", timeout=30,
               what="lifecycle DEPLOYED", details=operator.log)
    names = {"ConfigMap": "objects-config", "Service": "objects-jobmanager", "Deployment": "objects-jobmanager",
             "NetworkPolicy": "objects"}  # spec.security.networkPolicy is on by default
    objects = [k8s.get(kind, name) for kind, name in names.items()] + [k8s.get("Deployment", "objects-taskmanager")]
    for obj in objects:
        assert obj is not None
        meta = obj["metadata"]
        assert [(o["kind"], o["name"], o["uid"], o["controller"]) for o in meta["ownerReferences"]] == [
            ("FlinkJob", "objects", uid, True)]
        assert meta["labels"]["app.kubernetes.io/instance"] == "objects"
        assert meta["labels"]["app.kubernetes.io/managed-by"] == MANAGED_BY
    # 3 slots of parallelism over TaskManagers of 2 slots: ceil(3 / 2) = 2 replicas
    assert objects[-1]["spec"]["replicas"] == 2
    status = k8s.status("objects")
    assert status["scaling"] == {"parallelism": 3, "taskManagers": 2, "slotsTotal": 4}
    assert status["observedGeneration"] == 1
    wait_until(lambda: lifecycle_events(k8s, "objects")[:2] == ["(new) -> CREATED", "CREATED -> DEPLOYED"],
               timeout=15, what="the lifecycle events", details=lambda: str(lifecycle_events(k8s, "objects")))

    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, "objects"))
    wait_until(lambda: k8s.get("FlinkJob", "objects") is None, timeout=30, what="the FlinkJob deleted",
               details=operator.log)
    # its objects go through their ownerReferences: a real server's garbage collector deletes them soon after
    wait_until(lambda: all(k8s.get(kind, name) is None for kind, name in names.items()), timeout=30,
               what="the owned objects garbage-collected")


def test_invalid_spec_change_is_reported_with_its_field_path_and_the_running_spec_stays(
        k8s: Cluster, operator: RunningOperator):
    k8s.call(lambda k: k.create(flinkjob("invalid", k8s.namespace)))
    wait_until(lambda: k8s.status("invalid").get("lifecycleState") == "DEPLOYED", timeout=30,
               what="lifecycle DEPLOYED", details=operator.log)
    before = k8s.get("Deployment", "invalid-taskmanager")
    assert before is not None
    # valid for the CRD's schema (the API server refuses what it can check, see the test below), invalid
    # for the operator: a relation between two fields
    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, "invalid", {"spec": {"job": {"maxParallelism": 2}}}))

    def degraded() -> dict[str, Any] | None:
        conds = {c["type"]: c for c in k8s.status("invalid").get("conditions") or ()}
        c = conds.get("Degraded")
        return c if c is not None and c["status"] == "True" else None

    condition = wait_until(degraded, timeout=30, what="the Degraded condition", details=operator.log)
    assert condition["reason"] == "InvalidSpec"
    assert condition["message"].startswith("spec.job.parallelism: 3 exceeds spec.job.maxParallelism 2")
    warnings = wait_until(lambda: [e for e in k8s.events("invalid") if e.get("type") == "Warning"
                                   and e.get("reason") == "InvalidSpec"], timeout=15, what="the InvalidSpec event")
    assert "spec.job.parallelism" in warnings[0]["message"]
    after = k8s.get("Deployment", "invalid-taskmanager")
    assert after is not None and after["spec"] == before["spec"]  # the last valid spec keeps running
    assert k8s.status("invalid")["reconciliation"]["lastReconciledSpec"]["job"].get("maxParallelism") != 2

    # the fix clears the condition
    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, "invalid", {"spec": {"job": {"maxParallelism": 128}}}))
    wait_until(lambda: degraded() is None, timeout=30, what="the Degraded condition cleared", details=operator.log)
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, "invalid"))


def test_invalid_spec_at_creation_deploys_nothing(k8s: Cluster, operator: RunningOperator):
    k8s.call(lambda k: k.create(flinkjob("badentry", k8s.namespace, job={"entry": "job.txt"})))
    wait_until(lambda: (k8s.status("badentry").get("error") or "").startswith("invalid spec: spec.job.entry"),
               timeout=30, what="the invalid spec error", details=operator.log)
    assert k8s.get("Deployment", "badentry-jobmanager") is None
    assert k8s.status("badentry").get("lifecycleState") is None
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, "badentry"))


def test_operator_serves_metrics_and_liveness(k8s: Cluster, operator: RunningOperator):
    k8s.call(lambda k: k.create(flinkjob("metered", k8s.namespace)))
    wait_until(lambda: k8s.status("metered").get("lifecycleState") == "DEPLOYED", timeout=30,
               what="lifecycle DEPLOYED", details=operator.log)
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    reconciled = [line for line in text.splitlines()
                  if line.startswith("strom_operator_reconciliations_total") and 'name="metered"' in line]
    assert reconciled and float(reconciled[0].split()[-1]) >= 1
    assert 'strom_operator_flinkjobs{state="DEPLOYED"}' in text
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.liveness_port}/healthz", timeout=10) as r:
        assert r.status == 200
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, "metered"))


@pytest.mark.parametrize(("spec", "path"), [
    ({"taskManager": {"slots": 0}}, "spec.taskManager.slots"),
    ({"job": {"parallelism": "three"}}, "spec.job.parallelism"),
    ({"job": {"upgradeMode": "sometimes"}}, "spec.job.upgradeMode"),
])
def test_a_real_api_server_refuses_what_the_schema_forbids_naming_the_field(
        k8s: Cluster, spec: dict[str, Any], path: str):
    if k8s.emulated:
        pytest.skip("the emulator validates no schema (test_crd.py checks the CRD's schema with jsonschema)")
    body = flinkjob("refused", k8s.namespace)
    for key, value in spec.items():
        body["spec"][key] = {**body["spec"].get(key, {}), **value}
    try:
        k8s.call(lambda k: k.create(body))
    except KubeApiError as e:
        assert e.status == 422 and e.reason == "Invalid", e
        assert path in e.api_message, e.api_message
    else:
        raise AssertionError(f"the server accepted {spec}")
    assert k8s.get("FlinkJob", "refused") is None
