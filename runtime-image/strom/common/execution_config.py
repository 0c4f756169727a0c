"""`ExecutionConfig` (`pyflink.common.ExecutionConfig`): a view over the environment's Configuration.

What the engine reads lives in the Configuration under Flink's keys (parallelism, max parallelism,
watermark interval, object reuse, restart strategy). PyFlink's settings of Java serialization
(Kryo, Avro, POJO registration), the closure cleaner, generated uids and task cancellation have no
counterpart in a Python engine: they are accepted and read back, so programs that set them run,
and they change nothing.
"""

from __future__ import annotations

from typing import Any

from strom.common import config_options as opts
from strom.common.configuration import Configuration
from strom.common.execution_mode import ExecutionMode
from strom.common.input_dependency_constraint import InputDependencyConstraint
from strom.common.restart_strategy import (
    RestartStrategyConfiguration,
    apply_restart_strategy,
    restart_strategy_of,
)
from strom.common.time import Duration, to_millis


class ExecutionConfig:
    def __init__(self, configuration: Configuration) -> None:
        self._conf = configuration
        # JVM-only settings: read back as set, no effect (see the module docstring)
        self._jvm: dict[str, Any] = {
            "closure_cleaner": True,
            "latency_tracking_interval": 0,
            "task_cancellation_interval": 30_000,
            "task_cancellation_timeout": 180_000,
            "force_kryo": False,
            "force_avro": False,
            "generic_types": True,
            "auto_generated_uids": True,
            "auto_type_registration": True,
            "snapshot_compression": False,
            "kryo_types": [],
            "pojo_types": [],
            "default_kryo_serializers": {},
            "kryo_type_serializers": {},
            "execution_mode": ExecutionMode.PIPELINED,
            "input_dependency_constraint": InputDependencyConstraint.ANY,
        }

    # -- what the engine reads --------------------------------------------------------------------
    def set_auto_watermark_interval(self, interval: int | Duration) -> ExecutionConfig:
        self._conf.set(opts.AUTO_WATERMARK_INTERVAL.key, to_millis(interval, what="interval"))
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._conf.get(opts.AUTO_WATERMARK_INTERVAL)

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        self._conf.set(opts.PARALLELISM.key, parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._conf.get(opts.PARALLELISM)

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        self._conf.set(opts.MAX_PARALLELISM.key, max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._conf.get(opts.MAX_PARALLELISM)

    def enable_object_reuse(self) -> ExecutionConfig:
        self._conf.set(opts.OBJECT_REUSE.key, True)
        return self

    def disable_object_reuse(self) -> ExecutionConfig:
        self._conf.set(opts.OBJECT_REUSE.key, False)
        return self

    def is_object_reuse_enabled(self) -> bool:
        return self._conf.get(opts.OBJECT_REUSE)

    def set_restart_strategy(self, restart_strategy_configuration: RestartStrategyConfiguration) -> ExecutionConfig:
        """Writes Flink's `restart-strategy.*` keys, which the runtime's restart strategy reads."""
        apply_restart_strategy(self._conf, restart_strategy_configuration)
        return self

    def get_restart_strategy(self) -> RestartStrategyConfiguration:
        return restart_strategy_of(self._conf)

    def set_global_job_parameters(self, params: dict[str, Any]) -> ExecutionConfig:
        """Written to pipeline.global-job-parameters, which every function reads with get_job_parameter."""
        self._conf.set(opts.GLOBAL_JOB_PARAMETERS.key, {str(k): str(v) for k, v in dict(params).items()})
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        params = self._conf.get(opts.GLOBAL_JOB_PARAMETERS)
        return dict(params) if params else {}

    # -- JVM-only settings: accepted, read back, no effect ----------------------------------------
    def _set(self, name: str, value: Any) -> ExecutionConfig:
        self._jvm[name] = value
        return self

    def enable_closure_cleaner(self) -> ExecutionConfig:
        return self._set("closure_cleaner", True)

    def disable_closure_cleaner(self) -> ExecutionConfig:
        return self._set("closure_cleaner", False)

    def is_closure_cleaner_enabled(self) -> bool:
        return bool(self._jvm["closure_cleaner"])

    def set_latency_tracking_interval(self, interval: int) -> ExecutionConfig:
        return self._set("latency_tracking_interval", int(interval))

    def get_latency_tracking_interval(self) -> int:
        return int(self._jvm["latency_tracking_interval"])

    def set_task_cancellation_interval(self, interval: int) -> ExecutionConfig:
        return self._set("task_cancellation_interval", int(interval))

    def get_task_cancellation_interval(self) -> int:
        return int(self._jvm["task_cancellation_interval"])

    def set_task_cancellation_timeout(self, timeout: int) -> ExecutionConfig:
        return self._set("task_cancellation_timeout", int(timeout))

    def get_task_cancellation_timeout(self) -> int:
        return int(self._jvm["task_cancellation_timeout"])

    def enable_force_kryo(self) -> ExecutionConfig:
        return self._set("force_kryo", True)

    def disable_force_kryo(self) -> ExecutionConfig:
        return self._set("force_kryo", False)

    def is_force_kryo_enabled(self) -> bool:
        return bool(self._jvm["force_kryo"])

    def enable_generic_types(self) -> ExecutionConfig:
        return self._set("generic_types", True)

    def disable_generic_types(self) -> ExecutionConfig:
        return self._set("generic_types", False)

    def has_generic_types_disabled(self) -> bool:
        return not self._jvm["generic_types"]

    def enable_auto_generated_uids(self) -> ExecutionConfig:
        return self._set("auto_generated_uids", True)

    def disable_auto_generated_uids(self) -> ExecutionConfig:
        return self._set("auto_generated_uids", False)

    def has_auto_generated_uids_enabled(self) -> bool:
        return bool(self._jvm["auto_generated_uids"])

    def enable_force_avro(self) -> ExecutionConfig:
        return self._set("force_avro", True)

    def disable_force_avro(self) -> ExecutionConfig:
        return self._set("force_avro", False)

    def is_force_avro_enabled(self) -> bool:
        return bool(self._jvm["force_avro"])

    def disable_auto_type_registration(self) -> ExecutionConfig:
        return self._set("auto_type_registration", False)

    def is_auto_type_registration_disabled(self) -> bool:
        return not self._jvm["auto_type_registration"]

    def set_use_snapshot_compression(self, use_snapshot_compression: bool) -> ExecutionConfig:
        return self._set("snapshot_compression", bool(use_snapshot_compression))

    def is_use_snapshot_compression(self) -> bool:
        return bool(self._jvm["snapshot_compression"])

    def set_execution_mode(self, execution_mode: ExecutionMode) -> ExecutionConfig:
        return self._set("execution_mode", execution_mode)

    def get_execution_mode(self) -> ExecutionMode:
        return ExecutionMode(self._jvm["execution_mode"])  # the member itself (set_execution_mode stores one)

    def set_default_input_dependency_constraint(
        self, input_dependency_constraint: InputDependencyConstraint
    ) -> ExecutionConfig:
        return self._set("input_dependency_constraint", input_dependency_constraint)

    def get_default_input_dependency_constraint(self) -> InputDependencyConstraint:
        return InputDependencyConstraint(self._jvm["input_dependency_constraint"])

    def add_default_kryo_serializer(self, type_class_name: str, serializer_class_name: str) -> ExecutionConfig:
        self._jvm["default_kryo_serializers"][type_class_name] = serializer_class_name
        return self

    def register_type_with_kryo_serializer(self, type_class_name: str, serializer_class_name: str) -> ExecutionConfig:
        self._jvm["kryo_type_serializers"][type_class_name] = serializer_class_name
        return self

    def register_pojo_type(self, type_class_name: str) -> ExecutionConfig:
        self._jvm["pojo_types"].append(type_class_name)
        return self

    def register_kryo_type(self, type_class_name: str) -> ExecutionConfig:
        self._jvm["kryo_types"].append(type_class_name)
        return self

    def get_registered_types_with_kryo_serializer_classes(self) -> dict[str, str]:
        return dict(self._jvm["kryo_type_serializers"])

    def get_default_kryo_serializer_classes(self) -> dict[str, str]:
        return dict(self._jvm["default_kryo_serializers"])

    def get_registered_kryo_types(self) -> list[str]:
        return list(self._jvm["kryo_types"])

    def get_registered_pojo_types(self) -> list[str]:
        return list(self._jvm["pojo_types"])

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ExecutionConfig)
            and other._conf.to_dict() == self._conf.to_dict()
            and other._jvm == self._jvm
        )

    def __hash__(self) -> int:
        return id(self)
