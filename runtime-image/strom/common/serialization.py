"""Encoders and schemas for connectors (PyFlink's `Encoder`, `SerializationSchema`, `SimpleStringSchema`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
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
