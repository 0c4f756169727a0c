"""Reading CSV files with PyFlink's CsvSchema and CsvReaderFormat (issue 18).

PyFlink documents (pyflink.datastream.formats.csv.CsvReaderFormat):
    schema = CsvSchema.builder().add_number_column('id', number_type=DataTypes.INT())
        .add_string_column('name').add_array_column('list', ',', element_type=DataTypes.STRING())
        .set_column_separator('|').set_use_header().set_strict_headers().build()
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), CSV_FILE_PATH).build()
    # the type of records is Types.ROW_NAMED(['id', 'name', 'list'],
    #   [Types.INT(), Types.STRING(), Types.LIST(Types.STRING())])

Expected rows are parsed from the same text by Python's csv module in the test.
"""

from __future__ import annotations

import csv
import io

import pytest
from strom.common import Row, Types, WatermarkStrategy
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.file_system import FileSource
from strom.datastream.formats.csv import CsvReaderFormat, CsvSchema
from strom.table.types import DataTypes

TEXT = "id|name|tags|score|ok\n1|Ann|a,b|1.5|true\n2|\"B|ob\"|c|2.25|false\n3|Cy||3|TRUE\n"


def read(path, schema, env=None):
    env = env or StreamExecutionEnvironment.get_execution_environment()
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), str(path)).build()
    return env.from_source(source, WatermarkStrategy.no_watermarks(), "csv"), env


def schema_builder():
    return (CsvSchema.builder().add_number_column("id", number_type=DataTypes.INT()).add_string_column("name")
            .add_array_column("tags", ",", element_type=DataTypes.STRING())
            .add_number_column("score", number_type=DataTypes.DOUBLE()).add_boolean_column("ok")
            .set_column_separator("|"))


def test_a_csv_file_is_read_into_rows_of_the_schemas_type(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(TEXT)
    schema = schema_builder().set_use_header().set_strict_headers().build()
    ds, _ = read(path, schema)
    assert ds.get_type() == Types.ROW_NAMED(["id", "name", "tags", "score", "ok"],
                                            [Types.INT(), Types.STRING(), Types.LIST(Types.STRING()),
                                             Types.DOUBLE(), Types.BOOLEAN()])
    expected = [dict(id=int(i), name=n, tags=t.split(",") if t else [], score=float(s), ok=o.lower() == "true")
                for i, n, t, s, o in list(csv.reader(io.StringIO(TEXT), delimiter="|"))[1:]]
    got = sorted(ds.execute_and_collect(), key=lambda r: r.id)
    assert [r.as_dict() for r in got] == expected
    assert all(isinstance(r, Row) and r._fields == ("id", "name", "tags", "score", "ok") for r in got)


def test_a_header_that_does_not_name_the_columns_is_refused_under_strict_headers(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(TEXT.replace("id|name", "ident|name", 1))
    ds, env = read(path, schema_builder().set_use_header().set_strict_headers().build())
    ds.print()
    with pytest.raises(Exception, match=r"the header \['ident', .*\] does not name the CSV schema's columns"):
        env.execute("strict header")


def test_a_field_that_does_not_parse_names_the_file_line_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1|Ann|a|1.5|true\nx|Bob|b|2|false\n")
    ds, env = read(path, schema_builder().build())
    ds.print()
    with pytest.raises(Exception, match=r"bad\.csv: line 2, column 'id': 'x' is not a INT"):
        env.execute("bad field")


def test_an_unreadable_column_type_is_refused_when_the_schema_is_built():
    with pytest.raises(ValueError, match="CSV column 'when' has type DATE"):
        CsvSchema.builder().add_number_column("when", number_type=DataTypes.DATE())
