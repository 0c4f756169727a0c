"""The Secret holding a FlinkJob's cluster secret: what its JobManager and TaskManagers prove to each
other on every RPC and data connection (the engine's peer authentication).

One Secret per FlinkJob, `<name>-cluster-secret` with the key `secret` (32 random bytes as hex), owned
by the FlinkJob so that Kubernetes deletes it with the job. It is created once and never rotated
while the job lives: pods of different generations (a TaskManager that restarts during an upgrade, a
JobManager that fails over) must keep agreeing. So it is never applied, since an apply would write a
fresh random value over it; `ensure_cluster_secret` (reconcile/owned_secrets.py) creates it and takes the API server's
AlreadyExists (409) as "it is there", which also needs no permission to read Secrets. The value
reaches the containers as the environment variable `STROM_CLUSTER_SECRET` through a secretKeyRef
(`cluster_secret_env`): it never passes through the operator again, nor into the ConfigMap.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from strom_operator.resources.labels import FlinkJobRef, object_meta

ENV_VAR = "STROM_CLUSTER_SECRET"  # the engine reads it first (strom.runtime.network.cluster_secret)
SECRET_KEY = "secret"


def cluster_secret_name(ref: FlinkJobRef) -> str:
    return f"{ref.name}-cluster-secret"


def build_cluster_secret(ref: FlinkJobRef, value: str | None = None) -> dict[str, Any]:
    """The Secret, with a fresh random value unless one is given."""
    value = value if value is not None else secrets.token_hex(32)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": object_meta(ref, cluster_secret_name(ref), "config"),
        "type": "Opaque",
        "data": {SECRET_KEY: base64.b64encode(value.encode()).decode()},
    }


def cluster_secret_env(ref: FlinkJobRef) -> dict[str, Any]:
    """The container's environment variable that carries the secret, from the Secret."""
    return {"name": ENV_VAR, "valueFrom": {"secretKeyRef": {"name": cluster_secret_name(ref), "key": SECRET_KEY}}}
