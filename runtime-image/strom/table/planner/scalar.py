"""Compile a scalar `Expression` against an input schema into (function over a row tuple, result DataType).

Semantics follow Flink SQL: NULL in -> NULL out for operators and functions, three-valued AND/OR,
integer division truncates toward zero (INT / INT is INT), CAST renders as Flink's cast rules.
An unknown column is a one-line ValidationException naming it and the available columns.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from strom.table import decimals
from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.expressions import Expression
from strom.table.planner import builtin_functions, json_functions, session_zone, temporal_functions
from strom.table.planner.values import sql_string
from strom.table.sql.flink_functions import UNKNOWN_FUNCTION, no_match_message
from strom.table.types import DataType, DataTypes, type_of_value, wider_numeric, wrap_integer

Fn = Callable[[Sequence[Any]], Any]
Columns = Sequence[tuple[str, DataType]]


def column_index(name: str, columns: Columns) -> int:
    names = [n for n, _ in columns]
    if name in names:
        return names.index(name)
    raise ValidationException(f"unknown column {name!r}; available columns: {', '.join(names) or '(none)'}")


def compile_scalar(e: Expression, columns: Columns) -> tuple[Fn, DataType]:
    if e.op == "alias":
        return compile_scalar(e.args[0], columns)
    if e.op == "col":
        i = column_index(e.name, columns)
        return (lambda row: row[i]), columns[i][1]
    if e.op == "lit":
        v = e.value
        if e.data_type is None and isinstance(v, decimal.Decimal):  # SQL's 1.50: DECIMAL(3, 2), as Flink types it
            _, digits, exponent = v.as_tuple()
            scale = max(0, -int(exponent))
            e = Expression("lit", value=v, data_type=decimals.decimal_type(max(len(digits), scale, 1), scale))
        t = e.data_type or (type_of_value(v) if v is not None else DataTypes.STRING())
        if e.data_type is None and isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31:
            t = DataTypes.INT(False)  # Flink types an integer literal INT when it fits
        if v is not None:
            t = t.not_null()
        return (lambda row: v), t
    if e.op == "agg":
        raise ValidationException(f"aggregate {e.sql()} is not allowed here (only in a grouped select or HAVING)")
    if e.op != "call":
        raise NotSupportedYet(f"expression {e.op!r}")
    if e.name == "get_field" and isinstance(e.value, str) and e.args[0].op == "col" and all(
            n != e.args[0].name for n, _ in columns):  # `x.f` naming neither a table nor a ROW column
        raise ValidationException(f"unknown table {e.args[0].name!r} in column reference {e.sql()} (nor is it a ROW "
                                  f"column; columns: {', '.join(n for n, _ in columns)})")
    compiled = [compile_scalar(a, columns) for a in e.args]
    fns = [f for f, _ in compiled]
    types = [t for _, t in compiled]
    if e.name == UNKNOWN_FUNCTION:
        raise ValidationException(no_match_message(str(e.value), types))
    builder = _CALLS.get(e.name)
    if builder is None:
        raise NotSupportedYet(f"function {e.name.upper()}")
    return builder(e, fns, types)


# -- builders ------------------------------------------------------------------------------------
def _need_numeric(e: Expression, types: list[DataType]) -> None:
    for a, t in zip(e.args, types, strict=True):
        if not t.is_numeric:
            raise ValidationException(f"{e.sql()}: operand {a.sql()} is {t}, expected a numeric type")


def _arith(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    if e.name in ("+", "-") and (types[0].is_timestamp or types[1].is_timestamp):
        return _timestamp_arith(e, fns, types)
    _need_numeric(e, types)
    a, b = fns
    if "DECIMAL" in (types[0].root, types[1].root):
        return _decimal_arith(e, fns, types)
    t = wider_numeric(types[0], types[1])
    integral = t.is_integral
    root = t.root
    op = e.name

    def f(row: Sequence[Any]) -> Any:
        x, y = a(row), b(row)
        if x is None or y is None:
            return None
        if op in ("+", "-", "*"):
            v = x + y if op == "+" else x - y if op == "-" else x * y
            return wrap_integer(v, root) if integral else v
        if integral:
            if y == 0:
                raise ArithmeticError(f"{e.sql()}: division by zero")
            q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)  # Java: truncate toward zero
            return q if op == "/" else x - q * y
        if op == "/":
            if y == 0:
                return math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y)
            return x / y
        return math.fmod(x, y) if y != 0 else math.nan

    return f, t


def _decimal_arith(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """DECIMAL with DECIMAL or an integer: Flink's exact result type; with FLOAT/DOUBLE: a DOUBLE."""
    a, b = fns
    if types[0].root in ("FLOAT", "DOUBLE") or types[1].root in ("FLOAT", "DOUBLE"):
        as_float = Expression("call", e.name, tuple(
            Expression("call", "cast", (x,), data_type=DataTypes.DOUBLE()) if t.root == "DECIMAL" else x
            for x, t in zip(e.args, types, strict=True)))
        return compile_scalar_calls(as_float, fns, types)
    fn, t = decimals.arithmetic(e.name, types[0], types[1])

    def f(row: Sequence[Any]) -> Any:
        x, y = a(row), b(row)
        return None if x is None or y is None else fn(x, y)

    return f, t


def compile_scalar_calls(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """`e` (a call over arguments already compiled to `fns`/`types`, with CASTs wrapped around some)."""
    wrapped_fns, wrapped_types = [], []
    for x, f, t in zip(e.args, fns, types, strict=True):
        if x.op == "call" and x.name == "cast":
            f, t = _cast(x, [f], [t])
        wrapped_fns.append(f)
        wrapped_types.append(t)
    builder = _CALLS[e.name]
    return builder(e, wrapped_fns, wrapped_types)


def _timestamp_arith(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """TIMESTAMP +/- INTERVAL (and INTERVAL + TIMESTAMP): a TIMESTAMP of the same kind, no time attribute."""
    a, b = fns
    ta, tb = types
    if e.name == "-" and ta.is_timestamp and tb.root == "INTERVAL":
        return (lambda row: None if (x := a(row)) is None or (y := b(row)) is None else x - y), _shifted(ta, tb)
    if e.name == "+" and ta.is_timestamp and tb.root == "INTERVAL":
        return (lambda row: None if (x := a(row)) is None or (y := b(row)) is None else x + y), _shifted(ta, tb)
    if e.name == "+" and tb.is_timestamp and ta.root == "INTERVAL":
        return (lambda row: None if (x := a(row)) is None or (y := b(row)) is None else x + y), _shifted(tb, ta)
    raise ValidationException(f"{e.sql()}: cannot apply {e.name} to {ta} and {tb} (a TIMESTAMP takes +/- INTERVAL)")


def _shifted(ts: DataType, interval: DataType) -> DataType:
    return replace(ts, nullable=ts.nullable or interval.nullable, time_attr=None)


_EPOCH = datetime.datetime(1970, 1, 1)


def _to_timestamp_ltz(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """TO_TIMESTAMP_LTZ(epoch, precision): precision 0 reads seconds, 3 milliseconds (Flink's two)."""
    if len(e.args) != 2 or e.args[1].op != "lit" or e.args[1].value not in (0, 3):
        raise ValidationException(f"{e.sql()}: expected TO_TIMESTAMP_LTZ(numeric epoch, 0 or 3)")
    if not types[0].is_numeric:
        raise ValidationException(f"{e.sql()}: argument {e.args[0].sql()} is {types[0]}, expected a numeric type")
    a = fns[0]
    unit = datetime.timedelta(seconds=1) if e.args[1].value == 0 else datetime.timedelta(milliseconds=1)
    return (lambda row: None if (x := a(row)) is None else _EPOCH + x * unit), DataTypes.TIMESTAMP_LTZ(
        3, types[0].nullable
    )


def _proctime(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """PROCTIME(): the wall clock when the row is computed, a processing-time attribute (UTC)."""
    if e.args:
        raise ValidationException(f"{e.sql()}: PROCTIME() takes no arguments")

    def now(row: Sequence[Any]) -> datetime.datetime:
        t = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        return t.replace(microsecond=t.microsecond // 1000 * 1000)

    return now, DataType("TIMESTAMP_LTZ", False, 3, time_attr="PROCTIME")


def _over_elsewhere(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    raise NotSupportedYet("OVER windows: ROW_NUMBER() OVER (...) runs only as Top-N, in a subquery filtered by "
                          "WHERE rn <= N in the enclosing query")


def _over_agg_elsewhere(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    raise NotSupportedYet(f"OVER aggregate {e.sql()} here (OVER aggregates run in a select list without GROUP BY)")


_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda x, y: x == y,
    "<>": lambda x, y: x != y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}


def _comparable(t1: DataType, t2: DataType) -> bool:
    return (t1.is_numeric and t2.is_numeric) or t1.root == t2.root or (t1.is_timestamp and t2.is_timestamp)


def _compare(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    if not _comparable(types[0], types[1]):
        raise ValidationException(f"{e.sql()}: cannot compare {types[0]} with {types[1]}")
    a, b = fns
    cmp = _CMP[e.name]

    def f(row: Sequence[Any]) -> Any:
        x, y = a(row), b(row)
        return None if x is None or y is None else cmp(x, y)

    return f, DataTypes.BOOLEAN(types[0].nullable or types[1].nullable)


def _need_boolean(e: Expression, types: list[DataType]) -> None:
    for a, t in zip(e.args, types, strict=True):
        if t.root != "BOOLEAN":
            raise ValidationException(f"{e.sql()}: operand {a.sql()} is {t}, expected BOOLEAN")


def _and(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    _need_boolean(e, types)
    a, b = fns

    def f(row: Sequence[Any]) -> Any:
        x = a(row)
        if x is False:
            return False
        y = b(row)
        if y is False:
            return False
        return None if x is None or y is None else True

    return f, DataTypes.BOOLEAN()


def _or(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    _need_boolean(e, types)
    a, b = fns

    def f(row: Sequence[Any]) -> Any:
        x = a(row)
        if x is True:
            return True
        y = b(row)
        if y is True:
            return True
        return None if x is None or y is None else False

    return f, DataTypes.BOOLEAN()


def _not(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    _need_boolean(e, types)
    (a,) = fns
    return (lambda row: None if (x := a(row)) is None else not x), DataTypes.BOOLEAN()


def _unary(fn: Callable[[Any], Any], result: Callable[[list[DataType]], DataType], kind: str = "any"):
    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        if kind == "string" and types[0].root != "STRING":
            raise ValidationException(f"{e.sql()}: argument {e.args[0].sql()} is {types[0]}, expected STRING")
        if kind == "numeric":
            _need_numeric(e, types)
        (a,) = fns
        return (lambda row: None if (x := a(row)) is None else fn(x)), result(types)

    return build


def _concat(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    for a, t in zip(e.args, types, strict=True):
        if t.root != "STRING":
            raise ValidationException(f"{e.sql()}: argument {a.sql()} is {t}, expected STRING (CAST it)")

    def f(row: Sequence[Any]) -> Any:
        parts = [g(row) for g in fns]
        return None if any(p is None for p in parts) else "".join(parts)

    return f, DataTypes.STRING()


def _coalesce(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    result = types[0]
    for a, t in zip(e.args[1:], types[1:], strict=True):
        if not _comparable(result, t):
            raise ValidationException(f"{e.sql()}: argument {a.sql()} is {t}, expected {result.base()}")
        if result.is_numeric and t.is_numeric:
            result = wider_numeric(result, t)

    def f(row: Sequence[Any]) -> Any:
        for g in fns:
            v = g(row)
            if v is not None:
                return v
        return None

    return f, replace(result.plain(), nullable=all(t.nullable for t in types))


def _case(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    pairs = [(fns[i], fns[i + 1]) for i in range(0, len(fns) - 1, 2)]
    default = fns[-1] if len(fns) % 2 else None
    value_types = [types[i + 1] for i in range(0, len(fns) - 1, 2)] + ([types[-1]] if default else [])
    for i in range(0, len(fns) - 1, 2):
        if types[i].root != "BOOLEAN":
            raise ValidationException(f"CASE: condition {e.args[i].sql()} is {types[i]}, expected BOOLEAN")
    result = value_types[0]
    for t in value_types[1:]:
        if not _comparable(result, t):
            raise ValidationException(f"CASE: branches have incompatible types {result.base()} and {t.base()}")
        if result.is_numeric:
            result = wider_numeric(result, t)

    def f(row: Sequence[Any]) -> Any:
        for cond, val in pairs:
            if cond(row) is True:
                return val(row)
        return default(row) if default is not None else None

    return f, replace(result.plain(), nullable=True)


def _is_null(negate: bool):
    def build(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
        (a,) = fns
        return (lambda row: (a(row) is None) != negate), DataTypes.BOOLEAN(False)

    return build


def _in(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    a, *rest = fns

    def f(row: Sequence[Any]) -> Any:
        x = a(row)
        if x is None:
            return None
        values = [g(row) for g in rest]
        if x in values:
            return True
        return None if None in values else False

    return f, DataTypes.BOOLEAN()


def _like(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    a, b = fns

    def f(row: Sequence[Any]) -> Any:
        x, p = a(row), b(row)
        if x is None or p is None:
            return None
        regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in p)
        return re.fullmatch(regex, x, re.DOTALL) is not None

    return f, DataTypes.BOOLEAN()


def cast_value(v: Any, source: DataType, target: DataType, safe: bool, what: str,
               zone: datetime.tzinfo | None = None) -> Any:
    """CAST as Flink's rules; `zone`: the session zone TIMESTAMP <-> TIMESTAMP_LTZ casts read (compile time)."""
    if v is None:
        return None
    try:
        root = target.root
        if root == "STRING":
            return sql_string(v, source)
        if target.is_integral:
            if isinstance(v, str):  # Java's parseInt/parseLong: out of the type's range is an error
                n = int(v.strip())
                if n != wrap_integer(n, root):
                    raise ValueError(v)
                return n
            if isinstance(v, decimal.Decimal):  # toward zero, then Java's narrowing
                return wrap_integer(int(v), root)
            if isinstance(v, float):  # Java's d2i/d2l: toward zero, saturating (NaN -> 0), then narrowing
                if math.isnan(v):
                    return 0
                wide = "BIGINT" if root == "BIGINT" else "INT"
                limit = (1 << (63 if wide == "BIGINT" else 31))
                return wrap_integer(max(-limit, min(limit - 1, int(v))), root)
            return wrap_integer(int(v), root)  # Java's narrowing of integers wraps (two's complement)
        if root in ("DOUBLE", "FLOAT"):
            return float(v.strip()) if isinstance(v, str) else float(v)
        if root == "DECIMAL":  # HALF_UP to the scale; too many integer digits is NULL, as Flink's cast
            if isinstance(v, bool):
                v = int(v)
            return decimals.fitter(target)(decimal.Decimal(v.strip()) if isinstance(v, str) else v)
        if root == "BOOLEAN":
            if isinstance(v, str):
                s = v.strip().lower()
                if s in ("true", "false"):
                    return s == "true"
                raise ValueError(v)
            return bool(v)
        if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            if isinstance(v, str):
                parsed = datetime.datetime.fromisoformat(v.strip())
                return session_zone.to_instant(parsed, zone) if root == "TIMESTAMP_LTZ" else parsed
            if isinstance(v, datetime.datetime):
                if source.root == "TIMESTAMP" and root == "TIMESTAMP_LTZ":  # the wall clock in the session zone
                    return session_zone.to_instant(v, zone)
                if source.root == "TIMESTAMP_LTZ" and root == "TIMESTAMP":
                    return session_zone.to_local(v, zone)
                return v
            if isinstance(v, datetime.date):  # DATE -> midnight
                midnight = datetime.datetime(v.year, v.month, v.day)
                return session_zone.to_instant(midnight, zone) if root == "TIMESTAMP_LTZ" else midnight
        if root == "DATE":
            if isinstance(v, str):
                return datetime.date.fromisoformat(v.strip())
            if isinstance(v, datetime.datetime):
                return (session_zone.to_local(v, zone) if source.root == "TIMESTAMP_LTZ" else v).date()
    except (ValueError, TypeError, OverflowError, decimal.InvalidOperation):
        if safe:
            return None
        raise ValueError(f"{what}: cannot cast {v!r} to {target.base()}") from None
    raise NotSupportedYet(f"CAST from {source.base()} to {target.base()}")


def _castable(source: DataType, target: DataType) -> bool:
    if target.root == "STRING" or source.root == target.root:
        return True
    if target.is_numeric or target.root == "BOOLEAN":
        return source.is_numeric or source.root in ("STRING", "BOOLEAN")
    if target.root in ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE"):
        return source.root in ("STRING", "TIMESTAMP", "TIMESTAMP_LTZ", "DATE")
    return False


def _cast(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    (a,) = fns
    source, target, safe = types[0], e.data_type, bool(e.value)
    assert target is not None
    if not _castable(source, target):
        raise NotSupportedYet(f"CAST from {source.base()} to {target.base()} ({e.sql()})")
    what = e.sql()
    zone = session_zone.current()
    return (lambda row: cast_value(a(row), source, target, safe, what, zone)), replace(
        target, nullable=source.nullable or safe, time_attr=None
    )


def _udf(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """A Python scalar function: its eval over the argument values (NULLs passed as None, as PyFlink)."""
    wrapper = e.value
    invoker = wrapper.invoker()
    method = invoker.func.eval

    def f(row: Sequence[Any]) -> Any:  # hot path: called per record
        return invoker.call(method, *[g(row) for g in fns])

    return f, wrapper.result_type


def _udaf_args(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """A Python aggregate function's arguments as one tuple (the Calc before the aggregation computes it)."""
    return (lambda row: tuple(g(row) for g in fns)), DataType("RAW", False)


def _get_field(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """Field `value` (an index) of a ROW value (Table.map's result columns)."""
    (a,) = fns
    i = e.value
    if isinstance(i, str):  # SQL's `row_column.field`: by name
        names = types[0].field_names() if types[0].root == "ROW" else []
        if i not in names:
            raise ValidationException(f"{e.args[0].sql()} is {types[0]}, not a ROW with a field {i!r}")
        i = names.index(i)
    if types[0].root != "ROW" or not 0 <= i < len(types[0].fields):
        raise ValidationException(f"{e.args[0].sql()} is {types[0]}, not a ROW with a field {i}")
    return (lambda row: None if (x := a(row)) is None else x[i]), types[0].fields[i][1].nullable_()


def _udtf_elsewhere(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    raise ValidationException(f"table function {e.sql()} used as a scalar; call it in FROM with LATERAL TABLE(..) "
                              "or Table.join_lateral")


def _unresolved(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    raise ValidationException(f"no function named {e.value!r}; register it with "
                              "t_env.create_temporary_function(name, f)")


_CALLS: dict[str, Callable[[Expression, list[Fn], list[DataType]], tuple[Fn, DataType]]] = {
    **{op: _arith for op in ("+", "-", "*", "/", "%")},
    **{op: _compare for op in _CMP},
    "and": _and,
    "or": _or,
    "not": _not,
    "neg": _unary(lambda x: -x, lambda ts: ts[0], "numeric"),
    "abs": _unary(abs, lambda ts: ts[0], "numeric"),
    "upper": _unary(str.upper, lambda ts: DataTypes.STRING(ts[0].nullable), "string"),
    "lower": _unary(str.lower, lambda ts: DataTypes.STRING(ts[0].nullable), "string"),
    "char_length": _unary(len, lambda ts: DataTypes.INT(ts[0].nullable), "string"),
    "concat": _concat,
    "coalesce": _coalesce,
    "case": _case,
    "is_null": _is_null(False),
    "is_not_null": _is_null(True),
    "in": _in,
    "like": _like,
    "cast": _cast,
    "to_timestamp_ltz": _to_timestamp_ltz,
    "row_number_over": _over_elsewhere,
    "over_agg": _over_agg_elsewhere,
    "proctime": _proctime,
    "udf": _udf,
    "udtf": _udtf_elsewhere,
    "udaf_args": _udaf_args,
    "get_field": _get_field,
    "named_call": _unresolved,
}
# Flink's built-in functions live in their own modules (one job each); they do not import this one
_CALLS.update(builtin_functions.CALLS)
_CALLS.update(temporal_functions.CALLS)
_CALLS.update(json_functions.CALLS)
