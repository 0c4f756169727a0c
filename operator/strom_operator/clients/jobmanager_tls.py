"""The operator as a TLS client of a FlinkJob's JobManager: https, the job's CA, the job's certificate.

With spec.security.tls on, REST asks every client for a certificate of the job's CA (mutual TLS,
security.ssl.rest.authentication-enabled), so the operator presents the leaf of the Secret
`<name>-tls`, read through the SecretCache, and trusts only that Secret's ca.crt. It checks the
JobManager's name against the certificate: with a cert-manager issuer shared by many jobs, the
CA alone would accept another job's JobManager. The name checked is the Service's DNS name even when
the operator dials another address (`--jobmanager-url-map`, an operator outside the cluster).

What decides https is the JobManager Deployment that runs: whether it was built with TLS
(`deployed_with_tls`: the annotation strom.io/rest-tls on its Deployment). Not the desired spec, nor
even lastReconciledSpec: an upgrade that turns TLS on records its target spec before it stops the old
JobManager with a savepoint, and that one still speaks plain HTTP until it is replaced (and the other
way round). ssl can load a certificate and key only from files, so they are handed over as in-memory
files (memfd; a private temporary file elsewhere), never written to the operator's disk.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from strom_operator.clients.action_failures import TlsSecretPending
from strom_operator.crd.spec import FlinkJobSpec, TlsSpec
from strom_operator.resources.jobmanager_deployment import REST_TLS_ANNOTATION
from strom_operator.resources.labels import FlinkJobRef, jobmanager_name
from strom_operator.resources.tls_secret import (
    CA_KEY,
    CERT_KEY,
    PRIVATE_KEY_KEY,
    missing_keys,
    secret_files,
    secret_problem,
    tls_secret_name,
)


@dataclass(frozen=True, slots=True)
class TlsTarget:
    """How to dial one JobManager over TLS: the client context and the name its certificate must carry."""

    context: ssl.SSLContext
    server_hostname: str


def service_hostname(namespace: str, name: str) -> str:
    """The JobManager Service's name in the cluster's DNS (a SAN of the job's certificate)."""
    return f"{jobmanager_name(FlinkJobRef(name, namespace, ''))}.{namespace}.svc"


def _load_chain(context: ssl.SSLContext, certificate: bytes, key: bytes) -> None:
    if hasattr(os, "memfd_create"):
        fds = [os.memfd_create(n, 0) for n in ("tls.crt", "tls.key")]
        try:
            for fd, data in zip(fds, (certificate, key), strict=True):
                os.write(fd, data)
            context.load_cert_chain(f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}")
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="strom-tls-") as d:  # pragma: no cover - not Linux
        paths = [os.path.join(d, n) for n in ("tls.crt", "tls.key")]
        for path, data in zip(paths, (certificate, key), strict=True):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
                f.write(data)
        context.load_cert_chain(paths[0], paths[1])


def client_context(secret: Mapping[str, Any]) -> ssl.SSLContext:
    """A client context from the Secret `<name>-tls`: its CA only, its leaf as the client certificate.
    ValueError names a missing key; ssl.SSLError a key that does not parse."""
    absent = missing_keys(dict(secret))
    if absent:
        raise ValueError(f"Secret {secret.get('metadata', {}).get('name', '?')} has no {' and no '.join(absent)}")
    files = secret_files(dict(secret))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the certificate and the hostname
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_verify_locations(cadata=files[CA_KEY].decode())
    _load_chain(context, files[CERT_KEY], files[PRIVATE_KEY_KEY])
    return context


class JobManagerTls:
    """Per FlinkJob: the TLS target of its JobManager, while it is deployed with TLS. Contexts are
    rebuilt only when the Secret changed (its resourceVersion: cert-manager renewed it)."""

    def __init__(self) -> None:
        self._targets: dict[str, tuple[str, TlsTarget | None]] = {}  # ns/name -> (resourceVersion, target)

    def update(self, namespace: str, name: str, secret: Mapping[str, Any] | None) -> TlsTarget | None:
        """The JobManager speaks TLS with the material of `secret` (None: not issued yet, so no
        connection can succeed: the target stays https without a client certificate)."""
        key = f"{namespace}/{name}"
        version = str((secret or {}).get("metadata", {}).get("resourceVersion", "")) if secret else ""
        known = self._targets.get(key)
        if known is not None and secret is not None and known[0] == version and known[1] is not None:
            return known[1]
        hostname = service_hostname(namespace, name)
        if secret is None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # trusts nothing: fails until the Secret exists
        else:
            context = client_context(secret)
        target = TlsTarget(context, hostname)
        self._targets[key] = (version, target)
        return target

    def plain(self, namespace: str, name: str) -> None:
        """The JobManager speaks plain HTTP (TLS off in the deployed spec)."""
        self._targets.pop(f"{namespace}/{name}", None)

    def target(self, namespace: str, name: str) -> TlsTarget | None:
        entry = self._targets.get(f"{namespace}/{name}")
        return entry[1] if entry is not None else None


class SecretSource(Protocol):
    async def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...


def tls_possible(registry: JobManagerTls, ref: FlinkJobRef, *specs: Mapping[str, Any] | None) -> bool:
    """Whether the JobManager may run with TLS: one of `specs` (last reconciled, last stable) has it on, or
    the operator speaks TLS to it now. Otherwise there is no Deployment to look at (no extra read per pass
    for the jobs without TLS)."""
    if registry.target(ref.namespace, ref.name) is not None:
        return True
    for spec in specs:
        try:
            if spec is not None and FlinkJobSpec.from_dict(spec).security.tls.enabled:
                return True
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return False


def deployed_with_tls(deployment: Mapping[str, Any] | None) -> bool:
    """Whether the JobManager Deployment was built with spec.security.tls (its annotation: the operator's
    watch keeps a Deployment's metadata and status, not its pod template)."""
    annotations = ((deployment or {}).get("metadata") or {}).get("annotations") or {}
    return annotations.get(REST_TLS_ANNOTATION) == "true"


async def follow_deployed_tls(registry: JobManagerTls, secrets: SecretSource, ref: FlinkJobRef,
                              jobmanager: Mapping[str, Any] | None, reconciled: Mapping[str, Any] | None) -> None:
    """Before a pass talks to the JobManager: https with the Secret's material when the `jobmanager`
    Deployment runs with TLS, plain HTTP otherwise. No Secret yet: https that cannot connect (no
    JobManager runs with TLS without it). A Secret that cannot serve is TlsSecretPending (the Ready=False
    condition says what to do, for the material's source in `reconciled`, the last reconciled spec); a
    403 reading it is the API's error."""
    if not deployed_with_tls(jobmanager):
        registry.plain(ref.namespace, ref.name)
        return
    try:
        tls = FlinkJobSpec.from_dict(reconciled).security.tls if reconciled is not None else TlsSpec(True)
    except (KeyError, TypeError, ValueError, AttributeError):
        tls = TlsSpec(True)
    secret = await secrets.get(ref.namespace, tls_secret_name(ref))
    problem = secret_problem(ref, tls, secret) if secret is not None else None
    if problem is not None:
        raise TlsSecretPending(problem)
    try:
        registry.update(ref.namespace, ref.name, secret)
    except (ValueError, ssl.SSLError) as e:
        remedy = "ask cert-manager to reissue it" if tls.issuer_ref else "delete it to have a new one generated"
        raise TlsSecretPending(f"Secret {ref.namespace}/{tls_secret_name(ref)} cannot serve as the operator's "
                               f"client certificate: {e}; {remedy}") from None
