"""Avro row formats (`pyflink.datastream.formats.avro`); need fastavro (the `kafka` extra)."""

from strom.connectors.kafka.avro import AvroRowDeserializationSchema, AvroRowSerializationSchema

__all__ = ["AvroRowDeserializationSchema", "AvroRowSerializationSchema"]
