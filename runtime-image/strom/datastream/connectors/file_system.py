"""File sources and sinks (`pyflink.datastream.connectors.file_system`)."""

from strom.common.refused_names import refused_name
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

_NO_BULK = "Strom writes and reads row formats only (no Parquet, ORC or Avro bulk formats)"
BulkFormat = refused_name("BulkFormat", _NO_BULK, "read with StreamFormat.text_line_format()")
FileCompactor = refused_name(
    "FileCompactor", "Strom's FileSink does not compact files", "roll larger parts with RollingPolicy"
)
FileCompactStrategy = refused_name(
    "FileCompactStrategy", "Strom's FileSink does not compact files", "roll larger parts with RollingPolicy"
)
FileEnumeratorProvider = refused_name(
    "FileEnumeratorProvider", "it wraps a Java FileEnumerator, and Strom's FileSource enumerates files itself",
    "pass the paths (files or directories, s3:// too) to FileSource.for_record_stream_format",
)
FileSplitAssignerProvider = refused_name(
    "FileSplitAssignerProvider", "it wraps a Java FileSplitAssigner, and Strom's FileSource assigns files itself",
    "leave the assignment to the FileSource",
)

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "FileCompactStrategy",
    "FileCompactor",
    "FileEnumeratorProvider",
    "FileSplitAssignerProvider",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "OutputFileConfig",
    "RollingPolicy",
    "RowFormatBuilder",
    "StreamFormat",
    "StreamingFileSink",
]
