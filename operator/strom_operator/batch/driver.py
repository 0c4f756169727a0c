"""Pure builders of a batch FlinkJob's Kubernetes objects: RBAC, ConfigMap, driver Service and pod.

In the order they are applied (`driver_objects`): the ServiceAccount, Role and RoleBinding the
driver needs to manage executor pods (only when spec.serviceAccount is unset), the ConfigMap
(config.yaml and the executor pod template; executors run the image's `strom spark-executor`), the headless Service that
makes the driver reachable as spark.driver.host, and the driver pod itself: restartPolicy Never
(a retry is a new pod, decided by batch_lifecycle.py), owned by the FlinkJob. The driver's
container runs `strom run --runtime-mode batch --spark-master k8s://...` with the pod's own name
for the executors' ownerReferences; its termination message falls back to the log's tail, so a
failed job's traceback reaches status.batch.reason. Driver and executors run with the same
securityContext as the streaming pods (pod_security.py: non-root, read-only root filesystem, ...)
and an emptyDir at /tmp, Spark's scratch space (spark.local.dir and the JVM's temporary files; Spark
on Kubernetes adds its own emptyDirs for the executors' local dirs).
"""

from __future__ import annotations

from typing import Any

import yaml

from strom_operator.batch.names import (
    CONFIG,
    DRIVER,
    DRIVER_POD_LABEL,
    EXECUTOR,
    RBAC,
    batch_labels,
    batch_meta,
    batch_selector,
    driver_pod_name,
    driver_service_name,
    spark_configmap_name,
    spark_service_account_name,
)
from strom_operator.batch.spark_conf import (
    BLOCK_MANAGER_PORT,
    CONFIG_FILE,
    DRIVER_PORT,
    EXECUTOR_CONTAINER,
    EXECUTOR_TEMPLATE_FILE,
    KUBERNETES_MASTER,
    UI_PORT,
    driver_pod_configuration,
    driver_pod_memory_mib,
    engine_configuration,
)
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.labels import CONF_DIR, FlinkJobRef
from strom_operator.resources.pod_security import (
    SPARK_WRITABLE_DIRS,
    container_security_context,
    pod_security_context,
    writable_mounts,
    writable_volumes,
)
from strom_operator.resources.pods import container_env
from strom_operator.resources.podtemplates import merge_pod_templates
from strom_operator.resources.sql_script import configmap_data, job_file, sql_volume_mounts, sql_volumes

DRIVER_CONTAINER = "driver"
CONFIG_VOLUME = "strom-spark-config"
DRIVER_PORTS = (("driver-rpc", DRIVER_PORT), ("blockmanager", BLOCK_MANAGER_PORT), ("spark-ui", UI_PORT))
# What a client-mode driver does with the API: executor pods, the ConfigMap Spark makes for them,
# and on-demand volume claims if the job's Spark configuration asks for them.
DRIVER_RULES = (
    {"apiGroups": [""], "resources": ["pods", "configmaps", "persistentvolumeclaims"],
     "verbs": ["get", "list", "watch", "create", "patch", "delete", "deletecollection"]},
)
# The runtime image's command that starts a Spark executor (strom/batch/executor_launcher.py in the
# engine); Spark appends the argument `executor`.
EXECUTOR_COMMAND = ("strom", "spark-executor")


def driver_service_account(ref: FlinkJobRef, spec: FlinkJobSpec) -> str:
    return spec.service_account or spark_service_account_name(ref)


def build_rbac(ref: FlinkJobRef) -> list[dict[str, Any]]:
    """ServiceAccount, Role and RoleBinding of the driver pods (spec.serviceAccount unset)."""
    name = spark_service_account_name(ref)
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": batch_meta(ref, name, RBAC)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": batch_meta(ref, name, RBAC),
         "rules": [dict(rule) for rule in DRIVER_RULES]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": batch_meta(ref, name, RBAC),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ref.namespace}]},
    ]


def _config_volume(ref: FlinkJobRef) -> dict[str, Any]:
    return {"name": CONFIG_VOLUME, "configMap": {"name": spark_configmap_name(ref)}}


def _config_mount() -> dict[str, Any]:
    return {"name": CONFIG_VOLUME, "mountPath": CONF_DIR, "readOnly": True}


def build_executor_pod_template(ref: FlinkJobRef, spec: FlinkJobSpec) -> dict[str, Any]:
    """The pod template Spark starts executors from (spark.kubernetes.executor.podTemplateFile).
    Spark sets image, resources, args and its own env on top; the command is `strom spark-executor`."""
    container = {
        "name": EXECUTOR_CONTAINER,
        "command": list(EXECUTOR_COMMAND),
        "env": container_env(spec),  # S3 endpoint and credentials: executors read and write the data
        "volumeMounts": [_config_mount(), *writable_mounts(SPARK_WRITABLE_DIRS)],
        "securityContext": container_security_context(),
    }
    base = {"metadata": {"labels": batch_labels(ref, EXECUTOR)},
            # executors never call the API (the driver manages them): no token unless a user template asks
            "spec": {"securityContext": pod_security_context(), "containers": [container],
                     "volumes": [_config_volume(ref), *writable_volumes(SPARK_WRITABLE_DIRS)],
                     "automountServiceAccountToken": False}}
    merged = merge_pod_templates(base, dict(spec.pod_template), dict(spec.spark.executor.pod_template),
                                 main=EXECUTOR_CONTAINER)
    return {"apiVersion": "v1", "kind": "Pod", **merged}


def build_spark_configmap(ref: FlinkJobRef, spec: FlinkJobSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": batch_meta(ref, spark_configmap_name(ref), CONFIG),
        "data": {
            CONFIG_FILE: yaml.safe_dump(engine_configuration(ref, spec), sort_keys=True, default_flow_style=False),
            EXECUTOR_TEMPLATE_FILE: yaml.safe_dump(build_executor_pod_template(ref, spec), sort_keys=False),
            **configmap_data(spec),  # an inline SQL script: the driver runs it (resources/sql_script.py)
        },
    }


def build_driver_service(ref: FlinkJobRef, *, submission: int) -> dict[str, Any]:
    """Headless: the name resolves to the current driver pod's IP. Not-ready addresses are published
    because executors may dial the driver before Kubernetes marks it Ready."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": batch_meta(ref, driver_service_name(ref), DRIVER),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {**batch_selector(ref, DRIVER), DRIVER_POD_LABEL: driver_pod_name(ref, submission)},
            "ports": [{"name": name, "port": port, "targetPort": port, "protocol": "TCP"}
                      for name, port in DRIVER_PORTS],
        },
    }


def driver_args(ref: FlinkJobRef, spec: FlinkJobSpec, *, submission: int,
                spark_master: str = KUBERNETES_MASTER) -> list[str]:
    """`strom` arguments of the driver: config.yaml has the shared keys, -D the pod's own."""
    args = ["run", "--runtime-mode", "batch", "--spark-master", spark_master]
    for key, value in driver_pod_configuration(driver_pod_name(ref, submission)).items():
        args += ["-D", f"{key}={value}"]
    args.append(job_file(spec))
    return args + ["--", *spec.job.args] if spec.job.args else args


def build_driver_pod(ref: FlinkJobRef, spec: FlinkJobSpec, *, submission: int) -> dict[str, Any]:
    name = driver_pod_name(ref, submission)
    memory = f"{driver_pod_memory_mib(spec)}Mi"
    container = {
        "name": DRIVER_CONTAINER,
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["strom"],
        "args": driver_args(ref, spec, submission=submission),
        "env": container_env(spec),
        "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in DRIVER_PORTS],
        "resources": {"requests": {"cpu": str(spec.spark.driver.cores), "memory": memory},
                      "limits": {"memory": memory}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [_config_mount(), *writable_mounts(SPARK_WRITABLE_DIRS), *sql_volume_mounts(spec)],
        "securityContext": container_security_context(),
    }
    base = {
        "metadata": {"labels": {**batch_labels(ref, DRIVER), DRIVER_POD_LABEL: name}},
        "spec": {"restartPolicy": "Never", "serviceAccountName": driver_service_account(ref, spec),
                 "securityContext": pod_security_context(), "containers": [container],
                 "volumes": [_config_volume(ref), *writable_volumes(SPARK_WRITABLE_DIRS), *sql_volumes(spec)]},
    }
    merged = merge_pod_templates(base, dict(spec.pod_template), dict(spec.spark.driver.pod_template),
                                 main=DRIVER_CONTAINER)
    meta = batch_meta(ref, name, DRIVER)
    # User labels are welcome; ours must stay, or the Service and the operator would lose the pod.
    meta["labels"] = {**(merged.get("metadata") or {}).get("labels", {}), **meta["labels"], DRIVER_POD_LABEL: name}
    annotations = (merged.get("metadata") or {}).get("annotations")
    if annotations:
        meta["annotations"] = dict(annotations)
    merged["spec"]["restartPolicy"] = "Never"  # a retry is a new pod, counted by the operator
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": merged["spec"]}


def driver_objects(ref: FlinkJobRef, spec: FlinkJobSpec, *, submission: int) -> list[dict[str, Any]]:
    """Everything a submission applies, in order; the pod last (it mounts the ConfigMap)."""
    rbac = build_rbac(ref) if spec.service_account is None else []
    return [*rbac, build_spark_configmap(ref, spec), build_driver_service(ref, submission=submission),
            build_driver_pod(ref, spec, submission=submission)]
