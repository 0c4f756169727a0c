"""spec.security through the reconciler against the API (the emulator or KUBECONFIG's cluster, in a namespace of
its own: the suite's shared operator watches `k8s`'s and would create the Secret before the reconciler under test):
the generated TLS Secret is created before the pods and never regenerated, the NetworkPolicy is applied, and with
a cert-manager issuer the deployment waits (Ready=False, TlsCertificatePending) until cert-manager's Secret is there."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from strom_operator.clients.event_recorder import EventRecorder
from strom_operator.clients.jobmanager_client import JobManagerUnreachable
from strom_operator.clients.jobmanager_endpoints import JobManagerEndpoints
from strom_operator.clients.kube_api import KubeApi, KubeApiError
from strom_operator.clients.secret_cache import SecretCache
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.reconcile.observer import Observer
from strom_operator.reconcile.owned_secrets import ensure_tls_secret
from strom_operator.reconcile.reconciler import Reconciler, ReconcilerSettings
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.tls_secret import generated_tls_secret

from tests.operator.fakes import spec_dict
from tests.operator.operator_harness import Cluster


class NoJobManager:
    async def jobs_overview(self, base_url: str) -> Any:
        raise JobManagerUnreachable(f"{base_url}: connection refused")


class RecordingKube(KubeApi):
    """The API, with the kinds of what the operator creates and applies, in order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.written: list[tuple[str, str]] = []

    async def apply(self, obj: Any, **kwargs: Any) -> Any:
        self.written.append(("apply", obj["kind"]))
        return await super().apply(obj, **kwargs)

    async def create(self, obj: Any) -> Any:
        self.written.append(("create", f"{obj['kind']}/{obj['metadata']['name']}"))
        return await super().create(obj)


def _flinkjob(k8s: Cluster, name: str, **overrides: Any) -> None:
    body = {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
            "metadata": {"name": name, "namespace": k8s.namespace}, "spec": spec_dict(**overrides)}
    k8s.call(lambda k: k.create(body))


def _reconciler(k8s: Cluster) -> tuple[Reconciler, RecordingKube, EventRecorder]:
    kube = k8s.connect(RecordingKube)
    client: Any = NoJobManager()
    events = EventRecorder(kube)
    reconciler = Reconciler(kube, client, Observer(kube, client, JobManagerEndpoints(map_file="")),
                            post_event=events.post, settings=ReconcilerSettings())
    return reconciler, kube, events


@pytest.fixture
def with_certificates(own_namespace: Cluster) -> Cluster:
    """A namespace of its own (own_namespace) on an API that serves cert-manager's Certificates: the emulator,
    or a real server with cert-manager's CRD (cert-manager itself is not needed: the tests issue its Secret)."""
    k8s = own_namespace
    if not k8s.emulated:
        try:
            k8s.call(lambda k: k.request("GET", "/apis/cert-manager.io/v1"))
        except KubeApiError as e:
            if e.status != 404:
                raise
            pytest.skip(f"cert-manager's CRD (certificates.cert-manager.io, v1) is not installed at {k8s.url}")
    return k8s


def test_the_generated_secret_comes_first_and_is_never_regenerated(own_namespace: Cluster) -> None:
    k8s = own_namespace
    name = f"tls-{uuid.uuid4().hex[:6]}"
    _flinkjob(k8s, name, security={"tls": {"enabled": True}})
    reconciler, kube, events = _reconciler(k8s)
    try:
        k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        assert k8s.status(name)["lifecycleState"] == "DEPLOYED"
        secret = k8s.get("Secret", f"{name}-tls")
        assert secret is not None and secret["type"] == "kubernetes.io/tls"
        assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
        assert secret["metadata"]["ownerReferences"][0]["name"] == name
        creates = [w for w in kube.written if w[0] == "create"]
        assert ("create", f"Secret/{name}-tls") in creates
        first_deployment = kube.written.index(("apply", "Deployment"))
        assert kube.written.index(("create", f"Secret/{name}-tls")) < first_deployment  # before the pods
        assert kube.written.index(("apply", "NetworkPolicy")) < first_deployment
        assert k8s.get("NetworkPolicy", name) is not None

        # Later passes and later deployments (an upgrade, a restart) keep the Secret as it is.
        k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        ref = FlinkJobRef.from_metadata(k8s.flinkjob(name)["metadata"])
        spec = FlinkJobSpec.from_dict(k8s.flinkjob(name)["spec"])
        for _ in range(2):
            assert k8s.loop.run_until_complete(ensure_tls_secret(kube, SecretCache(kube), ref, spec)) is False
        after = k8s.get("Secret", f"{name}-tls")
        assert after["data"] == secret["data"]
        assert after["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]
        assert [w for w in kube.written if w == ("create", f"Secret/{name}-tls")] == [("create", f"Secret/{name}-tls")]
    finally:
        k8s.loop.run_until_complete(events.close())
        k8s.loop.run_until_complete(kube.close())
        k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))


def test_a_cert_manager_issuer_gets_a_certificate_and_the_deployment_waits_for_its_secret(
        with_certificates: Cluster) -> None:
    k8s = with_certificates
    name = f"cm-{uuid.uuid4().hex[:6]}"
    _flinkjob(k8s, name, security={"tls": {"enabled": True, "issuerRef": {"name": "job-ca", "kind": "ClusterIssuer"}}})
    reconciler, kube, events = _reconciler(k8s)
    try:
        for _ in range(2):
            k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        status = k8s.status(name)
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "TlsCertificatePending")
        assert f"waiting for cert-manager to issue Secret {k8s.namespace}/{name}-tls" in ready["message"]
        assert "ClusterIssuer job-ca" in ready["message"]
        assert k8s.get("Deployment", f"{name}-jobmanager") is None  # no pod mounts a Secret that is not there
        certificate = k8s.get("Certificate", f"{name}-tls")
        assert certificate is not None and certificate["spec"]["secretName"] == f"{name}-tls"
        assert certificate["spec"]["issuerRef"] == {"name": "job-ca", "kind": "ClusterIssuer",
                                                    "group": "cert-manager.io"}
        assert ("create", f"Secret/{name}-tls") not in kube.written  # cert-manager makes it, not the operator

        # cert-manager issues it (its Secret carries no ownerReference to the FlinkJob)
        issued = generated_tls_secret(FlinkJobRef(name, k8s.namespace, ""))
        issued["metadata"] = {"name": f"{name}-tls", "namespace": k8s.namespace,
                              "annotations": {"cert-manager.io/certificate-name": f"{name}-tls"}}
        k8s.call(lambda k: k.create(issued))
        k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        status = k8s.status(name)
        assert status["lifecycleState"] == "DEPLOYED"
        assert all(c["reason"] != "TlsCertificatePending" for c in status.get("conditions") or ())
        assert k8s.get("Deployment", f"{name}-jobmanager") is not None
    finally:
        k8s.loop.run_until_complete(events.close())
        k8s.loop.run_until_complete(kube.close())
        k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
        k8s.call(lambda k: k.delete("Secret", k8s.namespace, f"{name}-tls"))


def test_a_cert_manager_secret_without_the_ca_is_refused_with_what_to_do(with_certificates: Cluster) -> None:
    k8s = with_certificates
    name = f"acme-{uuid.uuid4().hex[:6]}"
    _flinkjob(k8s, name, security={"tls": {"enabled": True, "issuerRef": {"name": "letsencrypt"}}})
    issued = generated_tls_secret(FlinkJobRef(name, k8s.namespace, ""))
    issued["metadata"] = {"name": f"{name}-tls", "namespace": k8s.namespace}
    del issued["data"]["ca.crt"]  # what an ACME issuer writes
    k8s.call(lambda k: k.create(issued))
    reconciler, kube, events = _reconciler(k8s)
    try:
        k8s.loop.run_until_complete(reconciler.reconcile(k8s.namespace, name))
        ready = next(c for c in k8s.status(name)["conditions"] if c["type"] == "Ready")
        assert ready["reason"] == "TlsCertificatePending"
        assert f"Secret {k8s.namespace}/{name}-tls from cert-manager has no ca.crt" in ready["message"]
        assert "a CA issuer" in ready["message"]
        assert k8s.get("Deployment", f"{name}-jobmanager") is None
    finally:
        k8s.loop.run_until_complete(events.close())
        k8s.loop.run_until_complete(kube.close())
        k8s.call(lambda k: k.delete("FlinkJob", k8s.namespace, name))
        k8s.call(lambda k: k.delete("Secret", k8s.namespace, f"{name}-tls"))
