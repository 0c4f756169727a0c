"""Runs a Nexmark query on the in-process engine: for tests (collect the output) and for the benchmark
(count the output, time the run, read the process's peak RSS)."""

from __future__ import annotations

import resource
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from strom.common.configuration import Configuration
from strom.connectors.nexmark import NexmarkConfig, NexmarkSource
from strom.datastream import DataStream, SinkFunction, StreamExecutionEnvironment
from strom.testing import collect

from benchmarks.nexmark.queries import QUERIES


def query_stream(
    query: str, config: NexmarkConfig, *, parallelism: int, conf: dict[str, Any] | None = None
) -> DataStream:
    """The query's output stream over a Nexmark source, in a fresh environment."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(conf or {}))
    env.set_parallelism(parallelism)
    events = env.from_source(NexmarkSource(config), NexmarkSource.watermark_strategy(), "Nexmark Source")
    return QUERIES[query](events)


def run_collect(query: str, config: NexmarkConfig, *, parallelism: int) -> list[Any]:
    return collect(query_stream(query, config, parallelism=parallelism))


class CountingSink(SinkFunction):
    """Counts what reaches it (Nexmark's blackhole sink). A class attribute: the in-process engine runs the
    sink's subtasks in this process, and a sink instance is copied per subtask."""

    count = 0
    _lock = threading.Lock()

    def open(self, runtime_context: Any) -> None:
        self.n = 0

    def invoke(self, value: Any, context: Any) -> None:
        # an instance counter: incrementing a class attribute per record bumps the class's version tag
        # (CPython's method caches) and costs more than the reference loop's counter
        self.n += 1

    def finish(self) -> None:
        with CountingSink._lock:
            CountingSink.count += self.n


@dataclass(frozen=True, slots=True)
class RunFigures:
    query: str
    events: int
    parallelism: int
    seconds: float
    cpu_seconds: float  # user + system CPU of this process during the run: what one core spent
    outputs: int
    checkpoints: int
    peak_rss_mb: float

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds

    @property
    def events_per_cpu_second(self) -> float:
        return self.events / self.cpu_seconds


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def run_timed(
    query: str,
    config: NexmarkConfig,
    *,
    parallelism: int,
    checkpoint_interval_ms: int = 0,
    state_backend: str = "hashmap",
    incremental: bool = False,
) -> RunFigures:
    """One run with a counting sink; with checkpoints every `checkpoint_interval_ms` (file:// in a temp dir),
    keyed state on `state_backend` (state.backend.type), RocksDB snapshots incremental if `incremental`."""
    from strom.datastream.executors import load_executor

    CountingSink.count = 0
    with tempfile.TemporaryDirectory(prefix="nexmark-chk-") as directory:
        conf: dict[str, Any] = {"state.checkpoints.dir": f"file://{directory}", "state.backend.type": state_backend,
                                "state.backend.incremental": incremental}
        stream = query_stream(query, config, parallelism=parallelism, conf=conf)
        env = stream.get_execution_environment()
        if checkpoint_interval_ms:
            env.enable_checkpointing(checkpoint_interval_ms)
        stream.add_sink(CountingSink()).name("blackhole")
        handle = load_executor().start_job(env.get_stream_graph(f"nexmark-{query}"))
        start, cpu_start = time.perf_counter(), cpu_seconds()
        handle.wait()
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
        coordinator = getattr(getattr(handle, "_job", None), "checkpoint_coordinator", None)
        checkpoints = len(coordinator.completed_ids) if coordinator is not None else 0
    return RunFigures(query, config.events, parallelism, seconds, cpu, CountingSink.count, checkpoints, peak_rss_mb())
