"""Encoders and schemas for connectors (PyFlink's `Encoder`, `SimpleStringSchema`)."""

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


class SimpleStringSchema:
    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = charset.lower()

    def serialize(self, value: Any) -> bytes:
        return str(value).encode(self.charset)

    def deserialize(self, data: bytes) -> str:
        return data.decode(self.charset)
