"""Avro row (de)serialization (PyFlink's `AvroRowSerializationSchema` / `AvroRowDeserializationSchema`).

A message is one record in Avro's binary encoding without a container header (Flink's format), read
and written with fastavro against the schema given as JSON text (`avro_schema_string`). A record is a
`Row` of the schema's fields (a tuple in field order or a dict are accepted for writing).
"""

from __future__ import annotations

import io
import json
from typing import Any

from strom.common.row import Row, make_row


def _parsed(avro_schema_string: str | None, record_class: str | None, what: str) -> Any:
    if record_class is not None:
        raise ValueError(f"{what}: record_class (generated Java classes) is not supported; give avro_schema_string")
    if not avro_schema_string:
        raise ValueError(f"{what}: give avro_schema_string, the record schema as JSON")
    try:
        import fastavro
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise RuntimeError("Avro formats need fastavro: pip install 'strom[kafka]'") from exc
    try:
        schema = fastavro.parse_schema(json.loads(avro_schema_string))
    except (ValueError, fastavro.schema.SchemaParseException) as exc:
        raise ValueError(f"{what}: the Avro schema is not valid: {exc}") from None
    kind = schema.get("type") if isinstance(schema, dict) else schema
    if kind != "record":
        raise ValueError(f"{what}: the Avro schema must be a record, got {kind!r}")
    return schema


class AvroRowSerializationSchema:
    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None) -> None:
        self.schema = _parsed(avro_schema_string, record_class, "AvroRowSerializationSchema")
        self.names = [f["name"] for f in self.schema["fields"]]

    def serialize(self, value: Any) -> bytes:
        import fastavro

        if isinstance(value, dict):
            record = value
        elif isinstance(value, Row) and getattr(value, "_fields", None):
            record = value.as_dict()
        else:
            record = dict(zip(self.names, value, strict=True))
        buf = io.BytesIO()
        try:
            fastavro.schemaless_writer(buf, self.schema, record)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"Avro row: {value!r} does not match the schema {self.schema['name']!r}: {exc}") from None
        return buf.getvalue()


class AvroRowDeserializationSchema:
    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None) -> None:
        self.schema = _parsed(avro_schema_string, record_class, "AvroRowDeserializationSchema")
        self.names = [f["name"] for f in self.schema["fields"]]

    def deserialize(self, data: bytes) -> Row:
        import fastavro

        try:
            record = fastavro.schemaless_reader(io.BytesIO(data), self.schema, None)
        except (EOFError, ValueError, IndexError) as exc:
            raise ValueError(f"Avro row: cannot read message {data[:40]!r}: {exc!r}") from None
        return make_row([record.get(n) for n in self.names], tuple(self.names))  # type: ignore[union-attr]
