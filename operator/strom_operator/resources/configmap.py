"""The ConfigMap holding the engine's `config.yaml` for a FlinkJob's JobManager and TaskManagers.

Keys are Flink's (strom.common.config_options). Spec fields and the pods' addresses become their
Flink keys, then the user's flinkConfiguration adds the rest and wins over them. S3 credentials
never appear here: they reach the pods as environment variables from the Secret (pods.py);
validation rejects credential keys.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import yaml

from strom_operator.crd.operator_options import OPERATOR_PREFIX
from strom_operator.crd.spec import FlinkJobSpec, duration_seconds
from strom_operator.resources.labels import (
    DATA_PORT,
    METRICS_PORT,
    REST_PORT,
    RPC_PORT,
    FlinkJobRef,
    configmap_name,
    jobmanager_name,
    object_meta,
)
from strom_operator.resources.sql_script import configmap_data
from strom_operator.resources.tls_secret import tls_configuration

CONFIG_FILE = "config.yaml"
ANY_ADDRESS = "0.0.0.0"  # bind every interface of the pod's own network
# The autoscaler's per-vertex parallelism reaches the engine through this key (a rescale is a redeploy).
PARALLELISM_OVERRIDES_KEY = "pipeline.jobvertex-parallelism-overrides"


def parallelism_overrides_value(overrides: Mapping[str, int]) -> str:
    """The engine's `pipeline.jobvertex-parallelism-overrides` value (Flink's map syntax), sorted so
    that the configuration, and the hash that restarts pods, is stable."""
    return ",".join(f"{vid}:{p}" for vid, p in sorted(overrides.items()))


def engine_configuration(ref: FlinkJobRef, spec: FlinkJobSpec) -> dict[str, str]:
    """The engine configuration of the job, as Flink keys and string values."""
    conf: dict[str, str] = {
        "parallelism.default": str(spec.job.parallelism),
        "pipeline.max-parallelism": str(spec.job.max_parallelism),
        "taskmanager.numberOfTaskSlots": str(spec.task_manager.slots),
        "execution.runtime-mode": spec.mode.upper(),
        # As Flink's native Kubernetes integration: the addresses clients dial name the JobManager's
        # Service; the servers bind every interface, since the Service, the probes and Prometheus reach
        # a pod by its IP. A TaskManager advertises its pod IP (`-D taskmanager.host=$(POD_IP)`,
        # taskmanager_deployment.py), which is per pod and so not in this shared file.
        "jobmanager.rpc.address": jobmanager_name(ref),
        "jobmanager.rpc.port": str(RPC_PORT),
        "jobmanager.bind-host": ANY_ADDRESS,
        "rest.address": jobmanager_name(ref),
        "rest.port": str(REST_PORT),
        "rest.bind-address": ANY_ADDRESS,
        "taskmanager.bind-host": ANY_ADDRESS,
        # Fixed data ports, so the pod declares them (data-0.. in taskmanager_deployment.py).
        "taskmanager.data.port": str(DATA_PORT),
        "metrics.reporter.prom.host": ANY_ADDRESS,
        "metrics.reporter.prom.port": str(METRICS_PORT),
        # The JobManager keeps answering after its job ended (stop-with-savepoint, a finished
        # bounded job), so the operator can read the savepoint's location and the final state.
        "execution.shutdown-on-application-finish": "false",
    }
    cp, sp = spec.checkpointing, spec.savepoints
    if duration_seconds(cp.interval) > 0:
        conf["execution.checkpointing.interval"] = str(cp.interval)
        conf["execution.checkpointing.mode"] = cp.mode
        # The JobManager keeps its job graph and latest checkpoint pointer next to the checkpoints
        # (<dir>/_ha), so a replaced JobManager pod recovers its job and `last-state` upgrades find
        # the checkpoint.
        conf["high-availability.type"] = "file"
        conf["high-availability.cluster-id"] = ref.name
    if cp.dir:
        conf["state.checkpoints.dir"] = cp.dir
    if sp.dir:
        conf["state.savepoints.dir"] = sp.dir
    if spec.s3.endpoint:
        conf["s3.endpoint"] = spec.s3.endpoint
    if spec.security.tls.enabled:  # the Secret <name>-tls mounted at /opt/strom/tls (tls_secret.py)
        conf.update(tls_configuration())
    for key, value in spec.flink_configuration.items():
        if not key.startswith(OPERATOR_PREFIX):  # the operator's own options stay with the operator
            conf[key] = value
    return conf


def render_config_yaml(conf: dict[str, str]) -> str:
    return str(yaml.safe_dump(conf, sort_keys=True, default_flow_style=False))


def config_hash(conf: dict[str, str]) -> str:
    """A digest of the configuration; as a pod annotation it restarts pods when the config changes."""
    return hashlib.sha256(render_config_yaml(conf).encode()).hexdigest()[:16]


def build_configmap(ref: FlinkJobRef, spec: FlinkJobSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": object_meta(ref, configmap_name(ref), "config"),
        # an inline SQL script beside the configuration (sql_script.py)
        "data": {CONFIG_FILE: render_config_yaml(engine_configuration(ref, spec)), **configmap_data(spec)},
    }
