"""Enums of the execution environment (PyFlink names)."""

from __future__ import annotations

from enum import Enum


class RuntimeExecutionMode(Enum):
    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2


class CheckpointingMode(Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class TimeCharacteristic(Enum):
    ProcessingTime = 0
    IngestionTime = 1
    EventTime = 2
