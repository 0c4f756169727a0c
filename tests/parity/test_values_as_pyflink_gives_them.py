"""Rows and print() output as PyFlink gives them (issue 18).

PyFlink's Row: "A row in a table. The fields in it can be accessed ... Row(name='Alice', age=11)";
its repr is `Row(age=11, name='Alice')` for `Row(name='Alice', age=11)` (keyword fields sorted by name)
and `<Row(1, 'a')>` without. A row that reaches a function through `Types.ROW([...])` has the type's
field names, `f0, f1, ...` when the type gives none (Flink's RowTypeInfo default names). `print()` goes
through Flink's Java PrintSinkFunction: "Writes a DataStream to the standard output stream (stdout). For each element of
the DataStream the object string is written." -- the Java object's toString: a Types.TUPLE record as
Flink's Tuple (`(And,5)`), a Types.ROW record as `+I[And, 5]`, booleans `true`/`false`, None `null`;
a stream without a declared type is first mapped to `str(value)`. Parallel subtasks prefix `N> `.
"""

from __future__ import annotations

from typing import Any

import pytest
from strom.common import Row, Types
from strom.common.java_strings import java_double, java_float, java_formatter
from strom.common.row import RowKind
from strom.datastream import StreamExecutionEnvironment


def _printed(capsys: pytest.CaptureFixture[str], build: Any) -> list[str]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    build(env).print()
    env.execute()
    return capsys.readouterr().out.splitlines()


WORDS = [("And", 5), ("the", 3), ("And", 2)]


def test_a_tuple_stream_prints_as_flinks_tuple(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _printed(capsys, lambda env: env.from_collection(WORDS, Types.TUPLE([Types.STRING(), Types.INT()])))
    assert lines == [f"({w},{n})" for w, n in WORDS]


def test_a_row_stream_prints_with_its_row_kind(capsys: pytest.CaptureFixture[str]) -> None:
    def build(env: StreamExecutionEnvironment) -> Any:
        ds = env.from_collection(WORDS, Types.TUPLE([Types.STRING(), Types.INT()]))
        row_type = Types.ROW([Types.STRING(), Types.INT(), Types.BOOLEAN(), Types.DOUBLE()])
        return ds.map(lambda t: Row(t[0], t[1], t[1] > 3, None if t[1] == 3 else t[1] * 1e7), output_type=row_type)

    assert _printed(capsys, build) == ["+I[And, 5, true, 5.0E7]", "+I[the, 3, false, null]", "+I[And, 2, false, 2.0E7]"]


def test_an_untyped_stream_prints_pythons_str(capsys: pytest.CaptureFixture[str]) -> None:
    assert _printed(capsys, lambda env: env.from_collection(WORDS)) == [str(t) for t in WORDS]


def test_parallel_print_prefixes_the_subtask_as_flink_does(capsys: pytest.CaptureFixture[str]) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(WORDS, Types.TUPLE([Types.STRING(), Types.INT()])).rebalance().map(
        lambda t: t, Types.TUPLE([Types.STRING(), Types.INT()])
    ).print("words")
    env.execute()
    lines = capsys.readouterr().out.splitlines()
    assert sorted(line.split("> ", 1)[1] for line in lines) == sorted(f"({w},{n})" for w, n in WORDS)
    assert {line.split("> ", 1)[0] for line in lines} <= {"words:1", "words:2"}


def test_rows_from_tuples_have_field_names_f0_to_fn() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection(WORDS).map(lambda t: t, output_type=Types.ROW([Types.STRING(), Types.INT()]))
    rows = list(ds.map(lambda r: (r.f0, r["f1"], repr(r))).execute_and_collect())
    assert rows == [(w, n, f"Row(f0={w!r}, f1={n!r})") for w, n in WORDS]


def test_named_row_types_name_the_fields() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    row_type = Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.INT()])
    got = list(env.from_collection(WORDS, row_type).map(lambda r: repr(r)).execute_and_collect())
    assert got == [f"Row(word={w!r}, count={n!r})" for w, n in WORDS]


def test_row_repr_is_pyflinks() -> None:
    assert repr(Row(1, "a")) == "<Row(1, 'a')>"
    assert repr(Row(name="Alice", age=11)) == "Row(age=11, name='Alice')"  # PyFlink sorts keyword fields


def test_java_number_and_row_kind_formats() -> None:
    assert [java_double(v) for v in (0.5, 1e7, 1.5e-4, 0.001, -2.0, float("inf"))] == [
        "0.5", "1.0E7", "1.5E-4", "0.001", "-2.0", "Infinity"
    ]
    assert java_float(0.1) == "0.1" and java_float(16777217.0) == "1.6777216E7"
    row = Row("k", 1)
    row.set_row_kind(RowKind.UPDATE_BEFORE)
    assert java_formatter(Types.ROW([Types.STRING(), Types.INT()]))(row) == "-U[k, 1]"
    nested = java_formatter(Types.TUPLE([Types.STRING(), Types.LIST(Types.INT())]))
    assert nested(("k", [1, 2])) == "(k,[1, 2])"
