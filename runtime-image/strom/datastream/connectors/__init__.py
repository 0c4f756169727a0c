"""Sources and sinks for DataStream programs (`pyflink.datastream.connectors`).

Each module re-exports the implementation in `strom.connectors` under PyFlink's module path:

    base.py                 Source / Sink base classes and DeliveryGuarantee
    number_seq.py           NumberSequenceSource (connectors/number_sequence.py)
    datagen.py              DataGeneratorSource (connectors/datagen.py)
    file_system.py          FileSource, FileSink and their policies (connectors/file*.py)
    streaming_file_sink.py  `StreamingFileSink`: the deprecated name, over FileSink
    kafka.py                KafkaSource, KafkaSink (connectors/kafka/); needs the `kafka` extra to run
    jdbc.py                 JdbcSink for PostgreSQL (connectors/jdbc/)
"""

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
