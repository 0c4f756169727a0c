"""The file connector: `FileSource` (read files and directories) and `FileSink` (write part files)."""

from strom.common.serialization import Encoder
from strom.connectors.file_sink import FileSink, RowFormatBuilder
from strom.connectors.file_sink_policies import (
    BucketAssigner,
    OutputFileConfig,
    RollingPolicy,
)
from strom.connectors.file_source import FileSource, FileSourceBuilder, StreamFormat

__all__ = [
    "BucketAssigner",
    "Encoder",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "OutputFileConfig",
    "RollingPolicy",
    "RowFormatBuilder",
    "StreamFormat",
]
