"""sqlglot trees of Flink's built-in functions -> Strom calls (name, arguments, a unit or option in
`value`); the planner's strom.table.planner.builtin_functions / temporal_functions / json_functions
give them Flink's semantics."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from strom.table.errors import NotSupportedYet
from strom.table.expressions import Expression
from strom.table.sql.function_syntax import PREFIX
from strom.table.sql.sql_text import DIALECT

Translate = Callable[[exp.Expression], Expression]

# sqlglot class -> (Strom name, argument keys in order)
_BY_CLASS: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.Substring: ("substring", ("this", "start", "length")),
    exp.Replace: ("replace", ("this", "expression", "replacement")),
    exp.RegexpReplace: ("regexp_replace", ("this", "expression", "replacement")),
    exp.Initcap: ("initcap", ("this",)),
    exp.StrPosition: ("locate", ("substr", "this", "position")),
    exp.Reverse: ("reverse", ("this",)),
    exp.Repeat: ("repeat", ("this", "times")),
    exp.Left: ("left", ("this", "expression")),
    exp.Right: ("right", ("this", "expression")),
    exp.MD5: ("md5", ("this",)),
    exp.Ascii: ("ascii", ("this",)),
    exp.Round: ("round", ("this", "decimals")),
    exp.Pow: ("power", ("this", "expression")),
    exp.Sqrt: ("sqrt", ("this",)),
    exp.Ln: ("ln", ("this",)),
    exp.Log: ("log", ("this", "expression")),
    exp.Exp: ("exp", ("this",)),
    exp.Sign: ("sign", ("this",)),
    exp.Trunc: ("truncate", ("this", "decimals")),
    exp.Rand: ("rand", ("this",)),
    exp.Nullif: ("nullif", ("this", "expression")),
    exp.NullSafeNEQ: ("is_distinct_from", ("this", "expression")),
    exp.NullSafeEQ: ("is_not_distinct_from", ("this", "expression")),
    exp.Year: ("year", ("this",)),
    exp.Quarter: ("quarter", ("this",)),
    exp.Month: ("month", ("this",)),
    exp.Week: ("week", ("this",)),
    exp.DayOfMonth: ("dayofmonth", ("this",)),
    exp.DayOfWeek: ("dayofweek", ("this",)),
    exp.DayOfYear: ("dayofyear", ("this",)),
    exp.Hour: ("hour", ("this",)),
    exp.Minute: ("minute", ("this",)),
    exp.Second: ("second", ("this",)),
    exp.CurrentDate: ("current_date", ()),
    exp.CurrentTimestamp: ("current_timestamp", ()),
    exp.Pi: ("pi", ()),
    exp.Sin: ("sin", ("this",)),
    exp.Cos: ("cos", ("this",)),
    exp.Tan: ("tan", ("this",)),
    exp.Asin: ("asin", ("this",)),
    exp.Acos: ("acos", ("this",)),
    exp.Atan: ("atan", ("this",)),
    exp.Atan2: ("atan2", ("this", "expression")),
    exp.Degrees: ("degrees", ("this",)),
    exp.Radians: ("radians", ("this",)),
    exp.MapKeys: ("map_keys", ("this",)),
}

# Flink functions sqlglot reads as plain calls (or that function_syntax renamed into plain calls)
ANONYMOUS = {"REGEXP", "SPLIT_INDEX", "SHA1", "SHA256", "RAND_INTEGER", "E", "NOW", "TO_TIMESTAMP", "JSON_VALUE",
             "JSON_QUERY", "JSON_EXISTS", "JSON_ARRAY", "DATE_FORMAT", "TO_DATE", "UNIX_TIMESTAMP", "FROM_UNIXTIME",
             "REGEXP_EXTRACT", "LOCALTIMESTAMP", "CURRENT_TIMESTAMP", "CURRENT_DATE", "LTRIM", "RTRIM", "CARDINALITY",
             "JSON_VALUE_EX", "JSON_QUERY_EX", "JSON_EXISTS_EX",
             "MAP_KEYS", "MAP_VALUES", "MAP_ENTRIES", "MAP_FROM_ARRAYS"}
# keywords Flink reads as niladic functions; sqlglot sees a column
NILADIC = {"LOCALTIMESTAMP": "localtimestamp", "CURRENT_TIMESTAMP": "current_timestamp",
           "CURRENT_DATE": "current_date"}


def _unit_name(node: exp.Expression) -> str:
    return (node.name if isinstance(node, (exp.Var, exp.Column)) else node.sql(DIALECT)).upper()


def _unwrapped(node: exp.Expression) -> exp.Expression:
    """Hive's reading wraps the argument of MONTH(ts) etc. in a conversion Flink does not have."""
    while isinstance(node, (exp.TsOrDsToDate, exp.TimeStrToTime)) and node.args.get("format") is None:
        node = node.this
    return node


def builtin_call(node: exp.Expression, expr: Translate) -> Expression | None:
    """The Strom call for a built-in function node, or None when the node is not one."""
    spec = _BY_CLASS.get(type(node))
    if spec is not None:
        name, keys = spec
        args = tuple(expr(_unwrapped(node.args[k])) for k in keys if node.args.get(k) is not None)
        return Expression("call", name, args)
    if isinstance(node, exp.Trim):
        position = str(node.args.get("position") or "BOTH").upper()
        name = {"LEADING": "trim_leading", "TRAILING": "trim_trailing"}.get(position, "trim")
        chars = node.args.get("expression")
        return Expression("call", name, (expr(node.this),) + ((expr(chars),) if chars is not None else ()))
    if isinstance(node, exp.Pad):
        args = (expr(node.this), expr(node.expression)) + (
            (expr(node.args["fill_pattern"]),) if node.args.get("fill_pattern") is not None else ())
        return Expression("call", "lpad" if node.args.get("is_left") else "rpad", args)
    if isinstance(node, exp.Array):
        return Expression("call", "array", tuple(expr(a) for a in node.expressions))
    if isinstance(node, exp.Bracket):
        target = node.this
        if isinstance(target, exp.Column) and target.name.upper() == "MAP" and not target.this.quoted and (
                not target.table):  # MAP['k1', v1, 'k2', v2]: Flink's map value constructor
            return Expression("call", "map", tuple(expr(a) for a in node.expressions))
        if len(node.expressions) != 1:
            raise NotSupportedYet(f"{node.sql(DIALECT)} (one index: array[i])")
        return Expression("call", "element_at", (expr(target), expr(node.expressions[0])))
    if isinstance(node, exp.ConcatWs):
        return Expression("call", "concat_ws", tuple(expr(a) for a in node.expressions))
    if isinstance(node, exp.SHA2):
        length = node.args.get("length")
        if length is not None and str(length.name) != "256":
            raise NotSupportedYet(f"SHA2 with length {length.name} (SHA256 / SHA2(s, 256))")
        return Expression("call", "sha256", (expr(node.this),))
    if isinstance(node, exp.Chr):
        return Expression("call", "chr", tuple(expr(a) for a in node.expressions))
    if isinstance(node, (exp.Greatest, exp.Least)):
        args = (expr(node.this), *(expr(a) for a in node.expressions))
        return Expression("call", "greatest" if isinstance(node, exp.Greatest) else "least", args)
    if isinstance(node, (exp.Floor, exp.Ceil)):
        name = "floor" if isinstance(node, exp.Floor) else "ceil"
        to = node.args.get("to")
        if node.args.get("decimals") is not None:
            raise NotSupportedYet(f"{name.upper()} with decimals")
        return Expression("call", name, (expr(node.this),), value=_unit_name(to) if to is not None else None)
    if isinstance(node, exp.Extract):
        return Expression("call", "extract", (expr(node.expression),), value=_unit_name(node.this))
    if isinstance(node, exp.JSONObject):
        args: list[Expression] = []
        for kv in node.expressions:
            if not isinstance(kv, exp.JSONKeyValue):
                raise NotSupportedYet(f"JSON_OBJECT argument {kv.sql(DIALECT)}")
            args += [expr(kv.this), expr(kv.expression)]
        absent = "ABSENT" in str(node.args.get("null_handling") or "").upper()
        return Expression("call", "json_object", tuple(args), value="ABSENT" if absent else "NULL")
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.JSON):
        kind = str(node.expression.this or "VALUE").upper()
        return Expression("call", "is_json", (expr(node.this),), value=kind)
    if isinstance(node, exp.Anonymous):
        return _anonymous(node, expr)
    return None


def _anonymous(node: exp.Anonymous, expr: Translate) -> Expression | None:
    name = node.name.upper()
    if name.startswith(PREFIX):
        name = name[len(PREFIX):]
    args = list(node.expressions)
    if name == "TIMESTAMPADD" or name == "TIMESTAMPDIFF":
        if len(args) != 3:
            raise NotSupportedYet(f"{name} with {len(args)} arguments (expected unit, .., ..)")
        return Expression("call", name.lower(), (expr(args[1]), expr(args[2])), value=_unit_name(args[0]))
    if name == "REGEXP_EXTRACT" and len(args) == 2:  # Flink's default group is 0: the whole match
        return Expression("call", "regexp_extract", (expr(args[0]), expr(args[1]), Expression("lit", value=0)))
    if name not in ANONYMOUS:
        return None
    return Expression("call", name.lower(), tuple(expr(a) for a in args))
