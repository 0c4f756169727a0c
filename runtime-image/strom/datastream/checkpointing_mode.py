"""PyFlink module path `pyflink.datastream.checkpointing_mode`."""

from strom.datastream.execution_mode import CheckpointingMode

__all__ = ["CheckpointingMode"]
