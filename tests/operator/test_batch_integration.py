"""The operator against the Kubernetes API emulator with batch FlinkJobs (spec.mode batch).

Nothing runs the driver pods here (the process kubelet plays Deployments only): the test plays
the kubelet by patching the driver pod's status (Running, then Failed with an exit code and a
termination message, or Succeeded) and plays Spark by creating executor pods with the labels the
driver's configuration gives them. What is checked is what the operator writes to the API.
"""

from __future__ import annotations

from typing import Any

from tests.operator.operator_harness import Cluster, RunningOperator, wait_until

IMAGE = "strom/runtime:test"


def batch_job(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"image": IMAGE, "mode": "batch", "job": {"entry": "/opt/jobs/count.py"},
                            "spark": {"executor": {"instances": 2}}}
    body.update(spec)
    return {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob", "metadata": {"name": name, "namespace": namespace},
            "spec": body}


def batch_status(k8s: Cluster, name: str) -> dict[str, Any]:
    return k8s.status(name).get("batch") or {}


def wait_batch(k8s: Cluster, operator: RunningOperator, name: str, **expected: Any) -> dict[str, Any]:
    return wait_until(lambda: (b := batch_status(k8s, name)) and all(b.get(k) == v for k, v in expected.items())
                      and b, timeout=30, what=f"status.batch {expected}",
                      details=lambda: f"{k8s.status(name)}\n{operator.log()}")


def set_pod_status(k8s: Cluster, pod: str, status: dict[str, Any]) -> None:
    k8s.call(lambda k: k.merge_patch("Pod", k8s.namespace, pod, {"status": status}, subresource="status"))


def terminated(phase: str, code: int, reason: str, message: str = "") -> dict[str, Any]:
    return {"phase": phase, "containerStatuses": [{"name": "driver", "ready": False, "restartCount": 0, "state": {
        "terminated": {"exitCode": code, "reason": reason, "message": message}}}]}


def create_executor(k8s: Cluster, job: str, driver_pod: str, index: int, *, owned: bool) -> str:
    name = f"{driver_pod}-exec-{index}"
    meta: dict[str, Any] = {"name": name, "namespace": k8s.namespace, "labels": {
        "app.kubernetes.io/name": "strom", "app.kubernetes.io/instance": job,
        "app.kubernetes.io/component": "spark-executor", "strom.io/driver-pod": driver_pod,
        "spark-role": "executor"}}
    if owned:  # as Spark sets it with spark.kubernetes.driver.pod.name
        driver = k8s.get("Pod", driver_pod)
        assert driver is not None
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": driver_pod,
                                    "uid": driver["metadata"]["uid"], "controller": True}]
    k8s.call(lambda k: k.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                                 "spec": {"containers": [{"name": "executor", "image": IMAGE}]}}))
    set_pod_status(k8s, name, {"phase": "Running"})
    return name


def test_batch_job_creates_driver_objects_follows_the_driver_retries_on_failure_and_reruns_on_restart_nonce(
        k8s: Cluster, operator: RunningOperator):
    created = k8s.call(lambda k: k.create(batch_job(
        "sparkjob", k8s.namespace, restartPolicy={"type": "OnFailure", "onFailureRetries": 1,
                                                  "onFailureRetryInterval": "1 s"})))
    uid = created["metadata"]["uid"]
    wait_batch(k8s, operator, "sparkjob", state="SUBMITTED", driverPod="sparkjob-driver-1")
    objects = {(kind, name): k8s.get(kind, name) for kind, name in (
        ("Pod", "sparkjob-driver-1"), ("Service", "sparkjob-driver"), ("ConfigMap", "sparkjob-spark"))}
    objects[("ServiceAccount", "sparkjob-spark")] = k8s.call(
        lambda k: k.request("GET", f"/api/v1/namespaces/{k8s.namespace}/serviceaccounts/sparkjob-spark"))
    for (kind, name), obj in objects.items():
        assert obj is not None, f"{kind} {name} missing"
        assert [(o["kind"], o["uid"]) for o in obj["metadata"]["ownerReferences"]] == [("FlinkJob", uid)]
        assert obj["metadata"]["labels"]["app.kubernetes.io/instance"] == "sparkjob"
    pod = objects[("Pod", "sparkjob-driver-1")]
    assert pod["spec"]["restartPolicy"] == "Never" and pod["spec"]["serviceAccountName"] == "sparkjob-spark"
    assert "spark.kubernetes.driver.pod.name=sparkjob-driver-1" in pod["spec"]["containers"][0]["args"]
    service = objects[("Service", "sparkjob-driver")]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"]["strom.io/driver-pod"] == "sparkjob-driver-1"
    assert k8s.status("sparkjob")["lifecycleState"] == "DEPLOYED"

    # the driver runs, Spark starts two executors
    set_pod_status(k8s, "sparkjob-driver-1", {"phase": "Running", "containerStatuses": [
        {"name": "driver", "ready": True, "restartCount": 0, "state": {"running": {}}}]})
    executors = [create_executor(k8s, "sparkjob", "sparkjob-driver-1", i, owned=False) for i in (1, 2)]
    wait_batch(k8s, operator, "sparkjob", state="RUNNING", executors=2)
    assert k8s.status("sparkjob")["jobStatus"]["state"] == "RUNNING"

    # it fails: the reason is the container's; a retry after 1 s; its executors are cleaned up
    set_pod_status(k8s, "sparkjob-driver-1", terminated("Failed", 1, "Error", "ValueError: bad record"))
    wait_batch(k8s, operator, "sparkjob", state="SUBMITTED", driverPod="sparkjob-driver-2", attempt=2)
    wait_until(lambda: all(k8s.get("Pod", e) is None for e in executors), timeout=15, what="executors deleted")
    assert k8s.get("Pod", "sparkjob-driver-2") is not None
    svc = k8s.get("Service", "sparkjob-driver")
    assert svc is not None and svc["spec"]["selector"]["strom.io/driver-pod"] == "sparkjob-driver-2"

    # the retry fails too: retries spent, FAILED with the driver's reason
    set_pod_status(k8s, "sparkjob-driver-2", terminated("Failed", 1, "Error", "ValueError: bad record again"))
    failed = wait_batch(k8s, operator, "sparkjob", state="FAILED")
    assert failed["exitCode"] == 1 and failed["reason"] == "Error, exit code 1: ValueError: bad record again"
    status = k8s.status("sparkjob")
    assert status["lifecycleState"] == "FAILED" and status["jobStatus"]["state"] == "FAILED"
    assert "after 2 attempts" in status["error"]
    degraded = {c["type"]: c for c in status["conditions"]}["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "JobFailed")
    wait_until(lambda: any(e.get("reason") == "JobFailed" and e.get("type") == "Warning"
                           for e in k8s.events("sparkjob")), timeout=15, what="the JobFailed warning event")

    # restartNonce: a new run, which completes
    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, "sparkjob", {"spec": {"restartNonce": 1}}))
    wait_batch(k8s, operator, "sparkjob", state="SUBMITTED", driverPod="sparkjob-driver-3", attempt=1)
    set_pod_status(k8s, "sparkjob-driver-3", terminated("Succeeded", 0, "Completed"))
    done = wait_batch(k8s, operator, "sparkjob", state="COMPLETED")
    assert done["exitCode"] == 0
    status = k8s.status("sparkjob")
    assert status["lifecycleState"] == "STABLE" and status["jobStatus"]["state"] == "COMPLETED"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, "sparkjob"))
    wait_until(lambda: k8s.get("FlinkJob", "sparkjob") is None, timeout=30, what="the FlinkJob deleted",
               details=operator.log)


def test_deleting_a_batch_job_removes_driver_and_executor_pods(k8s: Cluster, operator: RunningOperator):
    # the user's own ServiceAccount: it must exist (a real server's ServiceAccount admission refuses the pod)
    k8s.call(lambda k: k.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                 "metadata": {"name": "spark", "namespace": k8s.namespace}}))
    k8s.call(lambda k: k.create(batch_job("sparkgone", k8s.namespace, serviceAccount="spark")))
    wait_batch(k8s, operator, "sparkgone", state="SUBMITTED")
    driver = k8s.get("Pod", "sparkgone-driver-1")
    assert driver is not None and driver["spec"]["serviceAccountName"] == "spark"
    accounts = k8s.call(lambda k: k.request("GET", f"/api/v1/namespaces/{k8s.namespace}/serviceaccounts"))
    assert "sparkgone-spark" not in {sa["metadata"]["name"] for sa in accounts["items"]}  # spec.serviceAccount's used
    set_pod_status(k8s, "sparkgone-driver-1", {"phase": "Running"})
    wait_batch(k8s, operator, "sparkgone", state="RUNNING")
    # one executor owned by the driver (Spark's ownerReference), one orphan (a driver that lost track)
    executors = [create_executor(k8s, "sparkgone", "sparkgone-driver-1", 1, owned=True),
                 create_executor(k8s, "sparkgone", "sparkgone-driver-1", 2, owned=False)]
    k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, "sparkgone"))
    wait_until(lambda: k8s.get("FlinkJob", "sparkgone") is None, timeout=30, what="the FlinkJob deleted",
               details=operator.log)
    wait_until(lambda: all(k8s.get("Pod", p) is None for p in [*executors, "sparkgone-driver-1"]), timeout=15,
               what="driver and executor pods deleted")
    # owned: a real server's garbage collector deletes them soon after the FlinkJob
    wait_until(lambda: k8s.get("Service", "sparkgone-driver") is None and k8s.get("ConfigMap", "sparkgone-spark")
               is None, timeout=30, what="the driver's Service and ConfigMap garbage-collected")
