"""Operator-side validation of a FlinkJob spec: `validate_*(spec) -> str | None`, first error wins.

The CRD's schema already rejects wrong types, enums and ranges at the API server; these checks
repeat what matters (the CRD may be older than the operator) and add the rules a schema cannot
express: relations between fields, storage URIs, engine configuration keys. Each message starts
with the field path, says what is wrong and what would be right. An invalid spec becomes a
condition and an event; the last valid spec keeps running (state_machine.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from strom.common.config_options import ConfigError
from strom.common.configuration import validate_key

from strom_operator.autoscaler.settings import autoscaler_spec_error
from strom_operator.crd.operator_options import OPERATOR_PREFIX, operator_option_error
from strom_operator.crd.spec import FlinkJobSpec, duration_seconds
from strom_operator.resources.ingress import ingress_problem
from strom_operator.resources.tls_secret import tls_configuration

URI_SCHEMES = ("s3://", "file://")

# Keys the operator writes from spec fields; setting them in flinkConfiguration would make two
# sources of truth.
SPEC_OWNED_KEYS = {
    "parallelism.default": "spec.job.parallelism",
    "pipeline.max-parallelism": "spec.job.maxParallelism",
    "taskmanager.numberOfTaskSlots": "spec.taskManager.slots",
    "execution.checkpointing.interval": "spec.checkpointing.interval",
    "execution.checkpointing.mode": "spec.checkpointing.mode",
    "state.checkpoints.dir": "spec.checkpointing.dir",
    "state.savepoints.dir": "spec.savepoints.dir",
    "s3.endpoint": "spec.s3.endpoint",
}
# Credentials must come from a Secret: the ConfigMap and the status are readable by many.
CREDENTIAL_KEYS = ("s3.access-key", "s3.secret-key", "s3.access.key", "s3.secret.key",
                   "fs.s3a.access.key", "fs.s3a.secret.key")
# The RPC and data ports' shared secret: the operator provides it from a Secret of its own.
CLUSTER_SECRET_KEYS = ("security.cluster-secret", "security.cluster-secret-file")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _entry_error(entry: str) -> str | None:
    if not entry:
        return ("spec.job.entry: required: a .py path in the image or 'module:package.module' "
                "(or a SQL script in spec.job.sql / spec.job.sqlFrom)")
    if entry.startswith("module:"):
        if not entry[len("module:"):].strip():
            return "spec.job.entry: 'module:' needs a module name, e.g. 'module:jobs.wordcount'"
    elif not entry.endswith(".py"):
        return f"spec.job.entry: {entry!r} is neither a .py path nor 'module:package.module'"
    return None


def validate_job(spec: FlinkJobSpec) -> str | None:
    job = spec.job
    if not spec.image:
        return "spec.image: required: the container image with the Strom runtime and the job"
    given = [name for name, value in (("entry", job.entry), ("sql", job.sql), ("sqlFrom", job.sql_from))
             if value not in (None, "")]
    if len(given) > 1:
        return (f"spec.job: {' and '.join(given)} are exclusive: give the job's Python entry point (entry) or its "
                "SQL script (sql inline, or sqlFrom a ConfigMap), one of them")
    error = sql_source_error(spec) if job.is_sql else _entry_error(job.entry)
    if error:
        return error
    if not _is_int(job.parallelism) or job.parallelism < 1:
        return f"spec.job.parallelism: {job.parallelism!r} must be an integer >= 1"
    if not _is_int(job.max_parallelism) or not 1 <= job.max_parallelism <= 32768:
        return f"spec.job.maxParallelism: {job.max_parallelism!r} must be an integer from 1 to 32768"
    if job.parallelism > job.max_parallelism:
        return f"spec.job.parallelism: {job.parallelism} exceeds spec.job.maxParallelism {job.max_parallelism}"
    for path, value, allowed in (
        ("spec.job.upgradeMode", job.upgrade_mode, ("stateless", "savepoint", "last-state")),
        ("spec.job.state", job.state, ("running", "suspended")),
        ("spec.mode", spec.mode, ("streaming", "batch")),
        ("spec.imagePullPolicy", spec.image_pull_policy, ("Always", "IfNotPresent", "Never")),
        ("spec.checkpointing.mode", spec.checkpointing.mode, ("EXACTLY_ONCE", "AT_LEAST_ONCE")),
    ):
        if value not in allowed:
            return f"{path}: {value!r} is not one of {', '.join(allowed)}"
    for path, nonce in (("spec.job.savepointTriggerNonce", job.savepoint_trigger_nonce),
                        ("spec.restartNonce", spec.restart_nonce)):
        if nonce is not None and not _is_int(nonce):
            return f"{path}: {nonce!r} must be an integer"
    return None


def validate_task_manager(spec: FlinkJobSpec) -> str | None:
    slots = spec.task_manager.slots
    if not _is_int(slots) or slots < 1:
        return f"spec.taskManager.slots: {slots!r} must be an integer >= 1"
    return None


def validate_storage_uri(path: str, uri: str | None) -> str | None:
    if uri is None:
        return None
    if not uri.startswith(URI_SCHEMES):
        return f"{path}: {uri!r} must start with s3:// or file://"
    if uri.startswith("s3://") and not uri[len("s3://"):].split("/")[0]:
        return f"{path}: {uri!r} names no bucket; expected s3://bucket/prefix"
    if uri.startswith("file://") and not uri[len("file://"):].startswith("/"):
        return f"{path}: {uri!r} must be absolute, e.g. file:///data/savepoints"
    return None


def validate_state(spec: FlinkJobSpec) -> str | None:
    """Durations, storage URIs, and what each upgrade mode needs to carry state."""
    cp, sp = spec.checkpointing, spec.savepoints
    for path, value in (("spec.checkpointing.interval", cp.interval),
                        ("spec.savepoints.periodicInterval", sp.periodic_interval),
                        ("spec.savepoints.maxAge", sp.max_age)):
        try:
            duration_seconds(value)
        except ValueError:
            return f"{path}: {value!r} is not a duration; expected e.g. '10 s', '5 min' or '24 h'"
    for path, uri in (("spec.checkpointing.dir", cp.dir), ("spec.savepoints.dir", sp.dir),
                      ("spec.job.initialSavepointPath", spec.job.initial_savepoint_path)):
        error = validate_storage_uri(path, uri)
        if error:
            return error
    if not _is_int(sp.max_history) or sp.max_history < 1:
        return f"spec.savepoints.maxHistory: {sp.max_history!r} must be an integer >= 1"
    checkpointing = duration_seconds(cp.interval) > 0
    if checkpointing and not cp.dir:
        return "spec.checkpointing.dir: required when spec.checkpointing.interval is set (s3:// or file://)"
    if spec.job.upgrade_mode == "last-state" and not checkpointing:
        return ("spec.job.upgradeMode: 'last-state' needs checkpointing: set spec.checkpointing.interval "
                "and spec.checkpointing.dir")
    if spec.job.upgrade_mode == "savepoint" and not sp.dir:
        return "spec.savepoints.dir: required by spec.job.upgradeMode 'savepoint' (s3:// or file://)"
    if duration_seconds(sp.periodic_interval) > 0 and not sp.dir:
        return "spec.savepoints.dir: required by spec.savepoints.periodicInterval (s3:// or file://)"
    if spec.job.savepoint_trigger_nonce is not None and not sp.dir:
        return "spec.savepoints.dir: required by spec.job.savepointTriggerNonce (s3:// or file://)"
    if sp.on_deletion and not sp.dir:
        return "spec.savepoints.dir: required by spec.savepoints.onDeletion (s3:// or file://)"
    if spec.s3.endpoint is not None and not spec.s3.endpoint.startswith(("http://", "https://")):
        return f"spec.s3.endpoint: {spec.s3.endpoint!r} must be an http:// or https:// URL"
    if spec.s3.credentials_secret is not None and not spec.s3.credentials_secret:
        return "spec.s3.credentialsSecret: must name a Secret (or be left out to use the pod's identity)"
    # S3 without a credentials Secret is valid: workload identity (IRSA) gives the pods credentials.
    return None


def validate_flink_configuration(conf: Mapping[str, str]) -> str | None:
    for key, value in conf.items():
        path = f"spec.flinkConfiguration[{key}]"
        if key in SPEC_OWNED_KEYS:
            return f"{path}: set by {SPEC_OWNED_KEYS[key]}; set it there instead"
        if key in CREDENTIAL_KEYS:
            return f"{path}: credentials must not be in the configuration; name a Secret in spec.s3.credentialsSecret"
        if key in CLUSTER_SECRET_KEYS:
            return (f"{path}: the cluster secret must not be in the configuration (a ConfigMap); the operator "
                    f"gives every pod the FlinkJob's own Secret <name>-cluster-secret")
        if key.startswith(OPERATOR_PREFIX):
            error = operator_option_error(key, value)
            if error:
                return f"{path}: {error}"
            continue
        try:
            option = validate_key(key)
            if option is not None:
                option.parse(value)
        except ConfigError as e:
            return f"{path}: {e}"
    return None


def validate_pod_templates(spec: FlinkJobSpec) -> str | None:
    for path, template in (("spec.podTemplate", spec.pod_template),
                           ("spec.jobManager.podTemplate", spec.job_manager.pod_template),
                           ("spec.taskManager.podTemplate", spec.task_manager.pod_template)):
        if not isinstance(template, Mapping):
            return f"{path}: must be a PodTemplateSpec object"
        containers = (template.get("spec") or {}).get("containers") or []
        if not isinstance(containers, list) or any(not isinstance(c, Mapping) or not c.get("name")
                                                    for c in containers):
            return f"{path}.spec.containers: every container needs a name (containers are merged by name)"
    return None


def validate_security(spec: FlinkJobSpec) -> str | None:
    """spec.security: an issuer needs a name; with TLS on, the security.ssl.* keys the operator writes are its
    own (tls_secret.tls_configuration); TLS is Strom's engine's, so not for batch mode's Spark pods."""
    tls = spec.security.tls
    if tls.issuer_ref is not None and not tls.issuer_ref.name:
        return "spec.security.tls.issuerRef.name: required: the cert-manager Issuer or ClusterIssuer to ask"
    if tls.enabled:
        if spec.mode == "batch":
            return "spec.security.tls.enabled: TLS is for streaming jobs; batch mode runs on Spark: turn it off"
        for key in spec.flink_configuration:
            if key in tls_configuration():
                return (f"spec.flinkConfiguration[{key}]: set by spec.security.tls (the Secret <name>-tls at "
                        f"/opt/strom/tls); remove it, or turn spec.security.tls off to configure TLS yourself")
    selector = spec.security.network_policy.metrics_namespace_selector or {}
    for i, req in enumerate(selector.get("matchExpressions") or ()):
        path = f"spec.security.networkPolicy.metricsNamespaceSelector.matchExpressions[{i}]"
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn") and not values:
            return f"{path}.values: operator {op} needs at least one value"
        if op in ("Exists", "DoesNotExist") and values:
            return f"{path}.values: operator {op} takes no values; remove them"
    return None


def validate_ingress(spec: FlinkJobSpec) -> str | None:
    """spec.ingress: a template that gives a DNS host (or a path only); the JobManager of a streaming job."""
    if spec.ingress is None:
        return None
    if spec.mode == "batch":
        return "spec.ingress: the Ingress leads to a streaming job's JobManager; batch mode has none: remove it"
    return ingress_problem(spec.ingress)


VALIDATORS: tuple[Callable[[FlinkJobSpec], str | None], ...] = (
    validate_job,
    validate_task_manager,
    validate_state,
    lambda spec: validate_flink_configuration(spec.flink_configuration),
    validate_pod_templates,
    validate_security,
    validate_ingress,
    autoscaler_spec_error,
)


def sql_source_error(spec: FlinkJobSpec) -> str | None:
    """The SQL script's source is usable (its text is checked by admission: lifecycle/sql_admission.py)."""
    job = spec.job
    if job.sql is not None and not job.sql.strip():
        return "spec.job.sql: empty: give the SQL script, statements ended by ';'"
    if job.sql_from is not None:
        ref = job.sql_from
        for field_name, value in (("name", ref.name), ("key", ref.key)):
            if not value:
                return f"spec.job.sqlFrom.configMapKeyRef.{field_name}: required: the ConfigMap's {field_name}"
    if job.args:
        return "spec.job.args: a SQL script takes no arguments (set options with SET statements in the script)"
    return None


def validate_flinkjob_spec(spec: FlinkJobSpec) -> str | None:
    """The first error of the spec, or None when it is valid."""
    for validator in VALIDATORS:
        error = validator(spec)
        if error:
            return error
    return None


def validate_spec_change(new: FlinkJobSpec, old: FlinkJobSpec | None) -> str | None:
    """Rules about a change: the mode stays; state restored across an upgrade needs the same number of key groups."""
    if old is not None and new.mode != old.mode:
        return f"spec.mode: cannot change from {old.mode!r} to {new.mode!r}; delete the FlinkJob and create it anew"
    if old is None or new.job.upgrade_mode == "stateless":
        return None
    if new.job.max_parallelism != old.job.max_parallelism:
        return (f"spec.job.maxParallelism: cannot change from {old.job.max_parallelism} to "
                f"{new.job.max_parallelism} while restoring state (upgradeMode {new.job.upgrade_mode!r}); "
                "use upgradeMode 'stateless' to start empty")
    return None
