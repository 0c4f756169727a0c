"""The JobManager Deployment and Service of a FlinkJob (application mode).

One JobManager pod runs `strom jobmanager --job <entry> [args]` (or `--job <script>.sql`, sql_script.py):
it builds the JobGraph from the job's entry point and schedules it on the TaskManagers that register
over RPC. Recreate, never two JobManagers at once: two would run the job twice. Restoring from a savepoint or checkpoint
is a command-line flag, so the Deployment itself records where the job started from.
"""

from __future__ import annotations

from typing import Any

from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.labels import (
    METRICS_PORT,
    REST_PORT,
    RPC_PORT,
    FlinkJobRef,
    jobmanager_name,
    object_meta,
    selector_labels,
)
from strom_operator.resources.pods import build_pod_template
from strom_operator.resources.sql_script import job_file, script_digest

CONTAINER = "jobmanager"
REST_TLS_ANNOTATION = "strom.io/rest-tls"
PORTS = (("rest", REST_PORT), ("rpc", RPC_PORT), ("metrics", METRICS_PORT))


def jobmanager_args(spec: FlinkJobSpec, *, restore_from: str | None, allow_non_restored_state: bool) -> list[str]:
    """`strom` arguments; restore flags come before `--job`, the job's own args after `--` (the CLI
    would otherwise take the first of them for the job file and options among them for its own)."""
    args = ["jobmanager"]
    if restore_from:
        args += ["--from-savepoint", restore_from]
        if allow_non_restored_state:
            args.append("--allow-non-restored-state")
    args += ["--job", job_file(spec)]
    return args + ["--", *spec.job.args] if spec.job.args else args


def readiness_check(spec: FlinkJobSpec) -> dict[str, Any]:
    if spec.security.tls.enabled:
        return {"tcpSocket": {"port": "rest"}}
    return {"httpGet": {"path": "/overview", "port": "rest"}}


def build_jobmanager_deployment(ref: FlinkJobRef, spec: FlinkJobSpec, *, restore_from: str | None = None,
                                allow_non_restored_state: bool = False) -> dict[str, Any]:
    container = {
        "name": CONTAINER,
        "command": ["strom"],
        "args": jobmanager_args(spec, restore_from=restore_from, allow_non_restored_state=allow_non_restored_state),
        "ports": [{"name": name, "containerPort": port, "protocol": "TCP"} for name, port in PORTS],
        # Ready when the REST API answers; alive while the REST port accepts connections. With TLS, REST
        # asks every client for a certificate of the job's CA, which the kubelet's probe has none of:
        # then ready once the REST port accepts connections.
        "readinessProbe": {**readiness_check(spec), "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"tcpSocket": {"port": "rest"}, "initialDelaySeconds": 30, "periodSeconds": 10,
                          "failureThreshold": 6},
    }
    template = build_pod_template(ref, spec, component="jobmanager", container=container,
                                  resources=spec.job_manager.resources,
                                  user_template=dict(spec.job_manager.pod_template))
    digest = script_digest(spec)
    if digest is not None:  # a changed script restarts the JobManager even where its file's path stays
        template.setdefault("metadata", {}).setdefault("annotations", {})["strom.io/sql-hash"] = digest
    meta = object_meta(ref, jobmanager_name(ref), "jobmanager")
    if spec.security.tls.enabled:
        # how the operator knows to speak https to the JobManager that runs (jobmanager_tls.deployed_with_tls):
        # on the Deployment, which its watch keeps the metadata of, not on the pods (no restart for it)
        meta["annotations"] = {REST_TLS_ANNOTATION: "true"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector_labels(ref, "jobmanager")},
            "template": template,
        },
    }


def build_jobmanager_service(ref: FlinkJobRef) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(ref, jobmanager_name(ref), "jobmanager"),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(ref, "jobmanager"),
            "ports": [{"name": name, "port": port, "targetPort": name, "protocol": "TCP"} for name, port in PORTS],
        },
    }
