"""Encoders and schemas for connectors (PyFlink's `Encoder`, `SerializationSchema`, `SimpleStringSchema`)."""

from __future__ import annotations

from typing import Any


class Encoder:
    """Turns a record into bytes for a row-format file sink."""

    def __init__(self, charset: str = "utf-8") -> None:
        self.charset = charset

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        return Encoder(charset_name.lower())

    def encode(self, value: Any) -> bytes:
        return (str(value) + "\n").encode(self.charset)


class SerializationSchema:
    """Turns a record into bytes (what a sink such as Kafka's writes): `serialize(element) -> bytes`."""

    def serialize(self, element: Any) -> bytes:
        raise NotImplementedError(f"{type(self).__name__}.serialize(element) -> bytes is not implemented")


class DeserializationSchema:
    """Turns bytes (what a source such as Kafka's reads) into a record: `deserialize(message)`."""

    def deserialize(self, message: bytes) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.deserialize(message) is not implemented")

    def is_end_of_stream(self, next_element: Any) -> bool:
        return False


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """PyFlink's ByteArraySchema: bytes pass through unchanged."""

    def serialize(self, element: Any) -> bytes:
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
