"""`strom.table.expressions`: PyFlink's expression DSL (col, lit, call-style helpers, operators and
the expression methods/properties), and the one expression tree the SQL translator also builds.

An `Expression` is a small immutable tree: `op` is "col", "lit", "call", "agg" or "alias". The planner
resolves it against a schema (strom.table.planner.scalar) into a Python function over a row.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from strom.table.types import DataType

AGGREGATES = ("count", "sum", "avg", "min", "max")


class Expression:
    __slots__ = ("op", "name", "args", "value", "data_type", "is_distinct")

    def __init__(
        self,
        op: str,
        name: str = "",
        args: tuple[Expression, ...] = (),
        value: Any = None,
        data_type: DataType | None = None,
        distinct: bool = False,
    ) -> None:
        self.op = op
        self.name = name
        self.args = args
        self.value = value
        self.data_type = data_type
        self.is_distinct = distinct

    # -- structure ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.sql()

    def sql(self) -> str:
        """A readable SQL-like form, used in plan digests (operator uids) and error messages."""
        if self.op == "col":
            return self.name
        if self.op == "lit" and isinstance(self.value, datetime.timedelta):
            return _interval_sql(self.value)
        if self.op == "lit" and isinstance(self.value, decimal.Decimal):
            return format(self.value, "f")
        if self.op == "lit":
            return repr(self.value) if not isinstance(self.value, str) else "'" + self.value + "'"
        if self.op == "alias":
            return f"{self.args[0].sql()} AS {self.name}"
        if self.name in ("udf", "udtf", "udaf") and self.value is not None:  # a Python function: its name
            return f"{self.value.name}({', '.join(a.sql() for a in self.args)})"
        if self.op == "call" and self.name == "get_field":
            field = self.value if isinstance(self.value, str) else f"f{self.value}"
            return f"{self.args[0].sql()}.{field}"
        if self.op == "call" and self.name == "named_call":
            return f"{self.value}({', '.join(a.sql() for a in self.args)})"
        if self.op == "agg":
            inner = ", ".join(a.sql() for a in self.args) or "*"
            return f"{self.name.upper()}({'DISTINCT ' if self.is_distinct else ''}{inner})"
        if self.op == "call" and self.name in _INFIX:
            return f"({self.args[0].sql()} {self.name.upper()} {self.args[1].sql()})"
        if self.op == "call" and self.name == "over_agg":
            n, flags, (kind, preceding) = self.value
            part = ", ".join(a.sql() for a in self.args[1 : 1 + n])
            order = ", ".join(f"{a.sql()}{' DESC' if d else ''}"
                              for a, (d, _) in zip(self.args[1 + n :], flags, strict=True))
            start = "UNBOUNDED" if preceding is None else (
                _interval_sql(preceding) if isinstance(preceding, datetime.timedelta) else str(preceding))
            return (f"{self.args[0].sql()} OVER (PARTITION BY {part} ORDER BY {order} {kind} BETWEEN {start} "
                    f"PRECEDING AND CURRENT ROW)")
        if self.op == "call" and self.name == "cast":
            return f"CAST({self.args[0].sql()} AS {self.data_type})"
        return f"{self.name.upper()}({', '.join(a.sql() for a in self.args)})"

    def contains_aggregate(self) -> bool:
        """A group aggregate inside (an OVER aggregate is not one: it keeps every row)."""
        if self.op == "call" and self.name == "over_agg":
            return False
        return self.op == "agg" or any(a.contains_aggregate() for a in self.args)

    # -- operators ---------------------------------------------------------------------------
    def _bin(self, name: str, other: Any, reverse: bool = False) -> Expression:
        o = _to_expr(other)
        return Expression("call", name, (o, self) if reverse else (self, o))

    def __add__(self, o: Any) -> Expression:
        return self._bin("+", o)

    def __radd__(self, o: Any) -> Expression:
        return self._bin("+", o, True)

    def __sub__(self, o: Any) -> Expression:
        return self._bin("-", o)

    def __rsub__(self, o: Any) -> Expression:
        return self._bin("-", o, True)

    def __mul__(self, o: Any) -> Expression:
        return self._bin("*", o)

    def __rmul__(self, o: Any) -> Expression:
        return self._bin("*", o, True)

    def __truediv__(self, o: Any) -> Expression:
        return self._bin("/", o)

    def __rtruediv__(self, o: Any) -> Expression:
        return self._bin("/", o, True)

    def __mod__(self, o: Any) -> Expression:
        return self._bin("%", o)

    def __eq__(self, o: Any) -> Expression:  # type: ignore[override]
        return self._bin("=", o)

    def __ne__(self, o: Any) -> Expression:  # type: ignore[override]
        return self._bin("<>", o)

    def __lt__(self, o: Any) -> Expression:
        return self._bin("<", o)

    def __le__(self, o: Any) -> Expression:
        return self._bin("<=", o)

    def __gt__(self, o: Any) -> Expression:
        return self._bin(">", o)

    def __ge__(self, o: Any) -> Expression:
        return self._bin(">=", o)

    def __and__(self, o: Any) -> Expression:
        return self._bin("and", o)

    def __or__(self, o: Any) -> Expression:
        return self._bin("or", o)

    def __invert__(self) -> Expression:
        return Expression("call", "not", (self,))

    def __neg__(self) -> Expression:
        return Expression("call", "neg", (self,))

    __hash__ = object.__hash__

    # -- PyFlink's expression methods ----------------------------------------------------------
    def alias(self, name: str, *extra_names: str) -> Expression:
        if extra_names and self.name in ("udtf", "udaf", "named_call"):  # a table/aggregate function's columns
            return Expression("alias", name, (self,), value=(name, *extra_names))
        if extra_names:
            from strom.table.errors import NotSupportedYet

            raise NotSupportedYet("alias with several names (composite types)")
        return Expression("alias", name, (self,))

    def cast(self, data_type: DataType) -> Expression:
        return Expression("call", "cast", (self,), data_type=data_type)

    def plus(self, o: Any) -> Expression:
        return self + o

    def minus(self, o: Any) -> Expression:
        return self - o

    def times(self, o: Any) -> Expression:
        return self * o

    def divided_by(self, o: Any) -> Expression:
        return self / o

    def mod(self, o: Any) -> Expression:
        return self % o

    def like(self, pattern: Any) -> Expression:
        return self._bin("like", pattern)

    def in_(self, *values: Any) -> Expression:
        return Expression("call", "in", (self, *(_to_expr(v) for v in values)))

    def between(self, lower: Any, upper: Any) -> Expression:
        return (self >= lower) & (self <= upper)

    @property
    def is_null(self) -> Expression:
        return Expression("call", "is_null", (self,))

    @property
    def is_not_null(self) -> Expression:
        return Expression("call", "is_not_null", (self,))

    @property
    def upper_case(self) -> Expression:
        return Expression("call", "upper", (self,))

    @property
    def lower_case(self) -> Expression:
        return Expression("call", "lower", (self,))

    @property
    def abs(self) -> Expression:
        return Expression("call", "abs", (self,))

    # -- intervals and windows: lit(10).minutes, col('w').start ------------------------------------
    def _interval(self, unit: datetime.timedelta, name: str) -> Expression:
        if self.op != "lit" or not isinstance(self.value, int) or isinstance(self.value, bool):
            from strom.table.errors import NotSupportedYet

            raise NotSupportedYet(f".{name} on {self.sql()} (intervals of integer literals: lit(10).{name})")
        return lit(self.value * unit)

    @property
    def millis(self) -> Expression:
        return self._interval(datetime.timedelta(milliseconds=1), "millis")

    milli = millis

    @property
    def seconds(self) -> Expression:
        return self._interval(datetime.timedelta(seconds=1), "seconds")

    second = seconds

    @property
    def minutes(self) -> Expression:
        return self._interval(datetime.timedelta(minutes=1), "minutes")

    minute = minutes

    @property
    def hours(self) -> Expression:
        return self._interval(datetime.timedelta(hours=1), "hours")

    hour = hours

    @property
    def days(self) -> Expression:
        return self._interval(datetime.timedelta(days=1), "days")

    day = days

    @property
    def asc(self) -> Expression:
        """Ascending order in Table.order_by (nulls first, as Flink)."""
        return Expression("call", "asc", (self,))

    @property
    def desc(self) -> Expression:
        """Descending order in Table.order_by (nulls last, as Flink)."""
        return Expression("call", "desc", (self,))

    @property
    def start(self) -> Expression:
        """`col('w').start`: the start of group window `w`."""
        return Expression("call", "window_start_of", (self,))

    @property
    def end(self) -> Expression:
        return Expression("call", "window_end_of", (self,))

    @property
    def rowtime(self) -> Expression:
        return Expression("call", "window_rowtime_of", (self,))

    @property
    def sum(self) -> Expression:
        return Expression("agg", "sum", (self,))

    @property
    def count(self) -> Expression:
        return Expression("agg", "count", (self,))

    @property
    def avg(self) -> Expression:
        return Expression("agg", "avg", (self,))

    @property
    def min(self) -> Expression:
        return Expression("agg", "min", (self,))

    @property
    def max(self) -> Expression:
        return Expression("agg", "max", (self,))

    @property
    def distinct(self) -> Expression:  # type: ignore[override]
        """`col('a').count.distinct`: PyFlink's distinct aggregate."""
        if self.op != "agg":
            from strom.table.errors import NotSupportedYet

            raise NotSupportedYet(".distinct on a non-aggregate expression (Table.distinct())")
        return Expression("agg", self.name, self.args, distinct=True)


def _interval_sql(value: datetime.timedelta) -> str:
    ms = value // datetime.timedelta(milliseconds=1)
    for unit, size in (("DAY", 86_400_000), ("HOUR", 3_600_000), ("MINUTE", 60_000), ("SECOND", 1000)):
        if ms % size == 0:
            return f"INTERVAL '{ms // size}' {unit}"
    return f"INTERVAL '{ms}' MILLISECOND"


_INFIX = {"+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "and", "or", "like"}


def _to_expr(v: Any) -> Expression:
    return v if isinstance(v, Expression) else lit(v)


def col(name: str) -> Expression:
    return Expression("col", name)


def lit(value: Any, data_type: DataType | None = None) -> Expression:
    return Expression("lit", value=value, data_type=data_type)


def concat(first: Any, *others: Any) -> Expression:
    return Expression("call", "concat", tuple(_to_expr(v) for v in (first, *others)))


def coalesce(*args: Any) -> Expression:
    return Expression("call", "coalesce", tuple(_to_expr(v) for v in args))


def if_then_else(condition: Expression, if_true: Any, if_false: Any) -> Expression:
    return Expression("call", "case", (condition, _to_expr(if_true), _to_expr(if_false)))


def and_(first: Expression, *others: Expression) -> Expression:
    out = first
    for o in others:
        out = out & o
    return out


def or_(first: Expression, *others: Expression) -> Expression:
    out = first
    for o in others:
        out = out | o
    return out


def call(f: Any, *args: Any) -> Expression:
    """`call(my_udf, col('a'))` or `call('registered_name', col('a'))` (resolved by the Table's environment)."""
    if isinstance(f, str):
        return Expression("call", "named_call", tuple(_to_expr(a) for a in args), value=f)
    if callable(f):
        result = f(*args)
        if isinstance(result, Expression):
            return result
    raise TypeError(f"call() takes a function made by udf/udtf/udaf or a registered function's name, got {f!r}")
