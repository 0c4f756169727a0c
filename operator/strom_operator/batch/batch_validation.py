"""Validation of a batch FlinkJob's spec: `validate_batch_spec(spec) -> str | None`, first error wins.

The streaming checks that apply to any job run first (image, entry point, parallelism, engine
configuration, pod templates); then what is batch's own: the Spark sizes, dynamic allocation
bounds, Spark keys, the restart policy, and streaming-only fields a bounded job on Spark cannot
honour (a savepoint, checkpoints, suspension, the autoscaler), so that nothing set is silently
ignored. Messages start with the field path and say what would be right.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strom_operator.batch.spark_conf import OWNED_KEYS, memory_mib
from strom_operator.crd.spark_spec import RESTART_POLICY_TYPES
from strom_operator.crd.spec import FlinkJobSpec, duration_seconds
from strom_operator.lifecycle.validation import (
    validate_flink_configuration,
    validate_job,
    validate_pod_templates,
)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _streaming_only(spec: FlinkJobSpec) -> str | None:
    job, cp, sp = spec.job, spec.checkpointing, spec.savepoints
    why = "does not apply to spec.mode 'batch' (a bounded job on Spark has no savepoints or checkpoints)"
    for path, value, default in (
        ("spec.job.upgradeMode", job.upgrade_mode, "stateless"),
        ("spec.job.savepointTriggerNonce", job.savepoint_trigger_nonce, None),
        ("spec.job.initialSavepointPath", job.initial_savepoint_path, None),
        ("spec.savepoints.onDeletion", sp.on_deletion, False),
    ):
        if value != default:
            return f"{path}: {value!r} {why}; remove it"
    for path, duration in (("spec.checkpointing.interval", cp.interval),
                           ("spec.savepoints.periodicInterval", sp.periodic_interval)):
        try:
            if duration_seconds(duration) > 0:
                return f"{path}: {duration!r} {why}; remove it"
        except ValueError:
            return f"{path}: {duration!r} is not a duration; expected e.g. '10 s' or '5 min'"
    if job.state != "running":
        return (f"spec.job.state: {job.state!r} is not supported in spec.mode 'batch'; delete the FlinkJob to stop "
                "the job, or change spec.restartNonce to run it again")
    if spec.autoscaler.enabled:
        return "spec.autoscaler.enabled: not supported in spec.mode 'batch'; use spec.spark.dynamicAllocation"
    return None


def _sizes(spec: FlinkJobSpec) -> str | None:
    sp = spec.spark
    for path, value in (("spec.spark.driver.cores", sp.driver.cores), ("spec.spark.executor.cores", sp.executor.cores),
                        ("spec.spark.executor.instances", sp.executor.instances)):
        if not _is_int(value) or value < 1:
            return f"{path}: {value!r} must be an integer >= 1"
    for path, memory in (("spec.spark.driver.memory", sp.driver.memory),
                         ("spec.spark.executor.memory", sp.executor.memory)):
        try:
            memory_mib(memory)
        except ValueError as e:
            return f"{path}: {e}"
    da = sp.dynamic_allocation
    if not _is_int(da.min_executors) or da.min_executors < 0:
        return f"spec.spark.dynamicAllocation.minExecutors: {da.min_executors!r} must be an integer >= 0"
    if da.max_executors is not None and (not _is_int(da.max_executors) or da.max_executors < max(1, da.min_executors)):
        return (f"spec.spark.dynamicAllocation.maxExecutors: {da.max_executors!r} must be an integer >= 1 and >= "
                f"minExecutors ({da.min_executors})")
    if da.initial_executors is not None:
        top = da.max_executors if da.max_executors is not None else da.initial_executors
        if not _is_int(da.initial_executors) or not da.min_executors <= da.initial_executors <= top:
            return (f"spec.spark.dynamicAllocation.initialExecutors: {da.initial_executors!r} must lie between "
                    f"minExecutors ({da.min_executors}) and maxExecutors ({da.max_executors})")
    return None


def validate_spark_conf(conf: Mapping[str, str]) -> str | None:
    for key in conf:
        path = f"spec.spark.sparkConf[{key}]"
        if not key.startswith("spark."):
            return f"{path}: not a Spark key (spark.*); engine keys go to spec.flinkConfiguration"
        if key in OWNED_KEYS:
            return f"{path}: set by {OWNED_KEYS[key]}; set it there instead"
        if key.startswith("spark.kubernetes.executor.label.") or key.startswith("spark.kubernetes.driver.label."):
            return f"{path}: labels come from spec.spark.executor.podTemplate / driver.podTemplate metadata"
    return None


def _restart_policy(spec: FlinkJobSpec) -> str | None:
    rp = spec.restart_policy
    if rp.type not in RESTART_POLICY_TYPES:
        return f"spec.restartPolicy.type: {rp.type!r} is not one of {', '.join(RESTART_POLICY_TYPES)}"
    if not _is_int(rp.on_failure_retries) or rp.on_failure_retries < 0:
        return f"spec.restartPolicy.onFailureRetries: {rp.on_failure_retries!r} must be an integer >= 0"
    try:
        duration_seconds(rp.on_failure_retry_interval)
    except ValueError:
        return (f"spec.restartPolicy.onFailureRetryInterval: {rp.on_failure_retry_interval!r} is not a duration; "
                "expected e.g. '10 s' or '1 min'")
    return None


def _spark_pod_templates(spec: FlinkJobSpec) -> str | None:
    for path, template in (("spec.spark.driver.podTemplate", spec.spark.driver.pod_template),
                           ("spec.spark.executor.podTemplate", spec.spark.executor.pod_template)):
        if not isinstance(template, Mapping):
            return f"{path}: must be a PodTemplateSpec object"
        containers = (template.get("spec") or {}).get("containers") or []
        if not isinstance(containers, list) or any(not isinstance(c, Mapping) or not c.get("name")
                                                    for c in containers):
            return f"{path}.spec.containers: every container needs a name (containers are merged by name)"
    return None


def validate_batch_spec(spec: FlinkJobSpec) -> str | None:
    """The first error of a batch spec, or None when it is valid."""
    for check in (validate_job, _streaming_only, _sizes, lambda s: validate_spark_conf(s.spark.spark_conf),
                  _restart_policy, lambda s: validate_flink_configuration(s.flink_configuration),
                  validate_pod_templates, _spark_pod_templates):
        error = check(spec)
        if error:
            return error
    return None


def validate_batch_change(new: FlinkJobSpec, reconciled: Mapping[str, Any] | None) -> str | None:
    """A FlinkJob keeps its mode: the objects of one mode are not those of the other."""
    old_mode = (reconciled or {}).get("mode", new.mode)
    if old_mode != new.mode:
        return (f"spec.mode: cannot change from {old_mode!r} to {new.mode!r}; delete the FlinkJob and create it "
                "anew")
    return None
