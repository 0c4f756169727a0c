"""Declared numeric types hold their values as PyFlink's coders hold them (issue 18).

PyFlink 1.20's coders (flink-python/pyflink/fn_execution/coder_impl_fast.pyx) write `Types.FLOAT()` with
`write_float(float v)` — a C float, so a value comes back rounded to 32 bits — and `Types.BYTE/SHORT/INT/
LONG()` with `write_int8/16/32/64(intN_t v)`, whose Cython argument conversion raises OverflowError for a
Python int out of range (the pure-Python coders, stream_slow.py, `struct.pack('>h', v)`, refuse it too).
Keyed state is written through the coder of its descriptor's type too. Elements of
`from_collection(data, type_info)` are converted by Flink's Java side (PythonTableUtils:
`c.toShort`, `c.toInt`, `c.toFloat`), a narrowing conversion that wraps.

References are plain Python: `struct` for 32-bit floats, two's complement arithmetic for wrapping.
"""

from __future__ import annotations

import struct

import pytest
from strom.common import Row, Types
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.functions import KeyedProcessFunction, RuntimeContext
from strom.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueState, ValueStateDescriptor


def float32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def wrapped(x: int, bits: int) -> int:
    return (x + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


def collect(ds) -> list:
    return list(ds.execute_and_collect())


def test_a_float_output_is_rounded_to_32_bits():
    env = StreamExecutionEnvironment.get_execution_environment()
    values = [0.1, 1 / 3, 3.14159265358979, 1e-40, 2]
    out = collect(env.from_collection(values).map(lambda x: x, output_type=Types.FLOAT()))
    assert out == [float32(v) for v in values]
    assert out[0] != 0.1  # really narrowed, not passed through
    assert isinstance(out[-1], float)


def test_a_float_beyond_32_bits_becomes_infinity_as_a_c_float_does():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = collect(env.from_collection([1e300, -1e300]).map(lambda x: x, output_type=Types.FLOAT()))
    assert out == [float("inf"), float("-inf")]


@pytest.mark.parametrize(("type_info", "bits"), [(Types.BYTE(), 8), (Types.SHORT(), 16), (Types.INT(), 32)])
def test_from_collection_narrows_integers_as_java_does(type_info, bits):
    env = StreamExecutionEnvironment.get_execution_environment()
    values = [1, -1, (1 << (bits - 1)) - 1, 1 << (bits - 1), -(1 << (bits - 1)) - 1, 40000, 3_000_000_000]
    assert collect(env.from_collection(values, type_info=type_info)) == [wrapped(v, bits) for v in values]


def test_from_collection_narrows_the_fields_of_tuples_and_rows():
    env = StreamExecutionEnvironment.get_execution_environment()
    rows = [(0.1, 40000, "a"), (2.5, -40000, "b")]
    tuple_type = Types.TUPLE([Types.FLOAT(), Types.SHORT(), Types.STRING()])
    assert collect(env.from_collection(rows, type_info=tuple_type)) == [
        (float32(f), wrapped(s, 16), t) for f, s, t in rows
    ]
    row_type = Types.ROW_NAMED(["f", "s", "t"], [Types.FLOAT(), Types.SHORT(), Types.STRING()])
    out = collect(env.from_collection([Row(*r) for r in rows], type_info=row_type))
    assert [tuple(r) for r in out] == [(float32(f), wrapped(s, 16), t) for f, s, t in rows]
    assert out[0].s == wrapped(40000, 16)


@pytest.mark.parametrize(("type_info", "value"), [(Types.SHORT(), 32768), (Types.INT(), -(1 << 31) - 1),
                                                  (Types.BYTE(), 128), (Types.LONG(), 1 << 63)])
def test_an_operator_output_out_of_its_declared_range_fails_as_pyflinks_coder_does(type_info, value):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([0]).map(lambda _: value, output_type=type_info).print()
    with pytest.raises(Exception, match=rf"value {value} does not fit Types\.{type_info!r}\(\)"):
        env.execute("overflow")


def test_an_operator_output_in_range_is_kept_and_tuple_fields_are_checked():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = collect(env.from_collection([1, 2]).map(lambda x: (x * 32767 // 2, x * 0.1),
                                                  output_type=Types.TUPLE([Types.SHORT(), Types.FLOAT()])))
    assert out == [(x * 32767 // 2, float32(x * 0.1)) for x in [1, 2]]
    env.from_collection([2]).map(lambda x: ("k", x * 40000), output_type=Types.TUPLE([Types.STRING(), Types.SHORT()]))\
        .print()
    with pytest.raises(Exception, match=r"value 80000 does not fit Types\.SHORT\(\)"):
        env.execute("tuple overflow")


# -- keyed state: PyFlink writes it through the coder of the descriptor's type ---------------------------------
class StoreAndRead(KeyedProcessFunction):
    """Writes each value into value, list and map states declared with `type_info`, reads them back."""

    def __init__(self, type_info):
        self.type_info = type_info

    def open(self, runtime_context: RuntimeContext):
        self.value = runtime_context.get_state(ValueStateDescriptor("v", self.type_info))
        self.items = runtime_context.get_list_state(ListStateDescriptor("l", self.type_info))
        self.by_key = runtime_context.get_map_state(MapStateDescriptor("m", Types.STRING(), self.type_info))

    def process_element(self, value, ctx):
        self.value.update(value)
        self.items.add(value)
        self.by_key.put("k", value)
        yield self.value.value(), list(self.items.get()), self.by_key.get("k"), isinstance(self.value, ValueState)


def run_state(values, type_info):
    env = StreamExecutionEnvironment.get_execution_environment()
    out = env.from_collection(values).key_by(lambda v: 0).process(StoreAndRead(type_info))
    return collect(out)


def test_float_state_holds_a_32_bit_float():
    values = [0.1, 2.5]
    out = run_state(values, Types.FLOAT())
    expected_first = float32(0.1)
    assert out[0] == (expected_first, [expected_first], expected_first, True)
    assert out[1] == (float32(2.5), [expected_first, float32(2.5)], float32(2.5), True)


def test_short_state_refuses_a_value_out_of_range():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([40000]).key_by(lambda v: 0).process(StoreAndRead(Types.SHORT())).print()
    with pytest.raises(Exception, match=r"value 40000 does not fit Types\.SHORT\(\)"):
        env.execute("short state")


def test_state_without_a_numeric_type_keeps_values_as_given():
    assert run_state([0.1], Types.DOUBLE()) == [(0.1, [0.1], 0.1, True)]
    assert run_state([0.1], None) == [(0.1, [0.1], 0.1, True)]
