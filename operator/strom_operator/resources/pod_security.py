"""The securityContext of every pod the operator builds, and the writable directories it then needs.

Pods run as the runtime image's non-root user (runtime-image/Dockerfile: `strom`, uid and gid 10001,
home /opt/strom) with a read-only root filesystem, no privilege escalation, every capability dropped
and the container runtime's default seccomp profile: what the Kubernetes "restricted" Pod Security
Standard asks. `fsGroup` makes the mounted Secret files (mode 0440) readable by that user.

A read-only root filesystem needs an emptyDir for every path the processes write:
* /tmp: Python's tempfile (RocksDB's working directories, BATCH mode's shuffle chunks, checkpoints of a
  job without a checkpoint directory), Java's and Spark's scratch space (spark.local.dir defaults to it);
* /opt/strom/.strom: the engine's default cluster-secret file (~/.strom/cluster-secret), created when no
  secret is given; the operator gives one (STROM_CLUSTER_SECRET), so this only keeps a stray default
  from failing;
* /opt/strom/state: the image's directory for local state (file:///opt/strom/state/... checkpoints of
  a single-pod trial).
A user's pod template may override any of it (strategic merge: a volumeMount of the same path wins).
"""

from __future__ import annotations

from typing import Any

RUN_AS_USER = 10001  # runtime-image/Dockerfile's user `strom`
RUN_AS_GROUP = 10001

ENGINE_WRITABLE_DIRS: tuple[tuple[str, str], ...] = (
    ("strom-tmp", "/tmp"),
    ("strom-home", "/opt/strom/.strom"),
    ("strom-state", "/opt/strom/state"),
)
# Spark's driver and executors: scratch space only (their state is Spark's shuffle files there).
SPARK_WRITABLE_DIRS: tuple[tuple[str, str], ...] = (("strom-tmp", "/tmp"),)


def pod_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_GROUP,
        "fsGroup": RUN_AS_GROUP,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def writable_volumes(dirs: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    return [{"name": name, "emptyDir": {}} for name, _ in dirs]


def writable_mounts(dirs: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    return [{"name": name, "mountPath": path} for name, path in dirs]
