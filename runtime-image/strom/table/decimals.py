"""DECIMAL(p, s): Flink's type rules for exact numerics and the value operations that honour them.

Values are Python `decimal.Decimal` held at their type's scale. The result types are Flink's
LogicalTypeMerging rules (adopted from SQL Server): `+`/`-` keep the larger scale and add one integer digit,
`*` adds precisions and scales, `/` keeps at least 6 fractional digits; a type past 38 digits is cut to 38,
keeping at least min(scale, 6) fractional digits. A value is rounded HALF_UP to its scale, and a value that
needs more integer digits than its type has is NULL (Flink's DecimalData.fromBigDecimal).
"""

from __future__ import annotations

import decimal
import functools
from collections.abc import Callable
from typing import Any

from strom.table.types import DataType

MAX_PRECISION = 38
_MIN_ADJUSTED_SCALE = 6
# wide enough that no intermediate result is rounded before it is fitted to its type (38 + 38 digits)
_CONTEXT = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP, Emax=999999, Emin=-999999)
# an integer operand counts as the DECIMAL that holds all its values (Flink's implicit widening)
_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}


def decimal_type(precision: int, scale: int, nullable: bool = True) -> DataType:
    return DataType("DECIMAL", nullable, precision, scale=scale)


def as_decimal(t: DataType) -> DataType:
    """An integer or DECIMAL type as the DECIMAL that holds its values."""
    if t.root == "DECIMAL":
        return t
    return decimal_type(_INTEGER_DIGITS[t.root], 0, t.nullable)


def _adjusted(precision: int, scale: int, nullable: bool) -> DataType:
    if precision <= MAX_PRECISION:
        return decimal_type(precision, scale, nullable)
    digits = precision - scale
    return decimal_type(MAX_PRECISION, max(MAX_PRECISION - digits, min(scale, _MIN_ADJUSTED_SCALE)), nullable)


def result_type(op: str, t0: DataType, t1: DataType) -> DataType:
    """The type of `t0 op t1` when one side is DECIMAL and neither is FLOAT/DOUBLE."""
    a, b = as_decimal(t0), as_decimal(t1)
    p1, s1, p2, s2 = a.precision or 10, a.scale or 0, b.precision or 10, b.scale or 0
    nullable = t0.nullable or t1.nullable
    if op in ("+", "-"):
        scale = max(s1, s2)
        return _adjusted(max(p1 - s1, p2 - s2) + scale + 1, scale, nullable)
    if op == "*":
        return _adjusted(p1 + p2 + 1, s1 + s2, nullable)
    if op == "/":
        scale = max(_MIN_ADJUSTED_SCALE, s1 + p2 + 1)
        return _adjusted(p1 - s1 + s2 + scale, scale, nullable)
    if op == "%":
        scale = max(s1, s2)
        return _adjusted(min(p1 - s1, p2 - s2) + scale, scale, nullable)
    raise ValueError(f"no DECIMAL rule for operator {op!r}")


def common_type(t0: DataType, t1: DataType) -> DataType:
    """The type both sides of a CASE/COALESCE/UNION widen to: the larger integer part and the larger scale."""
    a, b = as_decimal(t0), as_decimal(t1)
    scale = max(a.scale or 0, b.scale or 0)
    digits = max((a.precision or 10) - (a.scale or 0), (b.precision or 10) - (b.scale or 0))
    return decimal_type(min(MAX_PRECISION, digits + scale), scale, t0.nullable or t1.nullable)


def sum_type(t: DataType) -> DataType:
    """SUM(DECIMAL(p, s)) is DECIMAL(38, s)."""
    return decimal_type(MAX_PRECISION, t.scale or 0)


def avg_type(t: DataType) -> DataType:
    """AVG(DECIMAL(p, s)) is DECIMAL(38, max(6, s)): the sum divided by a BIGINT count (DECIMAL(20, 0))."""
    return result_type("/", decimal_type(MAX_PRECISION, t.scale or 0), decimal_type(20, 0))


@functools.lru_cache(maxsize=256)
def fitter(t: DataType) -> Callable[[Any], decimal.Decimal | None]:
    """A function rounding a number HALF_UP to `t`'s scale; NULL when it needs more digits than `t` has."""
    scale = t.scale or 0
    quantum = decimal.Decimal(1).scaleb(-scale)
    limit = decimal.Decimal(10) ** ((t.precision or 10) - scale)
    quantize = _CONTEXT.quantize

    def fit(v: Any) -> decimal.Decimal | None:
        try:
            v = quantize(v if type(v) is decimal.Decimal else to_decimal(v), quantum)
        except decimal.InvalidOperation:  # more digits than even the wide context holds
            return None
        return v if -limit < v < limit else None

    return fit


def to_decimal(v: Any) -> decimal.Decimal:
    """A Python number as a Decimal: a float by its shortest decimal form (Java's BigDecimal.valueOf)."""
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"{v!r} is not a DECIMAL")
        return decimal.Decimal(repr(v))
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a DECIMAL")
    return decimal.Decimal(v)


def arithmetic(op: str, t0: DataType, t1: DataType) -> tuple[Callable[[Any, Any], Any], DataType]:
    """`x op y` over two non-NULL values, one side DECIMAL and the other DECIMAL or an integer type: the
    exact result fitted to Flink's result type (NULL on overflow). Division by zero raises as in Flink."""
    t = result_type(op, t0, t1)
    fit = fitter(t)
    a, b = as_decimal(t0), as_decimal(t1)
    natural = (a.scale or 0) + (b.scale or 0) if op == "*" else max(a.scale or 0, b.scale or 0)
    if op in ("+", "-", "*") and t.scale == natural and (t.precision or 10) <= 28:
        # hot path (q1's 0.908 * price): operands held at their scales give the exact result at t's scale, and
        # within 28 digits the default context does not round; only the overflow check remains
        limit = decimal.Decimal(10) ** ((t.precision or 10) - natural)
        low = -limit
        if op == "*":
            return (lambda x, y: v if low < (v := x * y) < limit else None), t
        if op == "+":
            return (lambda x, y: v if low < (v := x + y) < limit else None), t
        return (lambda x, y: v if low < (v := x - y) < limit else None), t
    if op == "+":
        add = _CONTEXT.add
        return (lambda x, y: fit(add(x, y))), t
    if op == "-":
        sub = _CONTEXT.subtract
        return (lambda x, y: fit(sub(x, y))), t
    if op == "*":
        mul = _CONTEXT.multiply
        return (lambda x, y: fit(mul(x, y))), t
    if op == "/":
        div = _CONTEXT.divide

        def divide(x: Any, y: Any) -> Any:
            if y == 0:
                raise ArithmeticError("Division by zero (DECIMAL)")
            return fit(div(x, y))

        return divide, t
    rem = _CONTEXT.remainder

    def modulo(x: Any, y: Any) -> Any:  # Java's BigDecimal.remainder: the sign of the dividend
        if y == 0:
            raise ArithmeticError("Division by zero (DECIMAL)")
        return fit(rem(x, y))

    return modulo, t


def divide_exact(total: Any, n: int) -> decimal.Decimal:
    """`total / n` in the wide context (AVG's sum over its count), before it is fitted to its type."""
    return _CONTEXT.divide(total, n)


def plain_string(v: decimal.Decimal) -> str:
    """Flink's DECIMAL text: plain digits with the type's scale (BigDecimal.toPlainString), never 1E+3."""
    return format(v, "f")
