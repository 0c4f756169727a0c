"""sqlglot expression trees -> Strom's Expression (operators, functions, aggregates, OVER, intervals)."""

from __future__ import annotations

import datetime
import decimal
import re
from typing import Any

from sqlglot import exp

from strom.table.errors import NotSupportedYet, SqlParserException, ValidationException
from strom.table.expressions import Expression, coalesce, col, concat, lit
from strom.table.sql.builtin_calls import NILADIC, builtin_call
from strom.table.sql.flink_functions import FLINK_FUNCTIONS, UNKNOWN_FUNCTION
from strom.table.sql.sql_text import DIALECT, parse_one
from strom.table.sql.sql_types import data_type

_BINARY = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.IntDiv: "/",
    exp.Mod: "%",
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.And: "and",
    exp.Or: "or",
    exp.Like: "like",
}
_UNARY = {exp.Upper: "upper", exp.Lower: "lower", exp.Abs: "abs", exp.Length: "char_length"}
_AGGS = {exp.Count: "count", exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg"}


# Flink functions sqlglot reads as anonymous calls, translated by name (the planner checks their arguments)
FUNCTIONS = {"TO_TIMESTAMP_LTZ", "PROCTIME", "TUMBLE", "HOP", "TUMBLE_START", "TUMBLE_END", "TUMBLE_ROWTIME",
             "HOP_START", "HOP_END", "HOP_ROWTIME", "SESSWIN", "SESSION_START", "SESSION_END", "SESSION_ROWTIME"}
_UNITS = {"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


def interval(node: exp.Interval) -> datetime.timedelta:
    unit = str(node.args.get("unit").name if node.args.get("unit") is not None else "").upper()
    unit = unit[:-1] if unit.endswith("S") else unit
    if unit not in _UNITS or not isinstance(node.this, exp.Literal):
        raise NotSupportedYet(f"interval {node.sql(DIALECT)} (day-time intervals: INTERVAL 'n' SECOND/MINUTE/HOUR/DAY)")
    try:
        amount = float(node.this.this)
    except ValueError:
        raise ValidationException(f"interval {node.sql(DIALECT)}: {node.this.this!r} is not a number") from None
    return datetime.timedelta(seconds=amount * _UNITS[unit])


def _frame(spec: exp.Expression | None) -> tuple[str, Any]:
    """An OVER frame as (ROWS | RANGE, preceding): an int row count, a timedelta, or None (UNBOUNDED).
    Without a frame, Flink's default: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW."""
    if spec is None:
        return ("RANGE", None)
    kind = str(spec.args.get("kind") or "").upper()
    end = spec.args.get("end")
    if str(end).upper() != "CURRENT ROW" or str(spec.args.get("start_side") or "").upper() != "PRECEDING":
        raise NotSupportedYet(f"OVER frame {spec.sql(DIALECT)} (only ... PRECEDING AND CURRENT ROW)")
    start = spec.args.get("start")
    if isinstance(start, str) or str(start).upper() == "UNBOUNDED":
        return (kind, None)
    if kind == "ROWS" and isinstance(start, exp.Literal) and not start.is_string:
        return (kind, int(start.this))
    if kind == "RANGE" and isinstance(start, exp.Interval):
        return (kind, interval(start))
    raise NotSupportedYet(f"OVER frame {spec.sql(DIALECT)} (ROWS n PRECEDING or RANGE INTERVAL .. PRECEDING)")


class Translator:
    def __init__(self, qualifiers: set[str], functions: dict[str, Any] | None = None,
                 qualified: bool = False) -> None:
        self.qualifiers = qualifiers
        self.functions = functions or {}
        self.qualified = qualified  # in a join: `q.col` stays qualified for the planner to resolve

    def expr(self, node: exp.Expression) -> Expression:
        if isinstance(node, exp.Alias):
            return self.expr(node.this).alias(node.alias)
        if isinstance(node, exp.Star):
            return col("*")
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):  # `q.*` in a join: q's columns only, expanded by the planner
                return col(f"{node.table}.*" if node.table and self.qualified else "*")
            table = node.table
            if not table and not node.this.quoted and node.name.upper() in NILADIC:  # LOCALTIMESTAMP etc.
                return Expression("call", NILADIC[node.name.upper()])
            if table and table not in self.qualifiers and not self.qualified:
                # `bid.price`: field `price` of the ROW column `bid` (no table is called `bid` here)
                return Expression("call", "get_field", (col(table),), node.name)
            if table and table not in self.qualifiers:
                raise ValidationException(f"unknown table {table!r} in column reference {node.sql(DIALECT)}")
            return col(f"{table}.{node.name}" if table and self.qualified else node.name)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return lit(node.this)
            text = node.this
            if re.fullmatch(r"-?\d+", text):
                return lit(int(text))
            # an exact numeric literal (1.5) is DECIMAL in Flink; only an exponent (1.5E0) makes it DOUBLE
            return lit(decimal.Decimal(text)) if re.fullmatch(r"-?\d*\.\d*", text) else lit(float(text))
        if isinstance(node, exp.Boolean):
            return lit(bool(node.this))
        if isinstance(node, exp.Null):
            return lit(None)
        if isinstance(node, exp.Paren):
            return self.expr(node.this)
        if isinstance(node, exp.Neg):
            inner = self.expr(node.this)
            if inner.op == "lit" and isinstance(inner.value, (int, float, decimal.Decimal)) and not isinstance(
                    inner.value, bool):
                return lit(-inner.value)
            return -inner
        if isinstance(node, exp.Not):
            if isinstance(node.this, exp.Is) and isinstance(node.this.expression, exp.Null):
                return self.expr(node.this.this).is_not_null
            return ~self.expr(node.this)
        if isinstance(node, exp.Is):
            if isinstance(node.expression, exp.Null):
                return self.expr(node.this).is_null
            if isinstance(node.expression, exp.JSON):
                return builtin_call(node, self.expr)  # type: ignore[return-value]
            raise NotSupportedYet(f"IS {node.expression.sql(DIALECT)}")
        for cls, name in _BINARY.items():
            if type(node) is cls:
                return Expression("call", name, (self.expr(node.this), self.expr(node.expression)))
        for cls, name in _UNARY.items():
            if type(node) is cls:
                return Expression("call", name, (self.expr(node.this),))
        if isinstance(node, exp.DPipe):
            return concat(self.expr(node.this), self.expr(node.expression))
        if isinstance(node, exp.Concat) and not isinstance(node, exp.ConcatWs):
            return concat(*(self.expr(a) for a in node.expressions))
        if isinstance(node, exp.Coalesce):
            return coalesce(self.expr(node.this), *(self.expr(a) for a in node.expressions))
        if isinstance(node, (exp.Cast, exp.TryCast)):
            target = data_type(node.args["to"], node.sql(DIALECT))
            safe = isinstance(node, exp.TryCast) and bool(node.args.get("safe"))
            return Expression("call", "cast", (self.expr(node.this),), value=safe, data_type=target)
        if isinstance(node, exp.Case):
            subject = self.expr(node.this) if node.this is not None else None
            args: list[Expression] = []
            for branch in node.args.get("ifs") or []:
                cond = self.expr(branch.this)
                args += [cond if subject is None else (subject == cond), self.expr(branch.args["true"])]
            default = node.args.get("default")
            if default is not None:
                args.append(self.expr(default))
            return Expression("call", "case", tuple(args))
        if isinstance(node, exp.If):
            return Expression("call", "case", (self.expr(node.this), self.expr(node.args["true"]),
                                               self.expr(node.args.get("false") or exp.Null())))
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                raise NotSupportedYet("IN (subquery)")
            return self.expr(node.this).in_(*(self.expr(a) for a in node.expressions))
        if isinstance(node, exp.Between):
            return self.expr(node.this).between(self.expr(node.args["low"]), self.expr(node.args["high"]))
        for cls, name in _AGGS.items():
            if type(node) is cls:
                return self._agg(node, name)
        if isinstance(node, exp.Filter):
            return self._filtered_agg(node)
        if isinstance(node, exp.Interval):
            return lit(interval(node))
        udf = self._user_function(node)
        if udf is not None:
            return udf
        builtin = builtin_call(node, self.expr)
        if builtin is not None:
            return builtin
        if isinstance(node, exp.Anonymous) and node.name.upper() in FUNCTIONS:
            name = "session" if node.name.upper() == "SESSWIN" else node.name.lower()  # see flink_syntax
            return Expression("call", name, tuple(self.expr(a) for a in node.expressions))
        if isinstance(node, exp.Window):
            return self._over(node)
        if isinstance(node, (exp.Subquery, exp.Exists)):
            raise NotSupportedYet("subqueries in expressions")
        if isinstance(node, exp.Anonymous):
            if node.name.upper() not in FLINK_FUNCTIONS:  # refused by the planner, which knows the argument types
                return Expression("call", UNKNOWN_FUNCTION, tuple(self.expr(a) for a in node.expressions),
                                  value=node.name)
            raise NotSupportedYet(f"function {node.name.upper()}")
        if isinstance(node, exp.Func):
            raise NotSupportedYet(f"function {node.sql_name()}")
        raise NotSupportedYet(f"expression {node.sql(DIALECT)}")

    def _user_function(self, node: exp.Expression) -> Expression | None:
        """A registered Python function called by name; it shadows a built-in of the same name, as a
        temporary system function does in Flink."""
        if not self.functions or not isinstance(node, exp.Func):
            return None
        name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
        f = self.functions.get(name.lower())
        if f is None:
            return None
        if isinstance(node, exp.Anonymous):
            args = list(node.expressions)
        else:  # a name sqlglot knows as a built-in: its operands in order
            args = [v for k, v in node.args.items() if isinstance(v, exp.Expression)]
            args += [a for v in node.args.values() if isinstance(v, list) for a in v if isinstance(a, exp.Expression)]
        return f(*(self.expr(a) for a in args))

    def _over(self, node: exp.Window) -> Expression:
        """ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..): a `row_number_over` call whose args are the
        partition expressions then the order expressions; value = (partition count, ((desc, nulls_first), ..)).
        The planner accepts it only as Top-N or deduplication (a rank filter in the enclosing query)."""
        partition = [self.expr(e) for e in node.args.get("partition_by") or []]
        order = node.args.get("order")
        ordered = list(order.expressions) if order is not None else []
        keys = [self.expr(o.this) for o in ordered]
        flags = tuple((bool(o.args.get("desc")), bool(o.args.get("nulls_first"))) for o in ordered)
        agg = next((name for cls, name in _AGGS.items() if type(node.this) is cls), None)
        if agg is not None:
            frame = _frame(node.args.get("spec"))
            call = self._agg(node.this, agg)
            if call.is_distinct:
                raise NotSupportedYet(f"DISTINCT in an OVER aggregate ({node.sql(DIALECT)})")
            return Expression("call", "over_agg", (call, *partition, *keys), value=(len(partition), flags, frame))
        ranking = {exp.RowNumber: "row_number_over", exp.Rank: "rank_over", exp.DenseRank: "dense_rank_over"}
        name = ranking.get(type(node.this))
        if name is None:
            raise NotSupportedYet(f"OVER windows ({node.this.sql(DIALECT)} OVER ...; ROW_NUMBER(), RANK() and "
                                  "DENSE_RANK() run as Top-N)")
        if node.args.get("spec") is not None:
            raise NotSupportedYet(f"{node.this.sql(DIALECT)} OVER with a frame (ROWS/RANGE BETWEEN)")
        return Expression("call", name, (*partition, *keys), value=(len(partition), flags))

    def _filtered_agg(self, node: exp.Filter) -> Expression:
        """AGG(x) FILTER (WHERE c) as AGG(CASE WHEN c THEN x END): every aggregate here ignores NULL inputs,
        so a row failing the filter counts as absent (COUNT(*) counts CASE WHEN c THEN 1 END)."""
        agg = node.this
        name = next((n for cls, n in _AGGS.items() if type(agg) is cls), None)
        if name is None:
            raise NotSupportedYet(f"FILTER on {agg.sql(DIALECT)} (only COUNT, SUM, MIN, MAX, AVG)")
        call = self._agg(agg, name)
        cond = self.expr(node.expression.this)
        value = call.args[0] if call.args else lit(1)
        return Expression("agg", name, (Expression("call", "case", (cond, value)),), distinct=call.is_distinct)

    def _agg(self, node: exp.Expression, name: str) -> Expression:
        arg = node.this
        distinct = False
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise NotSupportedYet(f"{name.upper()}(DISTINCT over several columns)")
            distinct, arg = True, arg.expressions[0]
        if node.expressions:
            raise NotSupportedYet(f"{name.upper()} with several arguments")
        if arg is None or isinstance(arg, exp.Star):
            if name != "count":
                raise ValidationException(f"{name.upper()}(*) is not valid; only COUNT(*)")
            return Expression("agg", "count", ())
        return Expression("agg", name, (self.expr(arg),), distinct=distinct)


def parse_expression(text: str) -> Expression:
    """One SQL expression (a computed column, a watermark, Schema.column_by_expression)."""
    tree = parse_one(f"SELECT {text}")
    assert isinstance(tree, exp.Select)
    if len(tree.expressions) != 1 or tree.args.get("from_") or tree.args.get("from"):
        raise SqlParserException(f"expected one SQL expression, got {text!r}")
    return Translator(set()).expr(tree.expressions[0])

