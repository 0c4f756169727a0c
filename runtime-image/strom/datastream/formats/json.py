"""JSON row formats (`pyflink.datastream.formats.json`)."""

from strom.connectors.kafka.formats import JsonRowDeserializationSchema, JsonRowSerializationSchema

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]
