"""JSON and CSV row (de)serialization schemas against the standard library's json and csv readings."""

from __future__ import annotations

import csv
import io
import json

import pytest
from strom.common import Row, Types
from strom.datastream.formats.csv import CsvRowDeserializationSchema, CsvRowSerializationSchema
from strom.datastream.formats.json import JsonRowDeserializationSchema, JsonRowSerializationSchema

ROW = Types.ROW_NAMED(["id", "name", "score"], [Types.INT(), Types.STRING(), Types.DOUBLE()])


def test_json_round_trip_and_missing_fields():
    ser = JsonRowSerializationSchema.builder().with_type_info(ROW).build()
    de = JsonRowDeserializationSchema.builder().type_info(ROW).build()
    data = ser.serialize(Row(id=1, name='a "quoted", name', score=2.5))
    assert json.loads(data) == {"id": 1, "name": 'a "quoted", name', "score": 2.5}
    row = de.deserialize(data)
    assert (row.id, row.name, row.score) == (1, 'a "quoted", name', 2.5)
    assert de.deserialize(b'{"id": 3}').as_dict() == {"id": 3, "name": None, "score": None}
    strict = JsonRowDeserializationSchema.builder().type_info(ROW).fail_on_missing_field().build()
    with pytest.raises(ValueError, match="field 'name' is missing"):
        strict.deserialize(b'{"id": 3}')
    with pytest.raises(ValueError, match="JSON row: cannot read message"):
        de.deserialize(b"not json")
    lenient = JsonRowDeserializationSchema.builder().type_info(ROW).ignore_parse_errors().build()
    assert lenient.deserialize(b"not json") is None  # the source drops it, as Flink's


def test_csv_round_trip_matches_the_csv_module():
    ser = CsvRowSerializationSchema.Builder(ROW).set_field_delimiter(";").build()
    data = ser.serialize((7, "x;y", 1.5))
    assert next(csv.reader(io.StringIO(data.decode()), delimiter=";")) == ["7", "x;y", "1.5"]
    de = CsvRowDeserializationSchema.Builder(ROW).set_field_delimiter(";").build()
    assert tuple(de.deserialize(data)) == (7, "x;y", 1.5)
    assert tuple(de.deserialize(b"8;;")) == (8, None, None)
    with pytest.raises(ValueError, match="'seven' is not a INT"):
        de.deserialize(b"seven;a;1")
    with pytest.raises(ValueError, match="2 fields .* the row type has 3"):
        de.deserialize(b"1;2")


def test_schemas_refuse_a_non_row_type():
    with pytest.raises(TypeError, match="needs a row type"):
        JsonRowDeserializationSchema.builder().type_info(Types.STRING())
    with pytest.raises(ValueError, match="type_info"):
        JsonRowDeserializationSchema.builder().build()


AVRO = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "fields": [{"name": "id", "type": "int"}, {"name": "item", "type": ["null", "string"]}],
    }
)


def test_avro_rows_are_fastavros_schemaless_records():
    import fastavro
    from strom.datastream.formats.avro import AvroRowDeserializationSchema, AvroRowSerializationSchema

    ser = AvroRowSerializationSchema(avro_schema_string=AVRO)
    data = ser.serialize(Row(id=5, item="pen"))
    # the reference: fastavro's own reading of the bytes against the schema
    assert fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(json.loads(AVRO)), None) == {
        "id": 5,
        "item": "pen",
    }
    de = AvroRowDeserializationSchema(avro_schema_string=AVRO)
    assert de.deserialize(data).as_dict() == {"id": 5, "item": "pen"}
    assert de.deserialize(ser.serialize((6, None))).as_dict() == {"id": 6, "item": None}
    with pytest.raises(ValueError, match="does not match the schema 'Order'"):
        ser.serialize(("not an int", "x"))
    with pytest.raises(ValueError, match="must be a record"):
        AvroRowSerializationSchema(avro_schema_string='"string"')
    with pytest.raises(ValueError, match="record_class"):
        AvroRowDeserializationSchema(record_class="com.example.Order")
