"""Finding the executor that runs a program (Flink's PipelineExecutorServiceLoader).

The user API builds graphs and never imports the runtime (a layering contract checked by
import-linter): the default executor — the embedded in-process one — is loaded by name
when a program is executed, and a submitting client (`strom run`, `strom submit`, application
mode) installs its own with `set_context`. A program whose runtime mode resolves to BATCH
(`execution.runtime-mode`; AUTOMATIC is BATCH iff every source is bounded, as in Flink) runs on
Spark through the batch executor, whichever client submitted it.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from strom.common.python_environment import activate, dependencies_of

DEFAULT_EXECUTOR = "strom.runtime.local_executor:LocalExecutor"
BATCH_EXECUTOR = "strom.batch.spark_executor:SparkExecutor"


class JobHandle(Protocol):
    def wait(self, timeout: float | None = None) -> Any: ...

    def cancel(self) -> None: ...


class PipelineExecutor(Protocol):
    """Runs a StreamGraph to the end (`__call__`) or starts it (`start_job`)."""

    def __call__(self, graph: Any) -> Any: ...


def load_executor(spec: str = DEFAULT_EXECUTOR) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)()


def resolve_runtime_mode(graph: Any) -> str:
    """STREAMING or BATCH for a StreamGraph: AUTOMATIC picks BATCH iff all sources are bounded."""
    mode = str(graph.config.get("execution.runtime-mode") if graph.config is not None else "STREAMING").upper()
    if mode == "AUTOMATIC":
        return "BATCH" if all(n.transformation.bounded for n in graph.sources()) else "STREAMING"
    return mode


def executor_for(graph: Any, context_executor: Any = None) -> Any:
    """The executor that runs `graph`: Spark in BATCH mode, else the client's or the embedded one."""
    if resolve_runtime_mode(graph) == "BATCH":
        return load_executor(BATCH_EXECUTOR)
    if context_executor is not None:
        return context_executor
    # The embedded executor runs the job's functions in this process, where the graph is never unpickled:
    # its python.* files and requirements are made available here instead (python_environment).
    deps = dependencies_of(graph)
    if deps is not None:
        activate(deps)
    return load_executor()
