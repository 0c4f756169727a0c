"""PyFlink module path `pyflink.datastream.time_characteristic`."""

from strom.datastream.execution_mode import TimeCharacteristic

__all__ = ["TimeCharacteristic"]
