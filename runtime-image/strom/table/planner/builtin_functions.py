"""Flink's built-in string, math and conditional functions: name -> builder of (function over a row, result
type), merged into strom.table.planner.scalar's call table.

NULL semantics are Flink's: any NULL argument gives NULL unless Flink's documentation says otherwise
(CONCAT_WS skips NULL strings; GREATEST/LEAST are NULL if any argument is; IS DISTINCT FROM is never NULL).
Regular expressions are Java's (java.util.regex), read by Python's `re` (the common syntax is the same;
`$1` group references in replacements are translated).
"""

from __future__ import annotations

import decimal
import hashlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from strom.common.row import make_row
from strom.table import decimals
from strom.table.errors import ValidationException
from strom.table.expressions import Expression
from strom.table.types import DataType, DataTypes, wider_numeric

Fn = Callable[[Sequence[Any]], Any]
Builder = Callable[[Expression, list[Fn], list[DataType]], tuple[Fn, DataType]]


def _arity(e: Expression, low: int, high: int) -> None:
    if not low <= len(e.args) <= high:
        want = str(low) if low == high else f"{low} to {high}"
        raise ValidationException(f"{e.sql()}: {e.name.upper()} takes {want} arguments, got {len(e.args)}")


def _expect(e: Expression, types: list[DataType], kinds: str) -> None:
    """kinds: one letter per argument: s STRING, n numeric, i integral, a anything."""
    for a, t, k in zip(e.args, types, kinds, strict=False):
        ok = (k == "a" or (k == "s" and t.root == "STRING") or (k == "n" and t.is_numeric)
              or (k == "i" and t.is_integral))
        if not ok:
            want = {"s": "STRING", "n": "a numeric type", "i": "an integer type"}[k]
            raise ValidationException(f"{e.sql()}: argument {a.sql()} is {t}, expected {want}")


def _nullable(types: list[DataType]) -> bool:
    return any(t.nullable for t in types)


def strict(kinds: str, result: Callable[[list[DataType]], DataType], fn: Callable[..., Any],
           low: int | None = None) -> Builder:
    """A function that is NULL when any argument is NULL; `kinds` checks the argument types."""

    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        _arity(e, len(kinds) if low is None else low, len(kinds))
        _expect(e, types, kinds)

        def f(row: Sequence[Any]) -> Any:
            values = [g(row) for g in fns]
            return None if any(v is None for v in values) else fn(*values)

        return f, result(types)

    return build


def _string(types: list[DataType]) -> DataType:
    return DataTypes.STRING(_nullable(types))


def _int(types: list[DataType]) -> DataType:
    return DataTypes.INT(_nullable(types))


def _double(types: list[DataType]) -> DataType:
    return DataTypes.DOUBLE(_nullable(types))


def _same(types: list[DataType]) -> DataType:
    return replace(types[0].plain(), nullable=_nullable(types))


def _bool(types: list[DataType]) -> DataType:
    return DataTypes.BOOLEAN(_nullable(types))


# -- strings ---------------------------------------------------------------------------------------
def substring(s: str, start: int, length: int | None = None) -> str | None:
    """SUBSTRING(s FROM start [FOR length]): 1-based; a negative start counts from the end; a negative
    length is an error in Flink's validator at runtime -> NULL here as Flink's runtime returns."""
    if length is not None and length < 0:
        return None
    begin = start - 1 if start > 0 else (max(len(s) + start, 0) if start < 0 else 0)
    return s[begin:] if length is None else s[begin:begin + length]


def trim(position: str) -> Builder:
    """TRIM([BOTH|LEADING|TRAILING] [chars FROM] s), LTRIM(s), RTRIM(s): Flink strips the given characters
    (default: the space character only, not other whitespace)."""

    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        _arity(e, 1, 2)
        _expect(e, types, "ss")
        a = fns[0]
        chars_fn = fns[1] if len(fns) > 1 else (lambda row: " ")

        def f(row: Sequence[Any]) -> Any:
            s, chars = a(row), chars_fn(row)
            if s is None or chars is None:
                return None
            if position == "LEADING":
                return s.lstrip(chars)
            if position == "TRAILING":
                return s.rstrip(chars)
            return s.strip(chars)

        return f, _string(types)

    return build


def java_replacement(replacement: str) -> str:
    """A java.util.regex replacement ($1, \\$) as Python's re.sub replacement (\\g<1>, $)."""
    out, i = [], 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
        elif c == "$":
            m = re.match(r"\$(\d+)", replacement[i:])
            if m is None:
                raise ValueError(f"illegal group reference in replacement {replacement!r}")
            out.append(f"\\g<{m.group(1)}>")
            i += len(m.group(0))
        else:
            out.append(c.replace("\\", "\\\\"))
            i += 1
    return "".join(out)


def _regexp_replace(s: str, regex: str, replacement: str) -> str | None:
    try:
        return re.sub(regex, java_replacement(replacement), s)
    except (re.error, ValueError, IndexError):
        return None  # Flink logs and returns NULL for an invalid pattern


def _regexp_extract(s: str, regex: str, index: int = 1) -> str | None:
    """Flink: the group `index` (0 = the whole match) of the first match; NULL without a match, with an
    invalid pattern, or when `index` exceeds the groups."""
    try:
        m = re.search(regex, s)
    except re.error:
        return None
    if m is None or not 0 <= index <= (m.re.groups):
        return None
    return m.group(index)


def _regexp(s: str, regex: str) -> bool | None:
    try:
        return re.search(regex, s) is not None
    except re.error:
        return None


def _split_index(s: str, sep: str, index: int) -> str | None:
    """0-based field of `s` split by the separator string; NULL when there is no such field."""
    parts = s.split(sep) if sep else list(s)
    return parts[index] if 0 <= index < len(parts) else None


def _pad(left: bool) -> Callable[[str, int, str], str | None]:
    def pad(s: str, length: int, fill: str) -> str | None:
        """Flink: NULL for a negative length or an empty pad; longer strings are cut to the length."""
        if length < 0 or not fill:
            return None
        if length <= len(s):
            return s[:length]
        need = length - len(s)
        filler = (fill * (need // len(fill) + 1))[:need]
        return filler + s if left else s + filler

    return pad


def _initcap(s: str) -> str:
    """First letter of every word upper-case, the rest lower-case; words are runs of letters and digits."""
    out, start = [], True
    for c in s:
        out.append(c.upper() if start else c.lower())
        start = not c.isalnum()
    return "".join(out)


def _locate(sub: str, s: str, start: int = 1) -> int:
    """1-based position of `sub` in `s` from position `start`; 0 when absent."""
    if start < 1:
        return 0
    return s.find(sub, start - 1) + 1


def _concat_ws(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """CONCAT_WS(sep, s1, ...): NULL only when the separator is NULL; NULL strings are skipped."""
    if len(fns) < 2:
        raise ValidationException(f"{e.sql()}: CONCAT_WS takes a separator and at least one string")
    _expect(e, types, "s" * len(fns))
    sep, *rest = fns

    def f(row: Sequence[Any]) -> Any:
        d = sep(row)
        if d is None:
            return None
        return d.join(v for g in rest if (v := g(row)) is not None)

    return f, DataTypes.STRING(types[0].nullable)


def _left(s: str, n: int) -> str:
    return s[:n] if n > 0 else ""


def _right(s: str, n: int) -> str:
    return s[len(s) - n:] if n > 0 else ""


# -- math ------------------------------------------------------------------------------------------
def _decimal_round(x: float, digits: int, mode: str) -> float:
    """Flink rounds through BigDecimal of the value's decimal form (HALF_UP: 2.25 -> 2.3)."""
    if math.isnan(x) or math.isinf(x):
        return x
    q = decimal.Decimal(1).scaleb(-digits)
    return float(decimal.Decimal(repr(x)).quantize(q, rounding=mode))


def _round_int(x: int, digits: int, mode: str) -> int:
    if digits >= 0:
        return x
    q = decimal.Decimal(1).scaleb(-digits)
    return int(decimal.Decimal(x).quantize(q, rounding=mode))


def _round_decimal(e: Expression, fns: list[Fn], types: list[DataType], mode: str) -> tuple[Fn, DataType]:
    """ROUND/TRUNCATE of DECIMAL(p, s) to a constant r digits: Flink's findRoundDecimalType (one more integer
    digit for the carry when r < s; DECIMAL(1 + p - s, 0) for r < 0)."""
    if len(e.args) > 1 and (e.args[1].op != "lit" or not isinstance(e.args[1].value, int)):
        raise ValidationException(f"{e.sql()}: the digits of ROUND/TRUNCATE over a DECIMAL must be an integer "
                                  "literal")
    r = int(e.args[1].value) if len(e.args) > 1 else 0
    t = types[0]
    p, s = t.precision or 10, t.scale or 0
    if r >= s:
        return fns[0], t
    result = decimals.decimal_type(min(decimals.MAX_PRECISION, 1 + p - s + max(r, 0)), max(r, 0), t.nullable)
    a = fns[0]
    quantum = decimal.Decimal(1).scaleb(-r)
    fit = decimals.fitter(result)
    return (lambda row: None if (x := a(row)) is None else fit(x.quantize(quantum, rounding=mode))), result


def rounding(mode: str) -> Builder:
    """ROUND(x[, d]) (HALF_UP) and TRUNCATE(x[, d]) (toward zero): the argument's type."""

    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        _arity(e, 1, 2)
        _expect(e, types, "ni")
        a = fns[0]
        d = fns[1] if len(fns) > 1 else (lambda row: 0)
        integral = types[0].is_integral
        if types[0].root == "DECIMAL":
            return _round_decimal(e, fns, types, mode)

        def f(row: Sequence[Any]) -> Any:
            x, digits = a(row), d(row)
            if x is None or digits is None:
                return None
            return _round_int(x, digits, mode) if integral else _decimal_round(x, digits, mode)

        return f, _same(types)

    return build


def _floor_ceil(up: bool) -> Builder:
    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        if e.value is not None:  # FLOOR/CEIL(ts TO unit)
            from strom.table.planner.temporal_functions import floor_ceil_time

            return floor_ceil_time(e, fns, types, up)
        _arity(e, 1, 1)
        _expect(e, types, "n")
        a = fns[0]
        if types[0].is_integral:
            return a, types[0]
        op = math.ceil if up else math.floor
        if types[0].root == "DECIMAL":  # Flink: DECIMAL(p - s + 1, 0) (the carry), the value itself if s = 0
            t = types[0]
            if not t.scale:
                return a, t
            result = decimals.decimal_type(min(decimals.MAX_PRECISION, (t.precision or 10) - t.scale + 1), 0,
                                           t.nullable)
            return (lambda row: None if (x := a(row)) is None else decimal.Decimal(op(x))), result

        def f(row: Sequence[Any]) -> Any:
            x = a(row)
            return None if x is None else (x if math.isnan(x) or math.isinf(x) else float(op(x)))

        return f, types[0]

    return build


def _mod(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """MOD(a, b): the remainder with the dividend's sign (Java's %); integer operands only in Flink's
    signature for exact types, doubles allowed too."""
    _arity(e, 2, 2)
    _expect(e, types, "nn")
    a, b = fns
    integral = types[0].is_integral and types[1].is_integral
    if "DECIMAL" in (types[0].root, types[1].root) and not {types[0].root, types[1].root} & {"FLOAT", "DOUBLE"}:
        rem, result = decimals.arithmetic("%", types[0], types[1])
        return (lambda row: None if (x := a(row)) is None or (y := b(row)) is None else rem(x, y)), result

    def f(row: Sequence[Any]) -> Any:
        x, y = a(row), b(row)
        if x is None or y is None:
            return None
        if integral:
            if y == 0:
                raise ArithmeticError(f"{e.sql()}: division by zero")
            return int(math.fmod(x, y))
        return math.fmod(x, y) if y != 0 else math.nan

    return f, (DataType(types[1].root, _nullable(types)) if integral else _double(types))


def _java_double(fn: Callable[..., float]) -> Callable[..., float]:
    """Java's Math: a domain error is NaN and a pole is +-Infinity, not an exception."""

    def f(*xs: Any) -> float:
        try:
            return float(fn(*xs))
        except ValueError:
            if fn is math.log and xs[0] == 0:
                return -math.inf
            if fn is math.log10 and xs[0] == 0:
                return -math.inf
            return math.nan
        except OverflowError:
            return math.inf

    return f


def _log(*xs: float) -> float:
    """LOG(x) is the natural logarithm; LOG(base, x) the logarithm of x to the base."""
    return math.log(xs[0]) if len(xs) == 1 else math.log(xs[1]) / math.log(xs[0])


def _sign(x: Any) -> Any:
    s = (x > 0) - (x < 0)
    return float(s) if isinstance(x, float) else s


class JavaRandom:
    """java.util.Random's 48-bit linear congruential generator: RAND(seed) gives Flink's sequence."""

    _MULT = 0x5DEECE66D
    _MASK = (1 << 48) - 1

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ self._MULT) & self._MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * self._MULT + 0xB) & self._MASK
        return self._seed >> (48 - bits)

    def next_double(self) -> float:
        return ((self._next(26) << 27) + self._next(27)) * (1.0 / (1 << 53))

    def next_int(self, bound: int) -> int:
        if bound & -bound == bound:
            return (bound * self._next(31)) >> 31
        while True:
            bits = self._next(31)
            val = bits % bound
            if bits - val + (bound - 1) < (1 << 31):
                return val


def _rand(integer: bool) -> Builder:
    """RAND([seed]) in [0, 1); RAND_INTEGER([seed,] bound) in [0, bound): with a seed, one
    java.util.Random per operator instance, so the rows get that generator's sequence (Flink's)."""

    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        _arity(e, 1 if integer else 0, 2 if integer else 1)
        seeded = len(e.args) == (2 if integer else 1)
        if seeded and e.args[0].op != "lit":
            raise ValidationException(f"{e.sql()}: the seed must be a literal")
        import random

        gen: Any = JavaRandom(int(e.args[0].value)) if seeded else None
        bound_fn = fns[-1] if integer else None

        def f(row: Sequence[Any]) -> Any:
            nonlocal gen
            if integer:
                bound = bound_fn(row)  # type: ignore[misc]
                if bound is None:
                    return None
                return gen.next_int(bound) if gen is not None else random.randrange(bound)
            return gen.next_double() if gen is not None else random.random()

        return f, DataTypes.INT(False) if integer else DataTypes.DOUBLE(False)

    return build


# -- conditional -----------------------------------------------------------------------------------
def _common_type(e: Expression, types: list[DataType]) -> DataType:
    result = types[0]
    for a, t in zip(e.args[1:], types[1:], strict=True):
        if result.is_numeric and t.is_numeric:
            result = wider_numeric(result, t)
        elif t.root != result.root and not (t.is_timestamp and result.is_timestamp):
            raise ValidationException(f"{e.sql()}: argument {a.sql()} is {t}, expected {result.base()}")
    return replace(result.plain(), nullable=_nullable(types))


def _if(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    _arity(e, 3, 3)
    if types[0].root != "BOOLEAN":
        raise ValidationException(f"{e.sql()}: condition {e.args[0].sql()} is {types[0]}, expected BOOLEAN")
    c, t, f_ = fns
    result = _common_type(Expression("call", "if", e.args[1:]), types[1:])
    return (lambda row: t(row) if c(row) is True else f_(row)), result


def _nullif(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    _arity(e, 2, 2)
    _common_type(e, types)
    a, b = fns

    def f(row: Sequence[Any]) -> Any:
        x = a(row)
        return None if x is None or x == b(row) else x

    return f, replace(types[0].plain(), nullable=True)


def _extreme(pick: Callable[..., Any]) -> Builder:
    """GREATEST/LEAST: NULL if any argument is NULL (Flink's documented rule; DuckDB ignores NULLs)."""

    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        if not fns:
            raise ValidationException(f"{e.sql()}: needs at least one argument")
        result = _common_type(e, types)

        def f(row: Sequence[Any]) -> Any:
            values = [g(row) for g in fns]
            return None if any(v is None for v in values) else pick(values)

        return f, result

    return build


def _distinct_from(negate: bool) -> Builder:
    """a IS [NOT] DISTINCT FROM b: NULLs compare equal to each other; never NULL."""

    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        _common_type(e, types)
        a, b = fns

        def f(row: Sequence[Any]) -> bool:
            x, y = a(row), b(row)
            same = (x is None and y is None) or (x is not None and y is not None and x == y)
            return same if negate else not same

        return f, DataTypes.BOOLEAN(False)

    return build


# -- arrays ----------------------------------------------------------------------------------------
def _array(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """ARRAY[v1, ...]: a NOT NULL array of the arguments' common type (NULL elements kept)."""
    if not fns:
        raise ValidationException(f"{e.sql()}: ARRAY[] needs at least one element")
    element = _common_type(e, types)
    return (lambda row: [g(row) for g in fns]), DataTypes.ARRAY(element, False)


def _map(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """MAP[k1, v1, k2, v2, ..]: a NOT NULL map of the keys' and the values' common types; a repeated key
    keeps its last value (as Flink's map constructor)."""
    if not fns or len(fns) % 2:
        raise ValidationException(f"{e.sql()}: MAP[..] takes an even, non-zero number of arguments (key, value, ..)")
    key = _common_type(Expression("call", "map", e.args[0::2]), types[0::2])
    value = _common_type(Expression("call", "map", e.args[1::2]), types[1::2])
    pairs = [(fns[i], fns[i + 1]) for i in range(0, len(fns), 2)]
    return (lambda row: {k(row): v(row) for k, v in pairs}), DataTypes.MAP(key, value, False)


def _map_part(part: str) -> Builder:
    """MAP_KEYS(m) / MAP_VALUES(m): an ARRAY of the keys or the values; MAP_ENTRIES(m): ARRAY<ROW<key, value>>."""

    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        _arity(e, 1, 1)
        if types[0].root != "MAP":
            raise ValidationException(f"{e.sql()}: {e.args[0].sql()} is {types[0]}, not a MAP")
        (a,) = fns
        kt, vt = types[0].fields[0][1], types[0].fields[1][1]
        if part == "keys":
            return (lambda row: None if (m := a(row)) is None else list(m)), DataTypes.ARRAY(kt, types[0].nullable)
        if part == "values":
            return ((lambda row: None if (m := a(row)) is None else list(m.values())),
                    DataTypes.ARRAY(vt, types[0].nullable))
        entry = DataTypes.ROW([("key", kt), ("value", vt)])
        names = ("key", "value")
        return ((lambda row: None if (m := a(row)) is None else [make_row([k, v], names) for k, v in m.items()]),
                DataTypes.ARRAY(entry, types[0].nullable))

    return build


def _map_from_arrays(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """MAP_FROM_ARRAYS(keys, values): the arrays paired; arrays of different lengths fail, as in Flink."""
    _arity(e, 2, 2)
    for a, t in zip(e.args, types, strict=True):
        if t.root != "ARRAY":
            raise ValidationException(f"{e.sql()}: {a.sql()} is {t}, not an ARRAY")
    ka, va = fns

    def f(row: Sequence[Any]) -> Any:
        ks, vs = ka(row), va(row)
        if ks is None or vs is None:
            return None
        if len(ks) != len(vs):
            raise ValueError(f"{e.sql()}: Invalid function MAP_FROM_ARRAYS call: the key array has {len(ks)} "
                             f"elements, the value array {len(vs)}; both arrays must have the same length")
        return dict(zip(ks, vs, strict=True))

    return f, DataTypes.MAP(types[0].fields[0][1], types[1].fields[0][1], _nullable(types))


def _element_at(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """array[i]: the element at 1-based position i; NULL when i is outside the array. map[key]: the key's
    value, NULL when the map lacks the key."""
    if types[0].root == "MAP":
        kt = types[0].fields[0][1]
        if not (kt.root == types[1].root or (kt.is_numeric and types[1].is_numeric)):
            raise ValidationException(f"{e.sql()}: the key {e.args[1].sql()} is {types[1]}, the map's keys are {kt}")
        m_fn, k_fn = fns
        return ((lambda row: None if (m := m_fn(row)) is None or (k := k_fn(row)) is None else m.get(k)),
                types[0].fields[1][1].nullable_())
    if types[0].root != "ARRAY":
        raise ValidationException(f"{e.sql()}: {e.args[0].sql()} is {types[0]}, not an ARRAY")
    _expect(e, types, "ai")
    a, i = fns

    def f(row: Sequence[Any]) -> Any:
        arr, index = a(row), i(row)
        if arr is None or index is None or not 1 <= index <= len(arr):
            return None
        return arr[index - 1]

    return f, types[0].fields[0][1].nullable_()


def _cardinality(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    _arity(e, 1, 1)
    if types[0].root not in ("ARRAY", "MAP"):
        raise ValidationException(f"{e.sql()}: {e.args[0].sql()} is {types[0]}, not an ARRAY or a MAP")
    (a,) = fns
    return (lambda row: None if (v := a(row)) is None else len(v)), DataTypes.INT(types[0].nullable)


def _hash(algorithm: str) -> Callable[[str], str]:
    return lambda s: hashlib.new(algorithm, s.encode("utf-8")).hexdigest()


_MATH1: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt, "ln": math.log, "log10": math.log10, "log2": math.log2, "exp": math.exp,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "degrees": math.degrees, "radians": math.radians,
}

CALLS: dict[str, Builder] = {
    "substring": strict("sii", _string, substring, low=2),
    "trim": trim("BOTH"),
    "ltrim": trim("LEADING"),
    "rtrim": trim("TRAILING"),
    "trim_leading": trim("LEADING"),
    "trim_trailing": trim("TRAILING"),
    "replace": strict("sss", _string, lambda s, a, b: s.replace(a, b)),
    "regexp_replace": strict("sss", _string, _regexp_replace),
    "regexp_extract": strict("ssi", _string, _regexp_extract, low=2),
    "regexp": strict("ss", _bool, _regexp),
    "split_index": strict("ssi", _string, _split_index),
    "lpad": strict("sis", _string, _pad(True)),
    "rpad": strict("sis", _string, _pad(False)),
    "initcap": strict("s", _string, _initcap),
    "locate": strict("ssi", _int, _locate, low=2),
    "concat_ws": _concat_ws,
    "reverse": strict("s", _string, lambda s: s[::-1]),
    "repeat": strict("si", _string, lambda s, n: s * max(n, 0)),
    "left": strict("si", _string, _left),
    "right": strict("si", _string, _right),
    "ascii": strict("s", _int, lambda s: ord(s[0]) if s else 0),
    "chr": strict("i", _string, lambda n: chr(n % 256) if n >= 0 else None),
    "md5": strict("s", _string, _hash("md5")),
    "sha1": strict("s", _string, _hash("sha1")),
    "sha256": strict("s", _string, _hash("sha256")),
    "round": rounding(decimal.ROUND_HALF_UP),
    "truncate": rounding(decimal.ROUND_DOWN),
    "floor": _floor_ceil(False),
    "ceil": _floor_ceil(True),
    "mod": _mod,
    "power": strict("nn", _double, _java_double(math.pow)),
    "log": strict("nn", _double, _java_double(_log), low=1),
    "sign": strict("n", _same, _sign),
    "pi": strict("", lambda ts: DataTypes.DOUBLE(False), lambda: math.pi),
    "e": strict("", lambda ts: DataTypes.DOUBLE(False), lambda: math.e),
    "atan2": strict("nn", _double, _java_double(math.atan2)),
    "rand": _rand(False),
    "rand_integer": _rand(True),
    **{name: strict("n", _double, _java_double(fn)) for name, fn in _MATH1.items()},
    "array": _array,
    "map": _map,
    "map_keys": _map_part("keys"),
    "map_values": _map_part("values"),
    "map_entries": _map_part("entries"),
    "map_from_arrays": _map_from_arrays,
    "element_at": _element_at,
    "cardinality": _cardinality,
    "if": _if,
    "nullif": _nullif,
    "greatest": _extreme(max),
    "least": _extreme(min),
    "is_distinct_from": _distinct_from(False),
    "is_not_distinct_from": _distinct_from(True),
}
