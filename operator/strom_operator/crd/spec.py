"""The typed FlinkJob spec: frozen dataclasses parsed from the resource body, defaults applied.

Defaults come from the CRD's schema (schema_spec.SPEC) through `apply_defaults`, so a spec parsed
here equals what the API server stores. `to_dict()` gives the camelCase form kept in
status.reconciliation (lastReconciledSpec, lastStableSpec). Parsing does not judge values:
validation.py does, with field paths.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from strom.common.config_options import parse_duration_ms

from strom_operator.crd.schema_spec import SPEC
from strom_operator.crd.schema_types import apply_defaults
from strom_operator.crd.spark_spec import RestartPolicy, SparkSpec


@dataclass(frozen=True, slots=True)
class Resources:
    cpu: str
    memory: str


@dataclass(frozen=True, slots=True)
class ConfigMapKeyRef:
    name: str
    key: str


@dataclass(frozen=True, slots=True)
class JobSpec:
    entry: str
    args: tuple[str, ...] = ()
    parallelism: int = 1
    max_parallelism: int = 128
    upgrade_mode: str = "stateless"  # stateless | savepoint | last-state
    state: str = "running"  # running | suspended
    savepoint_trigger_nonce: int | None = None
    initial_savepoint_path: str | None = None
    allow_non_restored_state: bool = False
    sql: str | None = None  # an inline SQL script (instead of entry)
    sql_from: ConfigMapKeyRef | None = None  # the script in a ConfigMap (instead of entry)

    @property
    def is_sql(self) -> bool:
        return self.sql is not None or self.sql_from is not None


@dataclass(frozen=True, slots=True)
class JobManagerSpec:
    resources: Resources = Resources("0.5", "1Gi")
    pod_template: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskManagerSpec:
    slots: int = 1
    resources: Resources = Resources("1", "2Gi")
    pod_template: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckpointingSpec:
    interval: str | None = None
    mode: str = "EXACTLY_ONCE"
    dir: str | None = None


@dataclass(frozen=True, slots=True)
class SavepointsSpec:
    dir: str | None = None
    periodic_interval: str | None = None
    max_history: int = 10
    max_age: str = "24 h"
    on_deletion: bool = False


@dataclass(frozen=True, slots=True)
class S3Spec:
    endpoint: str | None = None
    credentials_secret: str | None = None


@dataclass(frozen=True, slots=True)
class AutoscalerSpec:
    """spec.autoscaler as written (durations as Flink duration strings); autoscaler/settings.py reads it."""

    enabled: bool = False
    mode: str = "scale"  # scale | advise
    metrics_interval: str = "15 s"
    metrics_window: str = "10 min"
    stabilization: str = "5 min"
    target_utilization: float = 0.7
    utilization_boundary: float = 0.3
    catch_up_duration: str = "5 min"
    scale_down_delay: str = "1 h"
    min_parallelism: int = 1
    max_parallelism: int | None = None
    max_rescales_per_hour: int = 2

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AutoscalerSpec:
        return cls(bool(d.get("enabled", False)), d.get("mode", "scale"), d.get("metricsInterval", "15 s"),
                   d.get("metricsWindow", "10 min"), d.get("stabilization", "5 min"),
                   d.get("targetUtilization", 0.7), d.get("utilizationBoundary", 0.3),
                   d.get("catchUpDuration", "5 min"), d.get("scaleDownDelay", "1 h"), d.get("minParallelism", 1),
                   d.get("maxParallelism"), d.get("maxRescalesPerHour", 2))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "enabled": self.enabled, "mode": self.mode, "metricsInterval": self.metrics_interval,
            "metricsWindow": self.metrics_window, "stabilization": self.stabilization,
            "targetUtilization": self.target_utilization, "utilizationBoundary": self.utilization_boundary,
            "catchUpDuration": self.catch_up_duration, "scaleDownDelay": self.scale_down_delay,
            "minParallelism": self.min_parallelism, "maxRescalesPerHour": self.max_rescales_per_hour,
        }
        _put(out, "maxParallelism", self.max_parallelism)
        return out


@dataclass(frozen=True, slots=True)
class IssuerRef:
    """A cert-manager issuer (spec.security.tls.issuerRef)."""

    name: str
    kind: str = "Issuer"
    group: str = "cert-manager.io"


@dataclass(frozen=True, slots=True)
class TlsSpec:
    enabled: bool = False
    issuer_ref: IssuerRef | None = None  # None: the operator generates the material


@dataclass(frozen=True, slots=True)
class NetworkPolicySpec:
    enabled: bool = True
    metrics_namespace_selector: Mapping[str, Any] | None = None  # None: every namespace


@dataclass(frozen=True, slots=True)
class SecuritySpec:
    """spec.security (schema_security.py)."""

    tls: TlsSpec = TlsSpec()
    network_policy: NetworkPolicySpec = NetworkPolicySpec()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SecuritySpec:
        tls, np = d.get("tls") or {}, d.get("networkPolicy") or {}
        issuer = tls.get("issuerRef")
        return cls(TlsSpec(bool(tls.get("enabled", False)),
                           IssuerRef(str(issuer.get("name", "")), str(issuer.get("kind", "Issuer")),
                                     str(issuer.get("group", "cert-manager.io"))) if issuer else None),
                   NetworkPolicySpec(bool(np.get("enabled", True)), np.get("metricsNamespaceSelector")))

    def to_dict(self) -> dict[str, Any]:
        tls: dict[str, Any] = {"enabled": self.tls.enabled}
        if self.tls.issuer_ref is not None:
            i = self.tls.issuer_ref
            tls["issuerRef"] = {"name": i.name, "kind": i.kind, "group": i.group}
        np: dict[str, Any] = {"enabled": self.network_policy.enabled}
        _put(np, "metricsNamespaceSelector", copy.deepcopy(self.network_policy.metrics_namespace_selector))
        return {"tls": tls, "networkPolicy": np}


@dataclass(frozen=True, slots=True)
class IngressSpec:
    """spec.ingress (schema_ingress.py): the Flink Kubernetes Operator's template, className and annotations."""

    template: str
    class_name: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    controller_namespace_selector: Mapping[str, Any] | None = None  # admitted to REST by the NetworkPolicy

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> IngressSpec | None:
        if not d:
            return None
        return cls(str(d.get("template", "")), d.get("className"), dict(d.get("annotations") or {}),
                   d.get("controllerNamespaceSelector"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"template": self.template}
        _put(out, "className", self.class_name)
        _put(out, "annotations", dict(self.annotations) or None)
        _put(out, "controllerNamespaceSelector", copy.deepcopy(self.controller_namespace_selector))
        return out


@dataclass(frozen=True, slots=True)
class FlinkJobSpec:
    """The desired state of one FlinkJob. Mappings inside are treated as read-only."""

    image: str
    job: JobSpec
    image_pull_policy: str = "IfNotPresent"
    service_account: str | None = None
    mode: str = "streaming"
    job_manager: JobManagerSpec = JobManagerSpec()
    task_manager: TaskManagerSpec = TaskManagerSpec()
    checkpointing: CheckpointingSpec = CheckpointingSpec()
    savepoints: SavepointsSpec = SavepointsSpec()
    s3: S3Spec = S3Spec()
    autoscaler: AutoscalerSpec = AutoscalerSpec()
    security: SecuritySpec = SecuritySpec()
    flink_configuration: Mapping[str, str] = field(default_factory=dict)
    restart_nonce: int | None = None
    pod_template: Mapping[str, Any] = field(default_factory=dict)
    spark: SparkSpec = SparkSpec()  # mode 'batch' (batch/)
    restart_policy: RestartPolicy = RestartPolicy()  # mode 'batch'
    ingress: IngressSpec | None = None  # the dashboard from outside the cluster (resources/ingress.py)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> FlinkJobSpec:
        d = apply_defaults(SPEC, dict(raw))
        job, jm, tm = d.get("job") or {}, d["jobManager"], d["taskManager"]
        cp, sp, s3 = d["checkpointing"], d["savepoints"], d["s3"]
        return cls(
            image=str(d.get("image", "")),
            image_pull_policy=d["imagePullPolicy"],
            service_account=d.get("serviceAccount"),
            mode=d["mode"],
            job=JobSpec(
                entry=str(job.get("entry", "")),
                args=tuple(str(a) for a in job.get("args") or ()),
                parallelism=job.get("parallelism", 1),
                max_parallelism=job.get("maxParallelism", 128),
                upgrade_mode=job.get("upgradeMode", "stateless"),
                state=job.get("state", "running"),
                savepoint_trigger_nonce=job.get("savepointTriggerNonce"),
                initial_savepoint_path=job.get("initialSavepointPath"),
                allow_non_restored_state=bool(job.get("allowNonRestoredState", False)),
                sql=None if job.get("sql") is None else str(job["sql"]),
                sql_from=_config_map_key_ref(job.get("sqlFrom")),
            ),
            job_manager=JobManagerSpec(Resources(str(jm["resources"]["cpu"]), str(jm["resources"]["memory"])),
                                       jm.get("podTemplate") or {}),
            task_manager=TaskManagerSpec(tm["slots"],
                                         Resources(str(tm["resources"]["cpu"]), str(tm["resources"]["memory"])),
                                         tm.get("podTemplate") or {}),
            checkpointing=CheckpointingSpec(cp.get("interval"), cp["mode"], cp.get("dir")),
            savepoints=SavepointsSpec(sp.get("dir"), sp.get("periodicInterval"), sp["maxHistory"], sp["maxAge"],
                                      sp["onDeletion"]),
            s3=S3Spec(s3.get("endpoint"), s3.get("credentialsSecret")),
            autoscaler=AutoscalerSpec.from_dict(d["autoscaler"]),
            security=SecuritySpec.from_dict(d["security"]),
            flink_configuration={str(k): str(v) for k, v in (d.get("flinkConfiguration") or {}).items()},
            restart_nonce=d.get("restartNonce"),
            pod_template=d.get("podTemplate") or {},
            spark=SparkSpec.from_dict(d["spark"]),
            restart_policy=RestartPolicy.from_dict(d["restartPolicy"]),
            ingress=IngressSpec.from_dict(d.get("ingress")),
        )

    def to_dict(self) -> dict[str, Any]:
        """The camelCase spec with defaults filled in; `from_dict(to_dict())` gives the same spec."""
        j = self.job
        job: dict[str, Any] = {
            "entry": j.entry, "args": list(j.args), "parallelism": j.parallelism,
            "maxParallelism": j.max_parallelism, "upgradeMode": j.upgrade_mode, "state": j.state,
            "allowNonRestoredState": j.allow_non_restored_state,
        }
        _put(job, "savepointTriggerNonce", j.savepoint_trigger_nonce)
        _put(job, "initialSavepointPath", j.initial_savepoint_path)
        _put(job, "sql", j.sql)
        if j.sql_from is not None:
            job["sqlFrom"] = {"configMapKeyRef": {"name": j.sql_from.name, "key": j.sql_from.key}}
        out: dict[str, Any] = {"image": self.image, "imagePullPolicy": self.image_pull_policy, "mode": self.mode,
                               "job": job}
        _put(out, "serviceAccount", self.service_account)
        out["jobManager"] = {"resources": _resources(self.job_manager.resources)}
        _put(out["jobManager"], "podTemplate", copy.deepcopy(dict(self.job_manager.pod_template)) or None)
        out["taskManager"] = {"slots": self.task_manager.slots, "resources": _resources(self.task_manager.resources)}
        _put(out["taskManager"], "podTemplate", copy.deepcopy(dict(self.task_manager.pod_template)) or None)
        out["checkpointing"] = {"mode": self.checkpointing.mode}
        _put(out["checkpointing"], "interval", self.checkpointing.interval)
        _put(out["checkpointing"], "dir", self.checkpointing.dir)
        sp = self.savepoints
        out["savepoints"] = {"maxHistory": sp.max_history, "maxAge": sp.max_age, "onDeletion": sp.on_deletion}
        _put(out["savepoints"], "dir", sp.dir)
        _put(out["savepoints"], "periodicInterval", sp.periodic_interval)
        out["s3"] = {}
        _put(out["s3"], "endpoint", self.s3.endpoint)
        _put(out["s3"], "credentialsSecret", self.s3.credentials_secret)
        out["autoscaler"] = self.autoscaler.to_dict()
        out["security"] = self.security.to_dict()
        _put(out, "flinkConfiguration", dict(self.flink_configuration) or None)
        _put(out, "restartNonce", self.restart_nonce)
        _put(out, "podTemplate", copy.deepcopy(dict(self.pod_template)) or None)
        _put(out, "ingress", self.ingress.to_dict() if self.ingress is not None else None)
        out["spark"] = self.spark.to_dict()
        out["restartPolicy"] = self.restart_policy.to_dict()
        return out


def _config_map_key_ref(d: Any) -> ConfigMapKeyRef | None:
    """spec.job.sqlFrom's configMapKeyRef; missing parts stay empty for validation to name."""
    if not isinstance(d, Mapping):
        return None
    ref = d.get("configMapKeyRef")
    ref = ref if isinstance(ref, Mapping) else {}
    return ConfigMapKeyRef(str(ref.get("name") or ""), str(ref.get("key") or ""))


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        d[key] = value


def _resources(r: Resources) -> dict[str, str]:
    return {"cpu": r.cpu, "memory": r.memory}


# Fields whose change needs no redeployment: the operator applies them itself. A change of any
# other field is an upgrade (as in the Flink Kubernetes Operator).
_OPERATOR_ONLY = {
    "job": ("state", "savepointTriggerNonce"),
    "savepoints": ("periodicInterval", "maxHistory", "maxAge", "onDeletion"),
    # The autoscaler's settings steer the operator; the parallelism it chooses reaches the job as
    # per-vertex overrides through its own rescale, not as a spec change.
    "autoscaler": ("enabled", "mode", "metricsInterval", "metricsWindow", "stabilization", "targetUtilization",
                   "utilizationBoundary", "catchUpDuration", "scaleDownDelay", "minParallelism", "maxParallelism",
                   "maxRescalesPerHour"),
    # Batch-only sections (batch/): a streaming job does not use them, so their change needs no upgrade.
    "spark": ("driver", "executor", "sparkConf", "dynamicAllocation"),
    "restartPolicy": ("type", "onFailureRetries", "onFailureRetryInterval"),
}


def deployment_relevant(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a camelCase spec whose change requires an upgrade of the running job."""
    out = copy.deepcopy(dict(spec))
    for section, fields in _OPERATOR_ONLY.items():
        if isinstance(out.get(section), dict):
            for f in fields:
                out[section].pop(f, None)
    return out


def needs_upgrade(desired: FlinkJobSpec, reconciled: Mapping[str, Any] | None) -> bool:
    """True when `desired` differs from the reconciled spec in a field that needs a redeployment."""
    if reconciled is None:
        return True
    before = FlinkJobSpec.from_dict(reconciled).to_dict()
    return deployment_relevant(desired.to_dict()) != deployment_relevant(before)


def duration_seconds(value: str | None) -> float:
    """Seconds of a Flink duration string; None (unset) is 0."""
    return 0.0 if value is None else parse_duration_ms(value) / 1000
