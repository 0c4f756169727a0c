"""The data generator source (Flink's `DataGeneratorSource`, under PyFlink's module naming)."""

from strom.connectors.datagen import DataGeneratorSource

__all__ = ["DataGeneratorSource"]
