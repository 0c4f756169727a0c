"""Types, records, time and configuration shared by the user API and the runtime (`pyflink.common`)."""

from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.common.row import Row, RowKind
from strom.common.serialization import Encoder, SimpleStringSchema
from strom.common.time import Duration, Time
from strom.common.typeinfo import RowTypeInfo, TupleTypeInfo, TypeInformation, Types
from strom.common.watermark_strategy import (
    TimestampAssigner,
    Watermark,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkStrategy,
)

__all__ = [
    "ConfigError",
    "Configuration",
    "Duration",
    "Encoder",
    "Row",
    "RowKind",
    "RowTypeInfo",
    "SimpleStringSchema",
    "Time",
    "TimestampAssigner",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarkStrategy",
]
