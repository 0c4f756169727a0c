"""Numbers as PyFlink's coders hold a declared numeric type.

PyFlink (1.20) moves a value between Python and Java, and into state, through the coder of its declared
type (flink-python/pyflink/fn_execution/coder_impl_fast.pyx): `Types.FLOAT()` is written with
`write_float(float v)`, a C `float`, so a Python float comes back rounded to 32 bits
(`FloatCoderImpl`); `Types.BYTE()/SHORT()/INT()/LONG()` are written with
`write_int8/16/32/64(int8_t/int16_t/int32_t/int64_t v)` (`TinyIntCoderImpl`, `SmallIntCoderImpl`,
`IntCoderImpl`, `BigIntCoderImpl`), and Cython's conversion of a Python int to those C types raises
OverflowError ("value too large to convert to int16_t") for a value out of range; the pure-Python coders
(`stream_slow.py`: `struct.pack('>h', v)`) refuse it too. Elements of `from_collection(..., type_info)`
instead are converted on the Java side (PythonTableUtils' converters: `c.toShort`, `c.toInt`,
`c.toFloat`), a narrowing conversion that wraps. Both are here: `check_integer` refuses, `wrap_integer`
wraps, `to_float32` rounds.
"""

from __future__ import annotations

import math
import struct

INTEGER_BITS = {"BYTE": 8, "SHORT": 16, "INT": 32, "LONG": 64}
_FLOAT32 = struct.Struct("f")


def check_integer(value: int, bits: int, type_name: str) -> int:
    """`value` when it fits a signed integer of `bits` bits, else one line naming the declared type."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if low <= value <= high:
        return value
    raise OverflowError(
        f"value {value} does not fit Types.{type_name}() ({low}..{high}), as PyFlink's coder refuses it: "
        "declare a wider type (Types.LONG(), Types.BIG_INT()) or keep the value in range"
    )


def wrap_integer(value: int, bits: int) -> int:
    """Java's narrowing conversion: the low `bits` bits, as a signed number."""
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


def to_float32(value: float | int) -> float:
    """The nearest 32-bit float (what C's double-to-float conversion gives: infinity beyond its range)."""
    try:
        result: float = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return result
