"""File sources and sinks (`pyflink.datastream.connectors.file_system`)."""

from strom.connectors.file import (
    BucketAssigner,
    FileSink,
    FileSource,
    FileSourceBuilder,
    OutputFileConfig,
    RollingPolicy,
    RowFormatBuilder,
    StreamFormat,
)
from strom.datastream.connectors.streaming_file_sink import StreamingFileSink

__all__ = [
    "BucketAssigner",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "OutputFileConfig",
    "RollingPolicy",
    "RowFormatBuilder",
    "StreamFormat",
    "StreamingFileSink",
]
