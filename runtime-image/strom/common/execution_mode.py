"""`ExecutionMode` (`pyflink.common.ExecutionMode`): the DataSet API's data exchange modes.

Only `ExecutionConfig.set_execution_mode` takes it; it is recorded and read back. Strom's DataStream
jobs choose between streaming and batch with `RuntimeExecutionMode` (execution.runtime-mode).
"""

from __future__ import annotations

from enum import Enum


class ExecutionMode(Enum):
    PIPELINED = 0
    PIPELINED_FORCED = 1
    BATCH = 2
    BATCH_FORCED = 3
