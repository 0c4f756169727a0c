"""CSV formats (`pyflink.datastream.formats.csv`): reading files with a CsvSchema, rows to and from Kafka."""

from strom.common.refused_names import refused_name
from strom.connectors.csv_format import CsvReaderFormat, CsvSchema, CsvSchemaBuilder
from strom.connectors.kafka.formats import CsvRowDeserializationSchema, CsvRowSerializationSchema

CsvBulkWriters = refused_name(
    "CsvBulkWriters", "Strom writes row formats only (no bulk writers)",
    "map records to CSV text and write them with FileSink.for_row_format",
)

__all__ = [
    "CsvBulkWriters",
    "CsvReaderFormat",
    "CsvRowDeserializationSchema",
    "CsvRowSerializationSchema",
    "CsvSchema",
    "CsvSchemaBuilder",
]
