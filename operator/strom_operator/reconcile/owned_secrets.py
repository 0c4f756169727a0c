"""Creating the Secrets a FlinkJob's pods mount before the pods are applied: the cluster secret and the TLS material.

Both Secrets are created once and never rewritten (pods of every generation must keep agreeing); what
they contain and how pods mount them is decided by the pure builders in resources/cluster_secret.py and
resources/tls_secret.py, whose docstrings say why. This module is the I/O: create, take the API server's
409 AlreadyExists as "it is there", and wait for cert-manager when an issuer makes the TLS Secret.
"""

from __future__ import annotations

from strom_operator.clients.action_failures import TlsSecretPending
from strom_operator.clients.kube_api import KubeApi, KubeApiError
from strom_operator.clients.secret_cache import SecretCache
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.cluster_secret import build_cluster_secret
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.tls_secret import build_certificate, generated_tls_secret, secret_problem, tls_secret_name


async def ensure_cluster_secret(kube: KubeApi, ref: FlinkJobRef) -> bool:
    """Create the FlinkJob's Secret unless it exists; True when it was created now. Never changes an
    existing one."""
    try:
        await kube.create(build_cluster_secret(ref))
    except KubeApiError as e:
        if e.status == 409:  # AlreadyExists: created by an earlier deployment of this FlinkJob
            return False
        raise
    return True


async def ensure_tls_secret(kube: KubeApi, secrets: SecretCache, ref: FlinkJobRef, spec: FlinkJobSpec) -> bool:
    """Make sure the Secret `<name>-tls` is there before pods that mount it are applied; True when the
    operator created it now. With an issuer: the Certificate is applied and TlsSecretPending raised until
    cert-manager's Secret has tls.crt, tls.key and ca.crt. Never changes an existing Secret."""
    tls = spec.security.tls
    name = tls_secret_name(ref)
    if tls.issuer_ref is not None:
        await kube.apply(build_certificate(ref, tls.issuer_ref))
    secret = await secrets.get(ref.namespace, name)
    problem = secret_problem(ref, tls, secret)
    if problem is not None:
        secrets.forget(ref.namespace, name)  # look again at the next attempt, not after the cache's delay
        raise TlsSecretPending(problem)
    if secret is not None or tls.issuer_ref is not None:
        return False
    try:
        await kube.create(generated_tls_secret(ref))
    except KubeApiError as e:
        if e.status != 409:  # 409 AlreadyExists: made meanwhile (another pass; a stale cached absence)
            raise
    secrets.forget(ref.namespace, name)
    return True
