"""Two places where PyFlink hands records to Java and back (issue 18).

* `KeyedStream.execute_and_collect`: PyFlink's key_by maps every value to `Row(key, value)` (the records of
  its KeyedStream; `KeyedStream._values()` strips the key again for the operators after it), and
  execute_and_collect, inherited from DataStream, yields those records: `Row(f0=key, f1=value)`.
* `FileSink.for_row_format(path, Encoder.simple_string_encoder())`: the encoder is Java's
  SimpleStringEncoder, which writes `toString()` of the Java object of the stream's declared type — a
  Flink Tuple as `(And,5)`, a Row as `+I[And, 5]`, a boolean as `true`, as print() shows them.

References are written in plain Python from the inputs.
"""

from __future__ import annotations

from pathlib import Path

from strom.common import Encoder, Row, Types
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.file_system import FileSink

WORDS = [("And", 5), ("to", 1), ("be", 2)]


def test_keyed_stream_execute_and_collect_yields_rows_of_key_and_value():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    keyed = env.from_collection(WORDS).key_by(lambda w: w[0].lower())
    out = list(keyed.execute_and_collect())
    assert sorted(out, key=repr) == sorted((Row(f0=w.lower(), f1=(w, n)) for w, n in WORDS), key=repr)
    assert all(r.as_dict() == {"f0": r[1][0].lower(), "f1": r[1]} for r in out)


def test_keyed_stream_execute_and_collect_with_a_limit_returns_that_many():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = env.from_collection(WORDS).key_by(lambda w: w[1] % 2).execute_and_collect(limit=2)
    assert len(out) == 2 and all(r.f0 == r.f1[1] % 2 for r in out)


def written_lines(base: Path) -> list[str]:
    return sorted(line for f in base.rglob("*") if f.is_file() and not f.name.startswith(".")
                  for line in f.read_text().splitlines())


def run_into_file_sink(tmp_path: Path, records: list, type_info, encoder: Encoder | None = None) -> list[str]:
    env = StreamExecutionEnvironment.get_execution_environment()
    out = tmp_path / "out"
    env.from_collection(records, type_info=type_info).sink_to(
        FileSink.for_row_format(str(out), encoder or Encoder.simple_string_encoder()).build())
    env.execute("file sink text")
    return written_lines(out)


def test_a_file_sink_writes_tuples_as_java_tuples(tmp_path):
    lines = run_into_file_sink(tmp_path, WORDS, Types.TUPLE([Types.STRING(), Types.INT()]))
    assert lines == sorted(f"({w},{n})" for w, n in WORDS)


def test_a_file_sink_writes_rows_with_their_kind_and_booleans_as_java_does(tmp_path):
    records = [(w, n, n > 1) for w, n in WORDS]
    lines = run_into_file_sink(tmp_path, records, Types.ROW([Types.STRING(), Types.INT(), Types.BOOLEAN()]))
    assert lines == sorted(f"+I[{w}, {n}, {'true' if b else 'false'}]" for w, n, b in records)


def test_a_file_sink_writes_an_untyped_stream_as_python_strings(tmp_path):
    lines = run_into_file_sink(tmp_path, WORDS, None)
    assert lines == sorted(str(r) for r in WORDS)


def test_an_encoder_of_ones_own_keeps_its_encoding(tmp_path):
    class Upper(Encoder):
        def encode(self, value) -> bytes:
            return (str(value).upper() + "\n").encode()

    lines = run_into_file_sink(tmp_path, WORDS, Types.TUPLE([Types.STRING(), Types.INT()]), Upper())
    assert lines == sorted(str(r).upper() for r in WORDS)
