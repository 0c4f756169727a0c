"""Failures to act reach the user: a Ready=False condition with a reason and the server's message, one
aggregated Warning Event, a growing retry delay; S3 never holds up a first deployment.

The classification is pure; the reconciler is driven against the emulator (`k8s`) with a KubeApi
that refuses what a test says (as RBAC or an admission plugin would), and the event recorder.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from strom_operator.clients.action_failures import (
    S3CredentialsMissing,
    failure_of,
    retry_delay,
    with_failure,
    without_failure,
)
from strom_operator.clients.event_recorder import EventRecorder
from strom_operator.clients.jobmanager_client import JobManagerUnreachable
from strom_operator.clients.jobmanager_endpoints import JobManagerEndpoints
from strom_operator.clients.kube_api import KubeApi, KubeApiError
from strom_operator.clients.savepoint_disposal import DisposalError
from strom_operator.clients.secret_cache import SecretCache
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus, Reconciliation
from strom_operator.reconcile.ha_data import BEST_EFFORT, NO_CLEANUP, REQUIRED, cleanup_policy
from strom_operator.reconcile.observer import Observer
from strom_operator.reconcile.reconciler import Reconciler, ReconcilerSettings

from tests.operator.fakes import T0, spec_dict
from tests.operator.operator_harness import Cluster

RBAC_MESSAGE = ('deployments.apps is forbidden: User "system:serviceaccount:strom:strom-operator" cannot patch '
                'resource "deployments" in API group "apps" in the namespace "streams"')


def _refusal(status: int, message: str, *, method: str = "PATCH", verb: str = "apply") -> KubeApiError:
    return KubeApiError(method, "/apis/apps/v1/namespaces/streams/deployments/wc-jobmanager", status,
                        "Forbidden" if status == 403 else "Invalid", message, verb=verb)


def test_an_rbac_refusal_names_the_action_the_object_and_the_servers_words() -> None:
    failure = failure_of(_refusal(403, RBAC_MESSAGE), doing="deploying the job")
    assert failure.reason == "Forbidden"
    assert failure.message == f"deploying the job: cannot apply deployments.apps streams/wc-jobmanager: {RBAC_MESSAGE}"


@pytest.mark.parametrize(("error", "reason"), [
    (_refusal(422, 'Deployment.apps "wc-jobmanager" is invalid: spec.replicas: Invalid value: -1'), "Invalid"),
    (_refusal(400, 'admission webhook "policy.example.com" denied the request: no latest tag'), "AdmissionDenied"),
    (_refusal(403, 'admission webhook "quota" denied the request: over quota'), "AdmissionDenied"),
    (KubeApiError("GET", "/api/v1/namespaces/s/pods", 0, "Unreachable", "ConnectionRefusedError"), "ApiUnreachable"),
    (_refusal(409, "conflict"), "Conflict"),
    (_refusal(500, "etcdserver: request timed out"), "ApiError"),
    (DisposalError("cannot remove high-availability data s3://b/ha: EndpointConnectionError: no route"),
     "S3Unreachable"),
    (DisposalError("cannot remove savepoint s3://b/sp: ClientError: An error occurred (AccessDenied)"),
     "S3AccessDenied"),
    (S3CredentialsMissing("Secret streams/s3 (spec.s3.credentialsSecret) not found"), "S3CredentialsMissing"),
])
def test_each_failure_gets_its_reason(error: BaseException, reason: str) -> None:
    assert failure_of(error, doing="x").reason == reason


def test_the_condition_comes_and_goes_and_leaves_the_lifecycles_ready_alone() -> None:
    status = FlinkJobStatus(lifecycle_state="CREATED")
    failed = with_failure(status, failure_of(_refusal(403, RBAC_MESSAGE), doing="deploying the job"), T0)
    ready = failed.condition("Ready")
    assert (ready.status, ready.reason, ready.last_transition_time) == ("False", "Forbidden", T0)
    assert without_failure(failed).condition("Ready") is None
    running = status.with_condition("Ready", "True", "JobRunning", "the job is RUNNING", T0)
    assert without_failure(running) == running


def test_retries_back_off_from_five_seconds_to_five_minutes() -> None:
    assert [retry_delay(n) for n in range(1, 9)] == [5, 10, 20, 40, 80, 160, 300, 300]


def test_ha_data_cleanup_is_best_effort_before_the_first_deployment_only() -> None:
    uri = "s3://b/chk/_ha/wc"
    assert cleanup_policy(None, jobmanager_exists=False, lifecycle_state="UPGRADING") == NO_CLEANUP
    assert cleanup_policy(uri, jobmanager_exists=True, lifecycle_state="UPGRADING") == NO_CLEANUP
    assert cleanup_policy(uri, jobmanager_exists=False, lifecycle_state="CREATED") == BEST_EFFORT
    for state in ("UPGRADING", "ROLLING_BACK", "FAILED", "SUSPENDED", "STABLE"):
        assert cleanup_policy(uri, jobmanager_exists=False, lifecycle_state=state) == REQUIRED


class CountingSecrets:
    def __init__(self, secret: dict[str, Any] | None) -> None:
        self.secret, self.gets = secret, 0

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.gets += 1
        return self.secret


def test_secrets_are_read_once_per_ttl_and_a_missing_one_names_itself() -> None:
    now = [0.0]
    kube = CountingSecrets({"data": {"AWS_ACCESS_KEY_ID": "YQ==", "AWS_SECRET_ACCESS_KEY": "Yg=="}})
    cache = SecretCache(kube, ttl_s=60, missing_ttl_s=10, clock=lambda: now[0])

    async def reads() -> list[dict[str, str]]:
        out = []
        for t in (0, 5, 59, 61):
            now[0] = t
            out.append(await cache.s3_credentials("streams", "s3"))
        return out

    assert asyncio.run(reads()) == [{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}] * 4
    assert kube.gets == 2
    missing = SecretCache(CountingSecrets(None), clock=lambda: 0.0)
    with pytest.raises(S3CredentialsMissing, match=r"Secret streams/s3 \(spec.s3.credentialsSecret\) not found"):
        asyncio.run(missing.s3_credentials("streams", "s3"))


# -- the reconciler against the API, in a namespace of its own (own_namespace: the suite's operator, when it runs,
# watches k8s's namespace and would reconcile the same FlinkJobs) ----------------------------------------------


class RefusingKube(KubeApi):
    """The API as a Role without `patch` on Deployments sees it (what RBAC would answer)."""

    refuse_deployments = True

    async def apply(self, obj: Any, **kwargs: Any) -> Any:
        if obj["kind"] == "Deployment" and self.refuse_deployments:
            raise KubeApiError("PATCH", f"/apis/apps/v1/namespaces/{obj['metadata']['namespace']}/deployments/"
                               f"{obj['metadata']['name']}", 403, "Forbidden", RBAC_MESSAGE, verb="apply")
        return await super().apply(obj, **kwargs)


class NoJobManager:
    async def jobs_overview(self, base_url: str) -> Any:
        raise JobManagerUnreachable(f"{base_url}: connection refused")


def _reconciler(k8s: Cluster) -> tuple[Reconciler, RefusingKube, EventRecorder]:
    kube = k8s.connect(RefusingKube)
    client: Any = NoJobManager()
    events = EventRecorder(kube)
    reconciler = Reconciler(kube, client, Observer(kube, client, JobManagerEndpoints(map_file="")),
                            post_event=events.post, settings=ReconcilerSettings())
    return reconciler, kube, events


def _flinkjob(k8s: Cluster, name: str, **overrides: Any) -> None:
    body = {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
            "metadata": {"name": name, "namespace": k8s.namespace}, "spec": spec_dict(**overrides)}
    k8s.call(lambda k: k.create(body))


def _events(k8s: Cluster, name: str) -> dict[str, dict[str, Any]]:
    return {e["reason"]: e for e in k8s.events(name)}


def test_a_refused_first_deployment_is_a_condition_and_one_counted_warning_until_it_is_allowed(
        own_namespace: Cluster) -> None:
    k8s = own_namespace
    name = f"refused-{uuid.uuid4().hex[:6]}"
    _flinkjob(k8s, name, checkpointing={"interval": "10 s", "dir": "file:///tmp/strom-chk"})
    reconciler, kube, events = _reconciler(k8s)

    async def passes(n: int) -> list[float | None]:
        delays = [await reconciler.reconcile(k8s.namespace, name) for _ in range(n)]
        await events.flush()
        return delays

    try:
        assert k8s.loop.run_until_complete(passes(3)) == [5.0, 10.0, 20.0]
        status = k8s.status(name)
        assert status["lifecycleState"] == "CREATED"
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "Forbidden")
        assert ready["message"] == (f"deploying the job: cannot apply deployments.apps {k8s.namespace}/"
                                    f"{name}-jobmanager: {RBAC_MESSAGE}")
        warning = _events(k8s, name)["Forbidden"]
        assert (warning["type"], warning["count"], warning["message"]) == ("Warning", 3, ready["message"])

        kube.refuse_deployments = False  # the Role is fixed
        k8s.loop.run_until_complete(passes(1))
        status = k8s.status(name)
        assert status["lifecycleState"] == "DEPLOYED"
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")  # the deployment's, no longer the 403
        assert (ready["status"], ready["reason"]) == ("False", "Deploying")
        assert _events(k8s, name)["Recovered"]["type"] == "Normal"
        assert k8s.get("Deployment", f"{name}-jobmanager") is not None
    finally:
        k8s.loop.run_until_complete(events.close())
        k8s.loop.run_until_complete(kube.close())
        k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))


def test_a_missing_s3_secret_does_not_hold_up_a_first_deployment(own_namespace: Cluster) -> None:
    k8s = own_namespace
    name = f"nos3-{uuid.uuid4().hex[:6]}"
    _flinkjob(k8s, name, s3={"endpoint": "http://127.0.0.1:9", "credentialsSecret": "absent"})
    reconciler, kube, events = _reconciler(k8s)
    kube.refuse_deployments = False
    try:
        k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        k8s.loop.run_until_complete(events.flush())
        assert k8s.status(name)["lifecycleState"] == "DEPLOYED"
        skipped = _events(k8s, name)["HaDataCleanupSkipped"]
        assert skipped["type"] == "Warning" and f"Secret {k8s.namespace}/absent" in skipped["message"]
    finally:
        k8s.loop.run_until_complete(events.close())
        k8s.loop.run_until_complete(kube.close())
        k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))


def test_a_missing_s3_secret_before_a_redeployment_is_a_condition_not_a_deployment(own_namespace: Cluster) -> None:
    k8s = own_namespace
    name = f"nos3up-{uuid.uuid4().hex[:6]}"
    _flinkjob(k8s, name, s3={"endpoint": "http://127.0.0.1:9", "credentialsSecret": "absent"})
    reconciler, kube, events = _reconciler(k8s)
    # A FlinkJob whose upgrade has deleted the old Deployments and now deploys again.
    body = k8s.flinkjob(name)
    spec = FlinkJobSpec.from_dict(body["spec"]).to_dict()
    upgrading = FlinkJobStatus(lifecycle_state="UPGRADING",
                               reconciliation=Reconciliation(spec, spec, upgrade_step="DEPLOY", upgrade_started_at=T0))
    k8s.call(lambda k: k.merge_patch("FlinkJob", k8s.namespace, name, {"status": upgrading.to_dict()},
                                     subresource="status"))
    try:
        assert k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name)) == 5.0
        k8s.loop.run_until_complete(events.flush())
        status = k8s.status(name)
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        assert (status["lifecycleState"], ready["reason"]) == ("UPGRADING", "S3CredentialsMissing")
        assert f"Secret {k8s.namespace}/absent (spec.s3.credentialsSecret) not found" in ready["message"]
        assert k8s.get("Deployment", f"{name}-jobmanager") is None
    finally:
        k8s.loop.run_until_complete(events.close())
        k8s.loop.run_until_complete(kube.close())
        k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
