"""The DataStream API (`pyflink.datastream`): what a program calls. Nothing here runs anything.

Every method records a `Transformation` (strom.graph) in the environment; `execute()` hands the
graph to an executor found by name (executors.py), so this package never imports the runtime.

The environment and its configuration:

    stream_execution_environment.py  `StreamExecutionEnvironment`: configuration, transformations, execute
    executors.py                     finds the executor (embedded runtime, cluster client, or Spark for BATCH)
    execution_mode.py                RuntimeExecutionMode, CheckpointingMode, TimeCharacteristic
    checkpoint_config.py             `CheckpointConfig` (a view over the configuration's checkpoint keys)
    checkpoint_storage.py            where checkpoints go (JobManager memory, file:// or s3://)
    state_backend.py                 HashMapStateBackend / EmbeddedRocksDBStateBackend as Flink's keys
    externalized_checkpoint_retention.py  Flink 1.20's name for ExternalizedCheckpointCleanup
    slot_sharing_group.py            `SlotSharingGroup`: a named group of operators and its resources
    collect.py                       `execute_and_collect`: a job's records streamed back to the caller

Streams and functions:

    data_stream.py       DataStream, KeyedStream, ConnectedStreams, broadcast streams, DataStreamSink
    functions.py         user function interfaces (MapFunction, KeyedProcessFunction, ...) and callable adapters
    state.py             state descriptors and state interfaces (with TTL config)
    output_tag.py        `OutputTag`: names a side output
    window.py            WindowedStream / AllWindowedStream; re-exports windowing/ under PyFlink's names
    windowing/           windows, assigners, triggers, evictors (see windowing/__init__)
    joins.py             window joins and co-groups (`ds1.join(ds2)`, `ds1.co_group(ds2)`)
    projection.py        `DataStream.project` on tuple records
    async_data_stream.py `AsyncDataStream`: async I/O (ordered/unordered wait)
    async_functions.py   `AsyncFunction` and the retry contracts of async I/O
    async_retry_strategies.py  fixed-delay and exponential-backoff retry strategies and predicates
    two_phase_commit.py  `TwoPhaseCommitSinkFunction`: exactly-once sinks written as SinkFunctions
    connectors/          sources and sinks under PyFlink's paths (see connectors/__init__)
    formats/             record formats under PyFlink's paths (see formats/__init__)

PyFlink module paths kept importable (re-exports only): checkpointing_mode.py, execution_config.py,
time_characteristic.py, time_domain.py, timerservice.py.
"""

from strom.datastream.async_data_stream import AsyncDataStream
from strom.datastream.async_functions import AsyncFunction
from strom.datastream.checkpoint_config import CheckpointConfig, ExternalizedCheckpointCleanup
from strom.datastream.checkpoint_storage import (
    CheckpointStorage,
    CustomCheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from strom.datastream.data_stream import (
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
    DataStream,
    DataStreamSink,
    KeyedStream,
)
from strom.datastream.execution_config import ExecutionConfig
from strom.datastream.execution_mode import CheckpointingMode, RuntimeExecutionMode, TimeCharacteristic
from strom.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention
from strom.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    BroadcastProcessFunction,
    CheckpointedFunction,
    CheckpointListener,
    CoFlatMapFunction,
    CoGroupFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatJoinFunction,
    FlatMapFunction,
    JoinFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessJoinFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    SourceFunction,
    TimeDomain,
    TimerService,
    WindowFunction,
)
from strom.datastream.output_tag import OutputTag
from strom.datastream.slot_sharing_group import MemorySize, SlotSharingGroup
from strom.datastream.state_backend import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    FsStateBackend,
    HashMapStateBackend,
    MemoryStateBackend,
    PredefinedOptions,
    RocksDBStateBackend,
    StateBackend,
)
from strom.datastream.stream_execution_environment import JobExecutionResult, StreamExecutionEnvironment
from strom.datastream.two_phase_commit import TwoPhaseCommitSinkFunction
from strom.datastream.window import (
    AllWindowedStream,
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
    WindowedStream,
)

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AllWindowedStream",
    "AsyncDataStream",
    "AsyncFunction",
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastStream",
    "CheckpointConfig",
    "CheckpointListener",
    "CheckpointStorage",
    "CheckpointedFunction",
    "CheckpointingMode",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "CountWindow",
    "CustomCheckpointStorage",
    "CustomStateBackend",
    "DataStream",
    "DataStreamSink",
    "EmbeddedRocksDBStateBackend",
    "ExecutionConfig",
    "ExternalizedCheckpointCleanup",
    "ExternalizedCheckpointRetention",
    "FileSystemCheckpointStorage",
    "FilterFunction",
    "FlatJoinFunction",
    "FlatMapFunction",
    "FsStateBackend",
    "GlobalWindow",
    "HashMapStateBackend",
    "JobExecutionResult",
    "JobManagerCheckpointStorage",
    "JoinFunction",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "MemorySize",
    "MemoryStateBackend",
    "MergingWindowAssigner",
    "OutputTag",
    "Partitioner",
    "PredefinedOptions",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RocksDBStateBackend",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "SinkFunction",
    "SlotSharingGroup",
    "SourceFunction",
    "StateBackend",
    "StreamExecutionEnvironment",
    "TimeCharacteristic",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "TwoPhaseCommitSinkFunction",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowedStream",
]
