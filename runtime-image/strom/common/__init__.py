"""Types, records, time and configuration shared by the user API and the runtime (`pyflink.common`).

The room for what two rooms need (ARCHITECTURE.md): the user API, the graphs and the runtime all import
from here, and this package imports none of them (`strom.runtime` is forbidden by an import-linter
contract). What a PyFlink user imports from `pyflink.common` is re-exported below; the rest are the
engine's shared contracts. mypy --strict holds for every module here (tests/test_types.py).

PyFlink's `pyflink.common` (names a job file imports)
    row.py, types.py             Row and RowKind
    typeinfo.py                  Types.* type information; java_strings.py: print() text as PyFlink's declared
                                 types give it; declared_numbers.py: FLOAT/BYTE..LONG values as PyFlink's coders
                                 hold them
    time.py                      Duration (2.x), Time (1.x), Instant
    watermark_strategy.py        WatermarkStrategy, WatermarkGenerator, TimestampAssigner
    serialization.py             Encoder, SerializationSchema, SimpleStringSchema
    execution_config.py          ExecutionConfig (a view over the Configuration); execution_mode.py,
                                 input_dependency_constraint.py: DataSet-era settings, recorded only
    restart_strategy.py          RestartStrategies as Flink's restart-strategy.* keys
    job_client.py, job_id.py, job_execution_result.py, completable_future.py: what execute/execute_async return
    job_status.py                JobStatus: THE job-state table of the engine, with Flink's terminal rules

Configuration (one registry of typed options, Flink's keys and defaults)
    config_options.py            ConfigOption[T], the registry, option() to declare one, read_option()
    configuration.py             Configuration: values parsed and checked when set; get(OPTION) -> T
    port_ranges.py, sensitive_keys.py: port syntax; which keys hold secrets and how they are masked
    tls_options.py, tls.py       security.ssl.* keys and the ssl.SSLContexts built from them
    s3_client.py                 s3.* keys and the boto3 client (shared by checkpoints and the file source)
    python_options.py, python_dependencies.py, python_environment.py: a job's python.* files and requirements

Engine contracts
    ids.py                       JobId, VertexId, TaskManagerId, CheckpointId, OperatorUid (NewTypes)
    key_groups.py                key -> key group -> subtask (stable hash; refuses keys without one)
    job_payload.py               the bytes a submitted job travels as (header + cloudpickled StreamGraph)
    record_size.py               cheap serialized-size estimates that cut buffers and source batches
    unsupported.py               UnsupportedFeatureError for Flink APIs Strom does not provide; refused_names.py:
                                 PyFlink names left out, importable, refusing any use in one line
"""

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
from strom.common.serialization import (
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
    TypeSerializer,
)
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
    "TypeSerializer",
    "TypeInformation",
    "Types",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarkStrategy",
]
