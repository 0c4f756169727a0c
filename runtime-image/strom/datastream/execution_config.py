"""PyFlink keeps `ExecutionConfig` in `pyflink.common` and `CheckpointConfig` in
`pyflink.datastream.checkpoint_config`; this module keeps the old import path working."""

from strom.common.execution_config import ExecutionConfig
from strom.datastream.checkpoint_config import CheckpointConfig

__all__ = ["CheckpointConfig", "ExecutionConfig"]
