"""Sources and sinks for DataStream programs (`pyflink.datastream.connectors`)."""

from strom.datastream.connectors.base import DeliveryGuarantee, Sink, Source
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    FileSourceBuilder,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from strom.datastream.connectors.jdbc import JdbcConnectionOptions, JdbcExecutionOptions, JdbcSink
from strom.datastream.connectors.number_seq import NumberSequenceSource

__all__ = [
    "BucketAssigner",
    "DataGeneratorSource",
    "DeliveryGuarantee",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "JdbcConnectionOptions",
    "JdbcExecutionOptions",
    "JdbcSink",
    "NumberSequenceSource",
    "OutputFileConfig",
    "RollingPolicy",
    "Sink",
    "Source",
    "StreamFormat",
]
