"""Where a SQL FlinkJob's script is in its pods: the file the JobManager (or the batch driver) runs.

An inline script (spec.job.sql) goes into the FlinkJob's own ConfigMap, next to config.yaml, so that the
text in the pods is the text the operator checked and the config hash restarts pods when it changes. A
script kept in the user's ConfigMap (spec.job.sqlFrom.configMapKeyRef) is mounted from there as one file.
Either way the command is `strom jobmanager --job <file>.sql` (strom.table.sql_application runs it), the
file named through the container's environment (`$(STROM_CONF_DIR)/job.sql`, Kubernetes expands it), as
the configuration is found through STROM_CONF_DIR.
"""

from __future__ import annotations

import hashlib
from typing import Any

from strom_operator.crd.spec import FlinkJobSpec

SQL_FILE = "job.sql"  # the key in the FlinkJob's ConfigMap, and the file name in the pod
SQL_VOLUME = "strom-sql"
SQL_DIR = "/opt/strom/sql"
SQL_DIR_ENV = "STROM_SQL_DIR"
CONF_DIR_ENV = "STROM_CONF_DIR"


def job_file(spec: FlinkJobSpec) -> str:
    """What `--job` names: the Python entry point, or the SQL script's file in the pod."""
    if spec.job.sql_from is not None:
        return f"$({SQL_DIR_ENV})/{SQL_FILE}"
    if spec.job.sql is not None:
        return f"$({CONF_DIR_ENV})/{SQL_FILE}"
    return spec.job.entry


def sql_env(spec: FlinkJobSpec) -> list[dict[str, Any]]:
    """Where the mounted script's directory is (spec.job.sqlFrom): what job_file's path expands."""
    return [{"name": SQL_DIR_ENV, "value": SQL_DIR}] if spec.job.sql_from is not None else []


def script_digest(spec: FlinkJobSpec) -> str | None:
    """A digest of where the script is and, inline, of its text; None for a Python entry point."""
    ref = spec.job.sql_from
    if ref is not None:
        return hashlib.sha256(f"configmap:{ref.name}/{ref.key}".encode()).hexdigest()[:16]
    if spec.job.sql is not None:
        return hashlib.sha256(spec.job.sql.encode()).hexdigest()[:16]
    return None


def configmap_data(spec: FlinkJobSpec) -> dict[str, str]:
    """The inline script as a key of the FlinkJob's ConfigMap (none otherwise)."""
    return {SQL_FILE: spec.job.sql} if spec.job.sql is not None else {}


def sql_volumes(spec: FlinkJobSpec) -> list[dict[str, Any]]:
    """The user's ConfigMap key as the file job.sql (spec.job.sqlFrom); nothing for an inline script."""
    ref = spec.job.sql_from
    if ref is None:
        return []
    return [{"name": SQL_VOLUME, "configMap": {"name": ref.name, "items": [{"key": ref.key, "path": SQL_FILE}]}}]


def sql_volume_mounts(spec: FlinkJobSpec) -> list[dict[str, Any]]:
    if spec.job.sql_from is None:
        return []
    return [{"name": SQL_VOLUME, "mountPath": SQL_DIR, "readOnly": True}]
