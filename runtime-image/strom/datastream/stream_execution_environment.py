"""`StreamExecutionEnvironment`: where a program starts and how it is executed.

It holds the configuration and every transformation the program declared. `execute`
turns them into a StreamGraph and hands it to an executor: the embedded local
cluster unless a submitting client (`strom run`, application mode) installed another.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from strom.common import config_options as opts
from strom.common.configuration import Configuration
from strom.common.time import Duration, to_millis
from strom.common.typeinfo import TypeInformation, check_type_info
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream.data_stream import DataStream
from strom.datastream.execution_config import CheckpointConfig, ExecutionConfig
from strom.datastream.execution_mode import CheckpointingMode, RuntimeExecutionMode, TimeCharacteristic
from strom.graph.job_sources import job_source_files
from strom.graph.stream_graph import StreamGraph, effective_max_parallelism, generate_stream_graph
from strom.graph.transformations import OperatorDescriptor, Transformation

log = logging.getLogger(__name__)

# Set by a submitting client (the `strom` CLI) before the user program runs: the
# configuration from -D/--config, and the executor that runs the graph.
_context_configuration: Configuration | None = None
_context_executor: Callable[[StreamGraph], Any] | None = None


def set_context(configuration: Configuration | None, executor: Callable[[StreamGraph], Any] | None = None) -> None:
    global _context_configuration, _context_executor
    _context_configuration = configuration
    _context_executor = executor


class NoOperatorsError(RuntimeError):
    """execute() on a program that declared no operators."""


class JobExecutionResult:
    def __init__(self, job_id: str, net_runtime_ms: int, accumulators: dict[str, Any] | None = None) -> None:
        self._job_id = job_id
        self._net_runtime_ms = net_runtime_ms
        self._accumulators = accumulators or {}

    def get_job_id(self) -> str:
        return self._job_id

    def get_net_runtime(self) -> int:
        return self._net_runtime_ms

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self._accumulators)

    def __repr__(self) -> str:
        return f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime_ms} ms)"


class StreamExecutionEnvironment:
    def __init__(self, configuration: Configuration | None = None) -> None:
        conf = Configuration()
        if _context_configuration is not None:
            conf.add_all(_context_configuration)
        if configuration is not None:
            conf.add_all(configuration)
        self._conf = conf
        self._ids = itertools.count(1)
        self._transformations: list[Transformation] = []
        self._execution_config = ExecutionConfig(conf)

    @staticmethod
    def get_execution_environment(configuration: Configuration | None = None) -> StreamExecutionEnvironment:
        return StreamExecutionEnvironment(configuration)

    # -- configuration ---------------------------------------------------------------------------
    def get_config(self) -> ExecutionConfig:
        return self._execution_config

    def get_configuration(self) -> Configuration:
        return self._conf

    def configure(self, configuration: Configuration) -> StreamExecutionEnvironment:
        self._conf.add_all(configuration)
        return self

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        self._conf.set(opts.PARALLELISM.key, parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._conf.get(opts.PARALLELISM)

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= 32768:
            raise ValueError(f"max parallelism must be in [1, 32768], got {max_parallelism!r}")
        self._conf.set(opts.MAX_PARALLELISM.key, max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._conf.get(opts.MAX_PARALLELISM)

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
        """As in Flink, the program's mode wins over the command line's (`--runtime-mode`,
        `-D execution.runtime-mode`); a conflict is said in one line, never silently."""
        given = _context_configuration
        if given is not None and given.contains_key(opts.RUNTIME_MODE.key):
            outside = given.get(opts.RUNTIME_MODE)
            if outside != execution_mode.name:
                log.warning(
                    "the program sets %s %s (env.set_runtime_mode), which overrides %s from the command line "
                    "(--runtime-mode or -D), as in Flink; remove one of them to silence this",
                    opts.RUNTIME_MODE.key, execution_mode.name, outside,
                )
        self._conf.set(opts.RUNTIME_MODE.key, execution_mode.name)
        return self

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        self._conf.set(opts.BUFFER_TIMEOUT.key, timeout_millis)
        return self

    def get_buffer_timeout(self) -> int:
        return self._conf.get(opts.BUFFER_TIMEOUT)

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        self._conf.set(opts.OPERATOR_CHAINING.key, False)
        return self

    def is_chaining_enabled(self) -> bool:
        return self._conf.get(opts.OPERATOR_CHAINING)

    def set_stream_time_characteristic(self, characteristic: TimeCharacteristic) -> StreamExecutionEnvironment:
        return self  # Flink >= 1.12: event time is the default; kept for old programs

    def enable_checkpointing(self, interval: int, mode: CheckpointingMode | None = None) -> StreamExecutionEnvironment:
        self._conf.set(opts.CHECKPOINT_INTERVAL.key, interval)
        if mode is not None:
            self._conf.set(opts.CHECKPOINT_MODE.key, mode.name)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        return CheckpointConfig(self._conf)

    def get_checkpoint_interval(self) -> int:
        return self._conf.get(opts.CHECKPOINT_INTERVAL)

    def add_python_file(self, file_path: str) -> None:
        import sys

        path = os.path.dirname(file_path) if os.path.isfile(file_path) else file_path
        if path not in sys.path:
            sys.path.insert(0, path)

    def add_jars(self, *jars_path: str) -> None:
        """Accepted for PyFlink compatibility: Strom runs no JVM, so jars have no effect."""

    def add_classpaths(self, *classpaths: str) -> None:
        """Accepted for PyFlink compatibility: Strom runs no JVM, so classpaths have no effect."""

    # -- transformations -------------------------------------------------------------------------
    def _new_transformation(self, **kwargs: Any) -> Transformation:
        t = Transformation(id=next(self._ids), **kwargs)
        self._transformations.append(t)
        return t

    def from_collection(self, collection: Iterable[Any], type_info: TypeInformation | None = None) -> DataStream:
        from strom.connectors.collection import CollectionSource

        type_info = check_type_info(type_info, argument="type_info")
        src = CollectionSource(list(collection), type_info)
        t = self._source_transformation(src, WatermarkStrategy.no_watermarks(), "Collection Source", type_info)
        t.parallelism = 1
        t.parallelism_fixed = True
        return DataStream(self, t)

    def _source_transformation(
        self, source: Any, watermark_strategy: WatermarkStrategy | None, name: str, type_info: Any
    ) -> Transformation:
        from strom.connectors.base import Boundedness

        bounded = source.get_boundedness() == Boundedness.BOUNDED
        return self._new_transformation(
            name=f"Source: {name}",
            kind="source",
            operator=OperatorDescriptor(
                "source",
                params={
                    "source": source,
                    "watermark_strategy": watermark_strategy or WatermarkStrategy.no_watermarks(),
                },
                chaining_strategy="HEAD",
            ),
            output_type=type_info,
            bounded=bounded,
        )

    def from_source(
        self,
        source: Any,
        watermark_strategy: WatermarkStrategy,
        source_name: str,
        type_info: TypeInformation | None = None,
    ) -> DataStream:
        if not hasattr(source, "create_reader"):
            raise TypeError(f"from_source expects a Source (e.g. NumberSequenceSource, FileSource), got {source!r}")
        if type_info is None and callable(getattr(source, "get_produced_type", None)):
            type_info = source.get_produced_type()  # Flink's ResultTypeQueryable sources
        t = self._source_transformation(
            source, watermark_strategy, source_name, check_type_info(type_info, argument="type_info")
        )
        if getattr(source, "max_parallelism", None) == 1:
            t.parallelism = 1
            t.parallelism_fixed = True
        return DataStream(self, t)

    def add_source(
        self, source_func: Any, source_name: str = "Custom Source", type_info: TypeInformation | None = None
    ) -> DataStream:
        from strom.connectors.source_function import SourceFunctionSource

        t = self._source_transformation(SourceFunctionSource(source_func), None, source_name, type_info)
        t.parallelism = 1
        t.parallelism_fixed = True
        return DataStream(self, t)

    def from_sequence(self, start: int, end: int) -> DataStream:
        from strom.connectors.number_sequence import NumberSequenceSource

        return self.from_source(NumberSequenceSource(start, end), WatermarkStrategy.no_watermarks(), "Sequence Source")

    generate_sequence = from_sequence

    def read_text_file(self, file_path: str, charset_name: str = "UTF-8") -> DataStream:
        from strom.connectors.file import FileSource, StreamFormat

        src = FileSource.for_record_stream_format(StreamFormat.text_line_format(charset_name), file_path).build()
        return self.from_source(src, WatermarkStrategy.no_watermarks(), "File Source")

    def socket_text_stream(self, hostname: str, port: int, delimiter: str = "\n", max_retry: int = 0) -> DataStream:
        from strom.connectors.socket import SocketTextSource

        src = SocketTextSource(hostname, port, delimiter, max_retry)
        t = self._source_transformation(src, None, "Socket Stream", None)
        t.parallelism = 1
        t.parallelism_fixed = True
        return DataStream(self, t)

    # -- execution -------------------------------------------------------------------------------
    def get_stream_graph(self, job_name: str | None = None, *, clear_transformations: bool = False) -> StreamGraph:
        if not self._transformations:
            raise NoOperatorsError("no operators defined in the program; nothing to execute")
        default_p = self.get_parallelism()
        max_p = effective_max_parallelism(self.get_max_parallelism(), self._transformations, default_p)
        graph = generate_stream_graph(
            self._transformations,
            job_name=job_name or self._conf.get(opts.PIPELINE_NAME) or "Strom Streaming Job",
            default_parallelism=default_p,
            max_parallelism=max_p,
            chaining_enabled=self.is_chaining_enabled(),
            parallelism_overrides=self._conf.get(opts.VERTEX_PARALLELISM_OVERRIDES),
            config=self._conf.copy(),
        )
        graph.job_sources = job_source_files()
        if clear_transformations:
            self._transformations = []
        return graph

    def get_execution_plan(self) -> str:
        return self.get_stream_graph().to_execution_plan()

    def execute(self, job_name: str | None = None) -> JobExecutionResult:
        graph = self.get_stream_graph(job_name, clear_transformations=True)
        from strom.datastream.executors import executor_for

        return executor_for(graph, _context_executor)(graph)

    def execute_async(self, job_name: str | None = None) -> Any:
        graph = self.get_stream_graph(job_name, clear_transformations=True)
        from strom.datastream.executors import executor_for

        executor = executor_for(graph, _context_executor if hasattr(_context_executor, "start_job") else None)
        return executor.start_job(graph)

    def close(self) -> None:
        self._transformations = []


def _duration_ms(value: Duration | int) -> int:
    return to_millis(value)
