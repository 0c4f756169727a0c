"""Strom: stream processing with Flink's model and PyFlink's API, in Python."""

__version__ = "0.1.0"
