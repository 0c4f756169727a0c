"""Scalar expressions of a plan as Spark columns, with Flink's results.

An expression becomes Spark SQL text when every part of it has a Spark built-in that gives Flink's
result, written so that it does (the Spark session runs with ANSI mode off, so INT arithmetic wraps
as Java's does):
  * INT / INT truncates toward zero and stays integral (Spark's `/` is a DOUBLE division): `a div b`,
    and a zero divisor fails the query as Flink's ArithmeticException does (Spark would give NULL);
  * every arithmetic result is CAST to the type Strom's planner gave it (INT + INT is INT);
  * ROUND is HALF_UP through the value's decimal form in both engines; its digits must be a literal;
  * CAST only where both engines agree (numbers to numbers, integers to STRING);
  * LIKE only with a pattern free of backslashes (Spark reads `\\` as an escape, Flink does not).
Anything else (DATE_FORMAT's patterns, string functions' NULL and index rules, CASTs of text, Python
UDFs, ...) runs as ONE Spark Python UDF over the expression's input columns that evaluates Strom's own
compiled expression (strom.table.planner.scalar): slower, but Flink's result by construction.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from strom.batch.sql.spark_types import Unsupported, spark_type, sql_type
from strom.table.expressions import Expression
from strom.table.planner import session_zone
from strom.table.planner.scalar import compile_scalar
from strom.table.types import DataType

Columns = Sequence[tuple[str, DataType]]

_CMP = {"=": "=", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_SIMPLE_ROOTS = {"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "BOOLEAN"}


class _NotNative(Exception):  # noqa: N818 - control flow: use the Python UDF for this expression
    pass


def column(e: Expression, columns: Columns) -> Any:
    """`e` over a DataFrame whose columns are c0..c{n-1} (typed as `columns`), as a pyspark Column."""
    from pyspark.sql import functions as F  # noqa: N812 - pyspark's convention

    _, t = compile_scalar(e, columns)  # validates, and the type every translation is cast to
    random = _random_call(e)
    if random is not None:  # one seeded sequence per Strom task; Spark would restart it in every partition
        raise Unsupported(f"{random.upper()}: its sequence must not be split across Spark partitions")
    pandas = _pandas_udf(e)
    if pandas is not None:  # its bundles (python.fn-execution.arrow.batch.size) are Strom's runtime's
        raise Unsupported(f"pandas UDF {pandas}")
    try:
        return F.expr(native_sql(e, columns))
    except _NotNative:
        return python_udf_column(e, columns, t)


def native_sql(e: Expression, columns: Columns) -> str:
    """Spark SQL text for `e`, or _NotNative."""
    if e.op == "alias":
        return native_sql(e.args[0], columns)
    _, t = compile_scalar(e, columns)
    if e.op == "col":
        names = [n for n, _ in columns]
        return f"c{names.index(e.name)}"
    if e.op == "lit":
        return literal_sql(e.value, t)
    if e.op != "call":
        raise _NotNative
    args = [compile_scalar(a, columns)[1] for a in e.args]
    if any(a.root not in _SIMPLE_ROOTS for a in args) or t.root not in _SIMPLE_ROOTS:
        raise _NotNative  # temporal and decimal arithmetic keep Strom's own rules (UDF)
    sub = [native_sql(a, columns) for a in e.args]
    name = e.name
    if name in ("+", "-", "*") and t.is_numeric:
        return f"CAST(({sub[0]} {name} {sub[1]}) AS {sql_type(t)})"
    if name in ("/", "%") and t.is_integral:
        op = "div" if name == "/" else "%"
        return (f"CAST(CASE WHEN ({sub[1]}) = 0 THEN raise_error('{_sql_text(e.sql())}: division by zero') "
                f"ELSE ({sub[0]}) {op} ({sub[1]}) END AS {sql_type(t)})")
    if name in _CMP:
        if args[0].root != args[1].root and not (args[0].is_numeric and args[1].is_numeric):
            raise _NotNative
        return f"({sub[0]} {_CMP[name]} {sub[1]})"
    if name in ("and", "or"):
        return f"({sub[0]} {name.upper()} {sub[1]})"
    if name == "not":
        return f"(NOT {sub[0]})"
    if name == "neg":
        return f"CAST((- {sub[0]}) AS {sql_type(t)})"
    if name == "abs":
        return f"CAST(abs({sub[0]}) AS {sql_type(t)})"
    if name in ("upper", "lower", "char_length"):
        return f"{name}({sub[0]})"
    if name == "concat":
        return f"concat({', '.join(sub)})"
    if name == "coalesce":
        return f"CAST(coalesce({', '.join(sub)}) AS {sql_type(t)})"
    if name == "case":
        pairs = " ".join(f"WHEN {sub[i]} THEN {sub[i + 1]}" for i in range(0, len(sub) - 1, 2))
        default = f" ELSE {sub[-1]}" if len(sub) % 2 else ""
        return f"CAST(CASE {pairs}{default} END AS {sql_type(t)})"
    if name in ("is_null", "is_not_null"):
        return f"({sub[0]} IS {'NOT ' if name == 'is_not_null' else ''}NULL)"
    if name == "in":
        if any(a.root != args[0].root and not (a.is_numeric and args[0].is_numeric) for a in args[1:]):
            raise _NotNative
        return f"({sub[0]} IN ({', '.join(sub[1:])}))"
    if name == "like" and len(e.args) == 2 and e.args[1].op == "lit" and "\\" not in str(e.args[1].value):
        return f"({sub[0]} LIKE {sub[1]})"
    if name == "round" and len(e.args) in (1, 2) and (len(e.args) == 1 or e.args[1].op == "lit"):
        return f"CAST(round({', '.join(sub)}) AS {sql_type(t)})"
    if name == "cast" and e.data_type is not None and not e.value:
        src = args[0]
        if (src.is_numeric and t.is_numeric) or (src.is_integral and t.root == "STRING"):
            return f"CAST({sub[0]} AS {sql_type(t)})"
    raise _NotNative


def literal_sql(v: Any, t: DataType) -> str:
    if v is None:
        return f"CAST(NULL AS {sql_type(t)})"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return f"CAST({v} AS {sql_type(t)})"
    if isinstance(v, float):
        return f"CAST('{v!r}' AS {sql_type(t)})"  # 'inf' and 'nan' parse too
    if isinstance(v, str) and t.root in ("STRING", "VARCHAR", "CHAR"):
        return f"'{_sql_text(v)}'"
    raise _NotNative  # dates, intervals, decimals: the UDF keeps Strom's literal rules


def _sql_text(s: str) -> str:
    """A string as the inside of a Spark SQL '..' literal (backslash is Spark's escape character)."""
    return s.replace("\\", "\\\\").replace("'", "\\'")


class _RowEvaluator:
    """Strom's compiled expression, built on first use in each Python worker (the plan pickles, closures of
    compiled UDFs need not)."""

    def __init__(self, e: Expression, columns: Columns, used: list[int]) -> None:
        self.e, self.columns, self.used, self.fn = e, list(columns), used, None
        self.width = len(columns)
        # the session's table.local-time-zone, set in the planning process: compiled functions capture the
        # zone, and a Spark Python worker starts with the process default
        self.zone = session_zone._zone_name

    def __call__(self, *values: Any) -> Any:
        if self.fn is None:
            session_zone.set_zone(self.zone)
            self.fn = compile_scalar(self.e, self.columns)[0]
        row: list[Any] = [None] * self.width
        for i, v in zip(self.used, values, strict=True):
            row[i] = v
        return self.fn(row)

    def __getstate__(self) -> dict[str, Any]:
        return {"e": self.e, "columns": self.columns, "used": self.used, "width": self.width, "zone": self.zone}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.fn = None


def python_udf_column(e: Expression, columns: Columns, t: DataType) -> Any:
    """`e` as a Spark Python UDF over the columns it reads (Strom's evaluation: Flink's semantics)."""
    from pyspark.sql import functions as F  # noqa: N812

    names = [n for n, _ in columns]
    used = sorted({names.index(n) for n in referenced(e) if n in names})
    evaluator = _RowEvaluator(e, columns, used)
    result_type = spark_type(t)
    with warnings.catch_warnings():  # pyspark warns that a callable object has no type hints to read
        warnings.simplefilter("ignore")
        if not used:  # a constant or non-deterministic expression with no input: one argument to bind the row
            return F.udf(lambda _: evaluator(), result_type)(F.lit(0))
        return F.udf(evaluator, result_type)(*[F.col(f"c{i}") for i in used])


def referenced(e: Expression) -> set[str]:
    if e.op == "col":
        return {e.name}
    out: set[str] = set()
    for a in e.args:
        out |= referenced(a)
    return out


def _pandas_udf(e: Expression) -> str | None:
    if e.name == "udf" and getattr(e.value, "func_type", "") == "pandas":
        return str(e.value.name)
    return next((n for n in (_pandas_udf(a) for a in e.args) if n is not None), None)


_RANDOM_FUNCTIONS = frozenset({"rand", "rand_integer", "uuid"})


def _random_call(e: Expression) -> str | None:
    if e.op == "call" and str(e.name).lower() in _RANDOM_FUNCTIONS:
        return str(e.name)
    return next((n for n in (_random_call(a) for a in e.args) if n is not None), None)
