"""Finding the executor that runs a program (Flink's PipelineExecutorServiceLoader).

The user API builds graphs and never imports the runtime (a layering contract checked by
import-linter): the default executor — the embedded in-process one — is loaded by name
when a program is executed, and a submitting client (`strom run`, `strom submit`, application
mode) installs its own with `set_context`.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

DEFAULT_EXECUTOR = "strom.runtime.local_executor:LocalExecutor"


class JobHandle(Protocol):
    def wait(self, timeout: float | None = None) -> Any: ...

    def cancel(self) -> None: ...


class PipelineExecutor(Protocol):
    """Runs a StreamGraph to the end (`__call__`) or starts it (`start_job`)."""

    def __call__(self, graph: Any) -> Any: ...


def load_executor(spec: str = DEFAULT_EXECUTOR) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)()
