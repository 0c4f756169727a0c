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
from strom.common.execution_config import ExecutionConfig
from strom.common.job_client import JobClient
from strom.common.job_execution_result import JobExecutionResult
from strom.common.python_dependencies import archive_entry, check_exists, collect_dependencies, split_list
from strom.common.python_options import PYTHON_ARCHIVES, PYTHON_EXECUTABLE, PYTHON_FILES, PYTHON_REQUIREMENTS
from strom.common.restart_strategy import RestartStrategyConfiguration, apply_restart_strategy, restart_strategy_of
from strom.common.time import Duration, to_millis
from strom.common.typeinfo import TypeInformation, check_type_info
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream.checkpoint_config import CheckpointConfig
from strom.datastream.data_stream import DataStream
from strom.datastream.execution_mode import CheckpointingMode, RuntimeExecutionMode, TimeCharacteristic
from strom.graph.job_sources import job_source_files
from strom.graph.stream_graph import StreamGraph, effective_max_parallelism, generate_stream_graph
from strom.graph.transformations import OperatorDescriptor, Transformation

log = logging.getLogger(__name__)

# Set by a submitting client (the `strom` CLI) before the user program runs: the
# configuration from -D/--config, and the executor that runs the graph.
_context_configuration: Configuration | None = None
_context_executor: Callable[[StreamGraph], Any] | None = None
# set_default_local_parallelism: the parallelism of environments created afterwards for a local run
_default_local_parallelism: int | None = None


def set_context(configuration: Configuration | None, executor: Callable[[StreamGraph], Any] | None = None) -> None:
    global _context_configuration, _context_executor
    _context_configuration = configuration
    _context_executor = executor


class NoOperatorsError(RuntimeError):
    """execute() on a program that declared no operators."""


class StreamExecutionEnvironment:
    def __init__(self, configuration: Configuration | None = None) -> None:
        conf = Configuration()
        if _context_configuration is not None:
            conf.add_all(_context_configuration)
        if configuration is not None:
            conf.add_all(configuration)
        if (
            _default_local_parallelism is not None
            and _context_configuration is None
            and not conf.contains_key(opts.PARALLELISM.key)
        ):
            conf.set(opts.PARALLELISM.key, _default_local_parallelism)
        self._conf = conf
        self._state_backend: Any = None
        self._time_characteristic = TimeCharacteristic.EventTime
        self._slot_sharing_groups: dict[str, Any] = {}
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
        """Deprecated in Flink >= 1.12, where event time is always on: recorded and read back, as Flink does;
        processing-time programs use processing-time windows and timers explicitly."""
        if not isinstance(characteristic, TimeCharacteristic):
            raise TypeError(f"set_stream_time_characteristic expects a TimeCharacteristic, got {characteristic!r}")
        self._time_characteristic = characteristic
        return self

    def get_stream_time_characteristic(self) -> TimeCharacteristic:
        return self._time_characteristic

    def set_default_local_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        """Flink's static default for local environments: environments created after this call for a local run
        (no submitting client) take it as parallelism.default unless their configuration sets one."""
        global _default_local_parallelism
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"default local parallelism must be a positive integer, got {parallelism!r}")
        _default_local_parallelism = parallelism
        return self

    # -- state, checkpoints, failover ------------------------------------------------------------
    def set_state_backend(self, state_backend: Any) -> StreamExecutionEnvironment:
        """Writes the backend's keys (state.backend.type, ...) into the job's configuration; the runtime
        builds every keyed operator's state backend from them (see strom.datastream.state_backend)."""
        from strom.datastream.state_backend import StateBackend

        if not isinstance(state_backend, StateBackend):
            raise TypeError(
                f"set_state_backend expects a StateBackend (HashMapStateBackend, EmbeddedRocksDBStateBackend, ...), "
                f"got {state_backend!r}"
            )
        state_backend._apply(self._conf)
        self._state_backend = state_backend
        return self

    def get_state_backend(self) -> Any:
        """The backend set with set_state_backend, else None (PyFlink returns None then)."""
        return self._state_backend

    def enable_changelog_state_backend(self, enabled: bool) -> StreamExecutionEnvironment:
        """Accepted and read back (state.backend.changelog.enabled). Flink's changelog backend makes checkpoints
        incremental by logging state changes; Strom has no changelog: checkpoints stay full snapshots (or
        RocksDB's incremental ones, state.backend.incremental)."""
        self._conf.set("state.backend.changelog.enabled", bool(enabled))
        return self

    def is_changelog_state_backend_enabled(self) -> bool | None:
        raw = self._conf.get("state.backend.changelog.enabled")
        return None if raw is None else str(raw).strip().lower() == "true"

    def set_restart_strategy(
        self, restart_strategy_configuration: RestartStrategyConfiguration
    ) -> StreamExecutionEnvironment:
        """Writes Flink's restart-strategy.* keys into the job's configuration (the runtime's restart strategy)."""
        apply_restart_strategy(self._conf, restart_strategy_configuration)
        return self

    def get_restart_strategy(self) -> RestartStrategyConfiguration:
        return restart_strategy_of(self._conf)

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.get_checkpoint_config().get_checkpointing_mode()

    def register_slot_sharing_group(self, slot_sharing_group: Any) -> StreamExecutionEnvironment:
        """Records the group's resource spec by name (see strom.datastream.slot_sharing_group)."""
        name = slot_sharing_group.get_name() if hasattr(slot_sharing_group, "get_name") else None
        if not name:
            raise TypeError(f"register_slot_sharing_group expects a SlotSharingGroup, got {slot_sharing_group!r}")
        self._slot_sharing_groups[name] = slot_sharing_group
        return self

    def enable_checkpointing(self, interval: int, mode: CheckpointingMode | None = None) -> StreamExecutionEnvironment:
        self._conf.set(opts.CHECKPOINT_INTERVAL.key, interval)
        if mode is not None:
            self._conf.set(opts.CHECKPOINT_MODE.key, mode.name)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        return CheckpointConfig(self._conf)

    def get_checkpoint_interval(self) -> int:
        """Milliseconds, or -1 while checkpointing is disabled (PyFlink's value)."""
        return self.get_checkpoint_config().get_checkpoint_interval()

    # -- Python dependencies: shipped with the job (strom.common.python_dependencies) -------------
    def add_python_file(self, file_path: str) -> None:
        """Ship a .py file, a .zip/.egg/.whl or a directory with the job: on every TaskManager (and Spark
        worker) it is on sys.path of the job's functions (`python.files`). Here it goes on sys.path too, so
        the program can import it."""
        import sys

        check_exists(file_path, PYTHON_FILES.key)
        self._append_to_list(PYTHON_FILES.key, file_path)
        path = os.path.dirname(os.path.abspath(file_path)) if os.path.isfile(file_path) else file_path
        if path not in sys.path:
            sys.path.insert(0, path)

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        """Ship an archive (zip, tar, tar.gz) with the job, extracted into its working directory under
        `target_dir` (default: the archive's file name), the current directory of its functions
        (`python.archives`)."""
        entry = archive_path if target_dir is None else f"{archive_path}#{target_dir}"
        archive_entry(entry)  # a bad target directory is refused now
        check_exists(archive_path, PYTHON_ARCHIVES.key)
        self._append_to_list(PYTHON_ARCHIVES.key, entry)

    def set_python_requirements(self, requirements_file_path: str, requirements_cache_dir: str | None = None) -> None:
        """Install a requirements file with pip into the job's own directory on every TaskManager
        (`python.requirements`); with `requirements_cache_dir` (packages, e.g. from `pip download`) the
        install is offline, from that directory only."""
        check_exists(requirements_file_path, PYTHON_REQUIREMENTS.key)
        value = requirements_file_path
        if requirements_cache_dir is not None:
            check_exists(requirements_cache_dir, PYTHON_REQUIREMENTS.key, directory=True)
            value += f"#{requirements_cache_dir}"
        self._conf.set(PYTHON_REQUIREMENTS.key, value)

    def set_python_executable(self, python_exec: str) -> None:
        """The interpreter of the job's functions on TaskManagers (`python.executable`): a path, a name on
        PATH, or a path inside a shipped archive (`venv/bin/python`). Strom runs functions in the
        TaskManager's interpreter, so another one must be the same Python major.minor; its site-packages
        are then added to sys.path."""
        self._conf.set(PYTHON_EXECUTABLE.key, python_exec)

    def _append_to_list(self, key: str, item: str) -> None:
        current = split_list(self._conf.get(key) or "")
        if item not in current:
            self._conf.set(key, ",".join([*current, item]))

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
        graph.python_dependencies = collect_dependencies(self._conf)
        if clear_transformations:
            self._transformations = []
        return graph

    def get_execution_plan(self) -> str:
        return self.get_stream_graph().to_execution_plan()

    def execute(self, job_name: str | None = None) -> JobExecutionResult:
        graph = self.get_stream_graph(job_name, clear_transformations=True)
        from strom.datastream.executors import executor_for

        return executor_for(graph, _context_executor)(graph)

    def execute_async(self, job_name: str | None = None) -> JobClient:
        graph = self.get_stream_graph(job_name, clear_transformations=True)
        from strom.datastream.executors import executor_for

        executor = executor_for(graph, _context_executor if hasattr(_context_executor, "start_job") else None)
        return JobClient(executor.start_job(graph))

    def close(self) -> None:
        self._transformations = []


def _duration_ms(value: Duration | int) -> int:
    return to_millis(value)
