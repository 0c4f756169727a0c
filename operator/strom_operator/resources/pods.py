"""The pod template shared by JobManager and TaskManager: config volume, S3 env, resources, user templates.

jobmanager_deployment.py and taskmanager_deployment.py give the container's command, ports, probes and own environment
variables; this module wraps it into a pod with the ConfigMap mounted at /opt/strom/conf, S3
credentials as environment variables from the Secret (secretKeyRef: the values never pass through
the operator), the cluster secret the same way (from the FlinkJob's own Secret, cluster_secret.py),
the TLS Secret at /opt/strom/tls when spec.security.tls is on (tls_secret.py), the securityContext and
the emptyDirs a read-only root filesystem needs (pod_security.py),
Prometheus' scrape annotations, and the user's podTemplates merged in
(spec.podTemplate, then the component's; Kubernetes' strategic merge, so the user's env entries join
ours by name).
"""

from __future__ import annotations

from typing import Any

from strom_operator.crd.spec import FlinkJobSpec, Resources
from strom_operator.resources.cluster_secret import cluster_secret_env
from strom_operator.resources.configmap import config_hash, engine_configuration
from strom_operator.resources.labels import (
    CONF_DIR,
    METRICS_PATH,
    METRICS_PORT,
    FlinkJobRef,
    configmap_name,
    labels,
    selector_labels,
)
from strom_operator.resources.pod_security import (
    ENGINE_WRITABLE_DIRS,
    container_security_context,
    pod_security_context,
    writable_mounts,
    writable_volumes,
)
from strom_operator.resources.podtemplates import merge_pod_templates
from strom_operator.resources.sql_script import sql_env, sql_volume_mounts, sql_volumes
from strom_operator.resources.tls_secret import tls_volume, tls_volume_mount

CONFIG_VOLUME = "strom-config"
CREDENTIAL_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


def container_env(spec: FlinkJobSpec) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": "STROM_CONF_DIR", "value": CONF_DIR}, *sql_env(spec)]
    if spec.s3.credentials_secret:
        env += [{"name": key, "valueFrom": {"secretKeyRef": {"name": spec.s3.credentials_secret, "key": key}}}
                for key in CREDENTIAL_KEYS]
    if spec.s3.endpoint:
        env.append({"name": "AWS_ENDPOINT_URL", "value": spec.s3.endpoint})  # boto3 reads it
    return env


def container_resources(resources: Resources) -> dict[str, Any]:
    # Memory limited to the request: a Python worker over its memory is OOM-killed rather than
    # starving its neighbours. CPU is not limited: throttling only adds latency.
    return {"requests": {"cpu": resources.cpu, "memory": resources.memory},
            "limits": {"memory": resources.memory}}


def scrape_annotations() -> dict[str, str]:
    """The annotations by which Prometheus' usual `kubernetes-pods` job scrapes a pod's exporter."""
    return {"prometheus.io/scrape": "true", "prometheus.io/port": str(METRICS_PORT),
            "prometheus.io/path": METRICS_PATH}


def build_pod_template(ref: FlinkJobRef, spec: FlinkJobSpec, *, component: str,
                       container: dict[str, Any], resources: Resources,
                       user_template: dict[str, Any]) -> dict[str, Any]:
    """The pod template of a component, with `container` as its main container. The container's own
    `env` comes first (the pod's own variables, such as POD_IP, which later values may refer to)."""
    own_env = list(container.get("env") or ())
    tls = spec.security.tls.enabled
    sql = component == "jobmanager"  # the SQL script's file (spec.job.sqlFrom): the JobManager runs it
    mounts = [{"name": CONFIG_VOLUME, "mountPath": CONF_DIR, "readOnly": True},
              *([tls_volume_mount()] if tls else []), *writable_mounts(ENGINE_WRITABLE_DIRS),
              *(sql_volume_mounts(spec) if sql else [])]
    main = {
        "name": container["name"],
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "resources": container_resources(resources),
        "volumeMounts": mounts,
        "securityContext": container_security_context(),
        **container,
        # the cluster secret only here: Spark's batch pods (container_env's other users) speak no Strom RPC
        "env": own_env + container_env(spec) + [cluster_secret_env(ref)],
    }
    pod_spec: dict[str, Any] = {
        "securityContext": pod_security_context(),
        "containers": [main],
        "volumes": [{"name": CONFIG_VOLUME, "configMap": {"name": configmap_name(ref)}},
                    *([tls_volume(ref)] if tls else []), *writable_volumes(ENGINE_WRITABLE_DIRS),
                    *(sql_volumes(spec) if sql else [])],
    }
    if spec.service_account:
        pod_spec["serviceAccountName"] = spec.service_account
    else:
        # JobManagers and TaskManagers never call the Kubernetes API: no token to mount, none to steal.
        # A ServiceAccount the user names is there for something that does (a sidecar, cloud workload
        # identity), so then its own automountServiceAccountToken decides; a pod template wins either way.
        pod_spec["automountServiceAccountToken"] = False
    base = {
        "metadata": {
            "labels": labels(ref, component),
            "annotations": {"strom.io/config-hash": config_hash(engine_configuration(ref, spec)),
                            **scrape_annotations()},
        },
        "spec": pod_spec,
    }
    merged = merge_pod_templates(base, dict(spec.pod_template), user_template, main=container["name"])
    # User labels are welcome, but the selector labels must stay ours or the Deployment
    # would no longer find its pods.
    merged.setdefault("metadata", {}).setdefault("labels", {}).update(selector_labels(ref, component))
    return merged
