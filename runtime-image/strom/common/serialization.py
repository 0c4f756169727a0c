"""Encoders and schemas for connectors (PyFlink's `Encoder`, `SerializationSchema`, `SimpleStringSchema`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from strom.common.refused_names import refused_name


class Encoder:
    """Turns a record into bytes for a row-format file sink."""

    def __init__(self, charset: str = "utf-8") -> None:
        self.charset = charset

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        return Encoder(charset_name.lower())

    def encode(self, value: Any) -> bytes:
        return (str(value) + "\n").encode(self.charset)

    def encoder_for(self, type_info: Any) -> Callable[[Any], bytes]:
        """How this encoder writes a record of a stream declared as `type_info`. PyFlink's simple string
        encoder is Java's SimpleStringEncoder, which writes the Java object's toString: `(And,5)` for a
        Types.TUPLE record, `+I[And, 5]` for a Types.ROW one, `true` for a BOOLEAN (as print() writes them,
        java_strings.py); an untyped stream's records as str(value). A subclass that overrides `encode`
        keeps its own."""
        if type(self).encode is not Encoder.encode:
            return self.encode
        from strom.common.java_strings import java_formatter

        text, charset = java_formatter(type_info), self.charset
        return lambda value: (text(value) + "\n").encode(charset)


BulkWriterFactory = refused_name(
    "BulkWriterFactory", "Strom writes row formats only (no Parquet, ORC or Avro bulk writers)",
    "write rows with FileSink.for_row_format(path, Encoder.simple_string_encoder())",
)
TypeSerializer = refused_name(
    "TypeSerializer", "Strom pickles records and state; no serializer is pluggable",
    "declare the type with Types.* (it shapes values as PyFlink's coders do)",
)


class SerializationSchema(ABC):
    """Turns a record into bytes (what a sink such as Kafka's writes): `serialize(element) -> bytes`."""

    @abstractmethod
    def serialize(self, element: Any) -> bytes:
        """The bytes of one record."""


class DeserializationSchema(ABC):
    """Turns bytes (what a source such as Kafka's reads) into a record: `deserialize(message)`."""

    @abstractmethod
    def deserialize(self, message: bytes) -> Any:
        """The record of one message."""

    def is_end_of_stream(self, next_element: Any) -> bool:
        return False


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """PyFlink's ByteArraySchema: bytes pass through unchanged (Flink SQL's `raw` format for a bytes
    column; a Kafka job that forwards messages untouched uses it on both sides)."""

    def serialize(self, element: Any) -> bytes:
        # bytes(5) would be five zero bytes and bytes("x") a TypeError without the record: refuse
        # anything that is not already binary, naming it
        if not isinstance(element, bytes | bytearray | memoryview):
            raise TypeError(
                f"ByteArraySchema.serialize expects bytes, got {type(element).__name__} {element!r:.80}; "
                "encode the record first (e.g. map(lambda s: s.encode())) or use SimpleStringSchema for text"
            )
        return bytes(element)

    def deserialize(self, message: bytes) -> bytes:
        return bytes(message)


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = charset.lower()

    def serialize(self, value: Any) -> bytes:
        return str(value).encode(self.charset)

    def deserialize(self, data: bytes) -> str:
        return data.decode(self.charset)
