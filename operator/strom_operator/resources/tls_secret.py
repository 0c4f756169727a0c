"""A FlinkJob's TLS material in the Secret `<name>-tls`, its Flink keys, and how its pods mount it.

The Secret has cert-manager's layout (type kubernetes.io/tls: tls.crt, tls.key, ca.crt), whoever
made it:

* the operator (no spec.security.tls.issuerRef): `ensure_tls_secret` (reconcile/owned_secrets.py)
  creates it once from freshly generated material (tls_certificates.py), owned by the FlinkJob so
  Kubernetes deletes it with the job, and never rewrites it: pods of every generation (a TaskManager
  restarted during an upgrade, a JobManager that fails over) keep trusting each other. An
  existing Secret is kept as it is;
* cert-manager (issuerRef set): the operator applies a cert-manager Certificate (cert-manager.io/v1)
  whose secretName is `<name>-tls`, and deploys only once cert-manager has written the Secret with all
  three keys; until then `TlsSecretPending` says what it waits for (the Ready=False condition).
  cert-manager renews it; the Secret volume brings the renewed files into the running pods.

The pods mount only those three keys (volume `items`) read-only at /opt/strom/tls, and the ConfigMap
carries the `security.ssl.*` keys of the engine contract pointing there (`tls_configuration`).
"""

from __future__ import annotations

import base64
from typing import Any

from strom_operator.crd.spec import IssuerRef, TlsSpec
from strom_operator.resources.labels import FlinkJobRef, jobmanager_name, object_meta
from strom_operator.resources.tls_certificates import TlsMaterial, generate_tls_material

TLS_DIR = "/opt/strom/tls"
TLS_VOLUME = "strom-tls"
CERT_KEY, PRIVATE_KEY_KEY, CA_KEY = "tls.crt", "tls.key", "ca.crt"
SECRET_KEYS = (CERT_KEY, PRIVATE_KEY_KEY, CA_KEY)
SECRET_TYPE = "kubernetes.io/tls"
# Readable by the owner and the pod's fsGroup only (the pods run as a non-root user in that group).
SECRET_FILE_MODE = 0o440
CERTIFICATE_DURATION, CERTIFICATE_RENEW_BEFORE = "8760h", "720h"
CERTIFICATE_USAGES = ("digital signature", "key encipherment", "server auth", "client auth")


def tls_secret_name(ref: FlinkJobRef) -> str:
    return f"{ref.name}-tls"


def certificate_name(ref: FlinkJobRef) -> str:
    return f"{ref.name}-tls"


def jobmanager_dns_names(ref: FlinkJobRef) -> tuple[str, ...]:
    """The names by which clients reach the JobManager's Service (the leaf's SANs)."""
    svc = jobmanager_name(ref)
    return (svc, f"{svc}.{ref.namespace}", f"{svc}.{ref.namespace}.svc", f"{svc}.{ref.namespace}.svc.cluster.local")


def tls_configuration() -> dict[str, str]:
    """The engine keys (common-s25's TLS contract) for the material mounted at TLS_DIR: internal TLS
    (always mutual) and REST TLS with client authentication, both from the same PEM files."""
    files = {"keystore-type": "PEM", "keystore": f"{TLS_DIR}/{CERT_KEY}", "key": f"{TLS_DIR}/{PRIVATE_KEY_KEY}",
             "truststore": f"{TLS_DIR}/{CA_KEY}"}
    conf = {"security.ssl.internal.enabled": "true", "security.ssl.rest.enabled": "true",
            "security.ssl.rest.authentication-enabled": "true"}
    for scope in ("internal", "rest"):
        conf.update({f"security.ssl.{scope}.{k}": v for k, v in files.items()})
    return conf


def tls_volume(ref: FlinkJobRef) -> dict[str, Any]:
    return {"name": TLS_VOLUME, "secret": {"secretName": tls_secret_name(ref), "defaultMode": SECRET_FILE_MODE,
                                           "items": [{"key": k, "path": k} for k in SECRET_KEYS]}}


def tls_volume_mount() -> dict[str, Any]:
    return {"name": TLS_VOLUME, "mountPath": TLS_DIR, "readOnly": True}


def build_tls_secret(ref: FlinkJobRef, material: TlsMaterial) -> dict[str, Any]:
    data = {CERT_KEY: material.certificate, PRIVATE_KEY_KEY: material.private_key, CA_KEY: material.ca_certificate}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": object_meta(ref, tls_secret_name(ref), "config"),
        "type": SECRET_TYPE,
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def generated_tls_secret(ref: FlinkJobRef) -> dict[str, Any]:
    """The Secret with fresh material: a CA of this FlinkJob and a leaf for its JobManager Service."""
    material = generate_tls_material(ca_name=f"{ref.namespace}/{ref.name} CA", common_name=jobmanager_name(ref),
                                     dns_names=jobmanager_dns_names(ref))
    return build_tls_secret(ref, material)


def build_certificate(ref: FlinkJobRef, issuer: IssuerRef) -> dict[str, Any]:
    """The cert-manager Certificate that makes cert-manager write the Secret `<name>-tls`."""
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": object_meta(ref, certificate_name(ref), "config"),
        "spec": {
            "secretName": tls_secret_name(ref),
            "issuerRef": {"name": issuer.name, "kind": issuer.kind, "group": issuer.group},
            "commonName": jobmanager_name(ref),
            "dnsNames": list(jobmanager_dns_names(ref)),
            # A year, renewed a month before: the engine loads its material when a process starts, so a
            # renewal reaches a process when it restarts (an upgrade, a failover); cert-manager's 90 days
            # would outlive fewer long-running jobs.
            "duration": CERTIFICATE_DURATION,
            "renewBefore": CERTIFICATE_RENEW_BEFORE,
            # one certificate serves as server and as client (mutual TLS everywhere)
            "usages": list(CERTIFICATE_USAGES),
        },
    }


def secret_files(secret: dict[str, Any] | None) -> dict[str, bytes]:
    """The Secret's decoded keys (empty for None)."""
    data = (secret or {}).get("data") or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


def missing_keys(secret: dict[str, Any] | None) -> list[str]:
    files = secret_files(secret)
    return [k for k in SECRET_KEYS if not files.get(k)]


def secret_problem(ref: FlinkJobRef, tls: TlsSpec, secret: dict[str, Any] | None) -> str | None:
    """What keeps `secret` (None: absent) from serving as the job's material, and what to do; None if it can.
    An absent Secret is a problem only with an issuer: without one the operator creates it."""
    name = tls_secret_name(ref)
    issuer = tls.issuer_ref
    if secret is None:
        if issuer is None:
            return None
        certificate = certificate_name(ref)
        return (f"waiting for cert-manager to issue Secret {ref.namespace}/{name} (Certificate {certificate}, "
                f"{issuer.kind} {issuer.name}); see `kubectl describe certificate {certificate} -n {ref.namespace}`")
    absent = missing_keys(secret)
    if not absent:
        return None
    if issuer is not None:
        return (f"Secret {ref.namespace}/{name} from cert-manager has no {' and no '.join(absent)}: "
                f"spec.security.tls.issuerRef must name an issuer that provides the CA certificate (a CA issuer, "
                f"not ACME)")
    return (f"Secret {ref.namespace}/{name} has no {' and no '.join(absent)}: delete it and the operator generates "
            f"a new one, or provide all of {', '.join(SECRET_KEYS)}")
