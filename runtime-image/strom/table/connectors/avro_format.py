"""`'format' = 'avro'` (also as `key.format` / `value.format`): a row in Avro's binary encoding without a
container header, with the schema Flink's AvroSchemaConverter derives from the columns (a record named
`record` in namespace `org.apache.flink.avro.generated`; a nullable column is a union with null first).
fastavro reads and writes it, as the DataStream Avro schemas do.
"""

from __future__ import annotations

import datetime
import io
from typing import Any

from strom.common.row import Row, make_row
from strom.table.connectors.formats import Columns, Decoder, Encoder, FormatFactory, register_format
from strom.table.errors import NotSupportedYet, ValidationException

_PRIMITIVES = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
               "FLOAT": "float", "DOUBLE": "double", "STRING": "string", "VARCHAR": "string", "CHAR": "string",
               "BYTES": "bytes", "VARBINARY": "bytes", "BINARY": "bytes"}
_EPOCH = datetime.datetime(1970, 1, 1)


def avro_schema(table: str, columns: Columns) -> dict[str, Any]:
    fields = []
    for name, t in columns:
        if t.root in _PRIMITIVES:
            avro: Any = _PRIMITIVES[t.root]
        elif t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            avro = {"type": "long", "logicalType": "timestamp-millis"}
        elif t.root == "DATE":
            avro = {"type": "int", "logicalType": "date"}
        else:
            raise NotSupportedYet(f"avro format for a {t.base()} column {name!r} (table {table!r})")
        fields.append({"name": name, "type": ["null", avro] if t.nullable else avro})
    return {"type": "record", "name": "record", "namespace": "org.apache.flink.avro.generated", "fields": fields}


class AvroFormatFactory(FormatFactory):
    identifier = "avro"
    options = frozenset({"encoding"})

    def validate(self, table: str, columns: Columns, options: dict[str, str]) -> None:
        if options.get("encoding", "binary") != "binary":
            raise ValidationException(f"table {table!r}: avro.encoding {options['encoding']!r} is not supported; "
                                      "use 'binary'")
        avro_schema(table, columns)

    def decoder(self, table: str, columns: Columns, options: dict[str, str]) -> Decoder:
        import fastavro

        schema = fastavro.parse_schema(avro_schema(table, columns))
        names = [n for n, _ in columns]
        naive = {n for n, t in columns if t.root == "TIMESTAMP"}

        def decode(data: bytes) -> Row | None:
            try:
                record = fastavro.schemaless_reader(io.BytesIO(data), schema, None)
            except (EOFError, ValueError, IndexError) as exc:
                raise ValueError(f"table {table!r}: format 'avro' cannot read record {data[:40]!r}: {exc!r}") from None
            assert isinstance(record, dict)
            values = {n: record.get(n) for n in names}
            for n in naive:  # fastavro returns an aware UTC datetime; a TIMESTAMP column is naive
                v = values[n]
                if isinstance(v, datetime.datetime) and v.tzinfo is not None:
                    values[n] = v.astimezone(datetime.UTC).replace(tzinfo=None)
            return make_row(list(values.values()), tuple(values))

        return decode

    def encoder(self, table: str, columns: Columns, options: dict[str, str]) -> Encoder:
        import fastavro

        schema = fastavro.parse_schema(avro_schema(table, columns))
        names = [n for n, _ in columns]
        naive = {n for n, t in columns if t.root == "TIMESTAMP"}

        def encode(row: Row) -> bytes:
            record = dict(zip(names, row, strict=True))
            for n in naive:  # a naive TIMESTAMP is UTC wall time in Flink's Avro conversion
                v = record[n]
                if isinstance(v, datetime.datetime) and v.tzinfo is None:
                    record[n] = v.replace(tzinfo=datetime.UTC)
            buf = io.BytesIO()
            try:
                fastavro.schemaless_writer(buf, schema, record)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"table {table!r}: format 'avro' cannot write {tuple(row)!r}: {exc}") from None
            return buf.getvalue()

        return encode


register_format(AvroFormatFactory())
