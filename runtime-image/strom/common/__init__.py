"""Types, records, time and configuration shared by the user API and the runtime (`pyflink.common`)."""

from strom.common import python_options  # noqa: F401 - registers Flink's python.* keys with OPTIONS
from strom.common.completable_future import CompletableFuture
from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.common.execution_config import ExecutionConfig
from strom.common.execution_mode import ExecutionMode
from strom.common.input_dependency_constraint import InputDependencyConstraint
from strom.common.job_client import JobClient
from strom.common.job_execution_result import JobExecutionResult
from strom.common.job_id import JobID
from strom.common.job_status import JobStatus
from strom.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration
from strom.common.row import Row, RowKind
from strom.common.serialization import DeserializationSchema, Encoder, SerializationSchema, SimpleStringSchema
from strom.common.time import Duration, Instant, Time
from strom.common.typeinfo import RowTypeInfo, TupleTypeInfo, TypeInformation, Types
from strom.common.watermark_strategy import (
    TimestampAssigner,
    Watermark,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkStrategy,
)

__all__ = [
    "CompletableFuture",
    "ConfigError",
    "Configuration",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "ExecutionMode",
    "InputDependencyConstraint",
    "Instant",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "RowKind",
    "RowTypeInfo",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TimestampAssigner",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarkStrategy",
]
