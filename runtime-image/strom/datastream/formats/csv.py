"""CSV row formats (`pyflink.datastream.formats.csv`)."""

from strom.connectors.kafka.formats import CsvRowDeserializationSchema, CsvRowSerializationSchema

__all__ = ["CsvRowDeserializationSchema", "CsvRowSerializationSchema"]
