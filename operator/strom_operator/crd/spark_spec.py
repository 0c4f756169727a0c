"""`spec.spark` and `spec.restartPolicy`: the typed form and the OpenAPI schema of both.

Field names follow the Spark operator's SparkApplication (driver/executor cores, memory and
instances, sparkConf, dynamicAllocation, restartPolicy with onFailureRetries and
onFailureRetryInterval). Memory is written as Spark writes it ('512m', '2g'); Spark itself
sizes the executor pods from it, the operator sizes the driver pod (spark_conf.py).
schema_spec.py puts the schema nodes into the CRD; spec.py parses them with these classes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from strom_operator.crd.schema_types import Schema, boolean, free_object, integer, obj, string, string_map

# Spark's size strings: a number with an optional binary unit; a bare number means MiB for memory.
SPARK_MEMORY_PATTERN = r"^\s*\d+\s*([kKmMgGtT][bB]?)?\s*$"
RESTART_POLICY_TYPES = ("Never", "OnFailure")


@dataclass(frozen=True, slots=True)
class DriverSpec:
    cores: int = 1
    memory: str = "1g"
    pod_template: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecutorSpec:
    instances: int = 2
    cores: int = 1
    memory: str = "1g"
    pod_template: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DynamicAllocationSpec:
    enabled: bool = False
    min_executors: int = 0
    max_executors: int | None = None
    initial_executors: int | None = None


@dataclass(frozen=True, slots=True)
class SparkSpec:
    driver: DriverSpec = DriverSpec()
    executor: ExecutorSpec = ExecutorSpec()
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    dynamic_allocation: DynamicAllocationSpec = DynamicAllocationSpec()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SparkSpec:
        """From the defaulted camelCase form (schema defaults already applied)."""
        dr, ex, da = d.get("driver") or {}, d.get("executor") or {}, d.get("dynamicAllocation") or {}
        return cls(
            driver=DriverSpec(dr.get("cores", 1), str(dr.get("memory", "1g")), dr.get("podTemplate") or {}),
            executor=ExecutorSpec(ex.get("instances", 2), ex.get("cores", 1), str(ex.get("memory", "1g")),
                                  ex.get("podTemplate") or {}),
            spark_conf={str(k): str(v) for k, v in (d.get("sparkConf") or {}).items()},
            dynamic_allocation=DynamicAllocationSpec(bool(da.get("enabled", False)), da.get("minExecutors", 0),
                                                     da.get("maxExecutors"), da.get("initialExecutors")),
        )

    def to_dict(self) -> dict[str, Any]:
        dr, ex, da = self.driver, self.executor, self.dynamic_allocation
        driver: dict[str, Any] = {"cores": dr.cores, "memory": dr.memory}
        executor: dict[str, Any] = {"instances": ex.instances, "cores": ex.cores, "memory": ex.memory}
        if dr.pod_template:
            driver["podTemplate"] = copy.deepcopy(dict(dr.pod_template))
        if ex.pod_template:
            executor["podTemplate"] = copy.deepcopy(dict(ex.pod_template))
        dynamic: dict[str, Any] = {"enabled": da.enabled, "minExecutors": da.min_executors}
        if da.max_executors is not None:
            dynamic["maxExecutors"] = da.max_executors
        if da.initial_executors is not None:
            dynamic["initialExecutors"] = da.initial_executors
        out: dict[str, Any] = {"driver": driver, "executor": executor, "dynamicAllocation": dynamic}
        if self.spark_conf:
            out["sparkConf"] = dict(self.spark_conf)
        return out


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """What happens when the driver fails: Never, or OnFailure up to `on_failure_retries` more times,
    waiting `on_failure_retry_interval` before the first retry and twice as long before each next."""

    type: str = "Never"
    on_failure_retries: int = 3
    on_failure_retry_interval: str = "10 s"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RestartPolicy:
        return cls(d.get("type", "Never"), d.get("onFailureRetries", 3), str(d.get("onFailureRetryInterval", "10 s")))

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "onFailureRetries": self.on_failure_retries,
                "onFailureRetryInterval": self.on_failure_retry_interval}


def _memory(description: str, default: str) -> Schema:
    return string(f"{description} In Spark's notation, e.g. '512m' or '2g' (a bare number is MiB). "
                  f"Default {default}.", default=default, pattern=SPARK_MEMORY_PATTERN)


def _pod_template(whose: str) -> Schema:
    return free_object(
        f"A Kubernetes PodTemplateSpec merged into {whose} (after spec.podTemplate): containers, env, volumes "
        "and volumeMounts are merged by name ('flink-main-container' is Strom's own container).")


SPARK: Schema = obj("Spark-on-Kubernetes settings of a batch job (spec.mode 'batch'): the driver pod the operator "
               "creates, the executor pods Spark creates, and Spark's own configuration.", {
                   "driver": obj("The driver pod: it runs the job's entry point with Spark in client mode.", {
                       "cores": integer("CPU cores of the driver (spark.driver.cores, the pod's CPU request).",
                                        minimum=1, default=1),
                       "memory": _memory("Heap of the driver JVM (spark.driver.memory); the pod requests it plus "
                                         "Spark's memory overhead.", "1g"),
                       "podTemplate": _pod_template("the driver pod"),
                   }, default={}),
                   "executor": obj("The executor pods Spark creates for the job.", {
                       "instances": integer("Number of executors (spark.executor.instances); with dynamic "
                                            "allocation, the initial number unless initialExecutors is set.",
                                            minimum=1, default=2),
                       "cores": integer("CPU cores per executor (spark.executor.cores).", minimum=1, default=1),
                       "memory": _memory("Heap per executor (spark.executor.memory).", "1g"),
                       "podTemplate": _pod_template("the executor pods"),
                   }, default={}),
                   "sparkConf": string_map(
                       "Further Spark configuration (spark.* keys), e.g. spark.sql.shuffle.partitions. Keys the "
                       "operator derives from other fields are rejected with the field to use instead."),
                   "dynamicAllocation": obj(
                       "Spark's dynamic allocation: executors come and go with the job's backlog of tasks "
                       "(with shuffle tracking, as Kubernetes has no external shuffle service).", {
                           "enabled": boolean("Enable dynamic allocation (spark.dynamicAllocation.enabled).",
                                              default=False),
                           "minExecutors": integer("Lower bound of executors (spark.dynamicAllocation.minExecutors).",
                                                   minimum=0, default=0),
                           "maxExecutors": integer("Upper bound of executors (spark.dynamicAllocation.maxExecutors); "
                                                   "unset: Spark's default (unbounded).", minimum=1),
                           "initialExecutors": integer("Executors at start (spark.dynamicAllocation."
                                                       "initialExecutors); unset: executor.instances.", minimum=0),
                       }, default={}),
               }, default={})


def restart_policy_schema(interval: Schema) -> Schema:
    """`spec.restartPolicy`; `interval` is the duration node of onFailureRetryInterval (schema_spec builds
    duration nodes with the pattern the engine parses)."""
    return obj(
    "What the operator does when a batch job's driver fails (spec.mode 'batch' only; a streaming job's "
    "restarts are the engine's restart strategy).", {
        "type": string("'Never' leaves a failed job FAILED; 'OnFailure' creates a new driver pod, up to "
                       "onFailureRetries times.", enum=RESTART_POLICY_TYPES, default="Never"),
        "onFailureRetries": integer("How many times a failed driver is retried under 'OnFailure'.", minimum=0,
                                    default=3),
        "onFailureRetryInterval": interval,
    }, default={})
