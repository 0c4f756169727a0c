"""Flink SQL -> statements and plans, with sqlglot as the parser.

Why sqlglot: a well-kept, pure-Python SQL parser with dialects; Flink SQL's surface (backquoted
identifiers, `WITH ('k' = 'v')` table options, `||`, CAST/TRY_CAST) is what sqlglot's Hive dialect
reads, so we parse with `read="hive"` and map its tree onto Strom's plan. Where Flink differs, this
module decides: the statements sqlglot does not know (SHOW TABLES, EXPLAIN, WATERMARK FOR, ...) are
recognized first by their leading keywords, and anything not translated here is refused with a one-line
"not supported yet: <clause>" error rather than run differently from Flink.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from strom.table.errors import NotSupportedYet, SqlParserException, ValidationException
from strom.table.expressions import Expression, coalesce, col, concat, lit
from strom.table.sql.flink_syntax import WINDOW_TVFS, extract_watermark, extract_window_tvfs
from strom.table.types import DataType, DataTypes

DIALECT = "hive"


# -- statements ------------------------------------------------------------------------------------
@dataclass
class CreateTable:
    name: str
    columns: list[tuple[str, DataType]]  # physical columns (what the connector reads)
    options: dict[str, str]
    if_not_exists: bool
    computed: list[tuple[str, Expression]] = field(default_factory=list)  # `name AS expr`
    order: list[str] = field(default_factory=list)  # every column in declared order
    watermark: tuple[str, Expression] | None = None  # WATERMARK FOR column AS expression


@dataclass
class CreateView:
    name: str
    query: exp.Expression
    if_not_exists: bool


@dataclass
class Drop:
    name: str
    if_exists: bool
    view: bool


@dataclass
class Insert:
    target: str
    query: exp.Expression


@dataclass
class Query:
    query: exp.Expression


@dataclass
class Show:
    what: str  # TABLES or VIEWS


@dataclass
class Describe:
    name: str


@dataclass
class Explain:
    query: exp.Expression


@dataclass
class CreateFunction:
    """`CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] name AS 'module.attr' LANGUAGE PYTHON`."""

    name: str
    path: str  # the Python object: a function made by udf/udtf/udaf, as PyFlink imports it
    if_not_exists: bool


@dataclass
class DropFunction:
    name: str
    if_exists: bool


Statement = (CreateTable | CreateView | Drop | Insert | Query | Show | Describe | Explain | CreateFunction
             | DropFunction)

_UNSUPPORTED_LEADS = [
    (r"SHOW\s+(FUNCTIONS|USER\s+FUNCTIONS)", "SHOW FUNCTIONS"),
    (r"SHOW\s+CATALOGS", "SHOW CATALOGS"),
    (r"SHOW\s+DATABASES", "SHOW DATABASES"),
    (r"SHOW\s+\w+", "SHOW (only SHOW TABLES and SHOW VIEWS)"),
    (r"SET\b", "SET"),
    (r"RESET\b", "RESET"),
    (r"USE\b", "USE"),
    (r"BEGIN\s+STATEMENT\s+SET", "BEGIN STATEMENT SET"),
    (r"EXECUTE\b", "EXECUTE STATEMENT SET"),
    (r"ALTER\b", "ALTER"),
    (r"CREATE\s+CATALOG", "CREATE CATALOG"),
    (r"CREATE\s+DATABASE", "CREATE DATABASE"),
    (r"LOAD\s+MODULE|UNLOAD\s+MODULE", "modules"),
    (r"INSERT\s+OVERWRITE", "INSERT OVERWRITE"),
]


def _strip(sql: str) -> str:
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text


def parse_statement(sql: str) -> Statement:
    text = _strip(sql)
    if not text:
        raise SqlParserException("empty SQL statement")
    m = re.match(r"SHOW\s+(TABLES|VIEWS)$", text, re.IGNORECASE)
    if m:
        return Show(m.group(1).upper())
    m = re.match(r"EXPLAIN\s+(PLAN\s+FOR\s+)?(.*)$", text, re.IGNORECASE | re.DOTALL)
    if m:
        inner = parse_statement(m.group(2))
        if not isinstance(inner, Query):
            raise NotSupportedYet("EXPLAIN of statements other than queries")
        return Explain(inner.query)
    function = _function_statement(text)
    if function is not None:
        return function
    for pattern, feature in _UNSUPPORTED_LEADS:
        if re.match(pattern, text, re.IGNORECASE):
            raise NotSupportedYet(feature)
    text, watermark = extract_watermark(text, parse_expression)
    text = extract_window_tvfs(text, parse_expression)
    tree = _parse(text)
    if isinstance(tree, exp.Create):
        return _create(tree, watermark)
    if isinstance(tree, exp.Insert):
        if tree.args.get("overwrite"):
            raise NotSupportedYet("INSERT OVERWRITE")
        target = tree.this
        if isinstance(target, exp.Schema):
            raise NotSupportedYet("INSERT INTO with a column list")
        return Insert(_table_name(target), tree.expression)
    if isinstance(tree, exp.Drop):
        kind = str(tree.args.get("kind") or "").upper()
        if kind not in ("TABLE", "VIEW"):
            raise NotSupportedYet(f"DROP {kind}")
        tables = tree.args.get("tables") or [tree.this]
        return Drop(_table_name(tables[0]), bool(tree.args.get("exists")), kind == "VIEW")
    if isinstance(tree, exp.Describe):
        return Describe(_table_name(tree.this))
    if isinstance(tree, (exp.Select, exp.Union, exp.Subquery, exp.Values)):
        return Query(tree)
    if isinstance(tree, exp.Command):
        raise NotSupportedYet(f"{tree.name.upper()} statements")
    raise NotSupportedYet(f"{type(tree).__name__.upper()} statements")


_CREATE_FUNCTION = re.compile(
    r"CREATE\s+(?:TEMPORARY\s+)?(?:SYSTEM\s+)?FUNCTION\s+(IF\s+NOT\s+EXISTS\s+)?([\w.`]+)\s+AS\s+'([^']*)'"
    r"(?:\s+LANGUAGE\s+(\w+))?$", re.IGNORECASE | re.DOTALL)
_DROP_FUNCTION = re.compile(r"DROP\s+(?:TEMPORARY\s+)?(?:SYSTEM\s+)?FUNCTION\s+(IF\s+EXISTS\s+)?([\w.`]+)$",
                            re.IGNORECASE)


def _function_statement(text: str) -> CreateFunction | DropFunction | None:
    m = _DROP_FUNCTION.match(text)
    if m:
        return DropFunction(m.group(2).replace("`", ""), bool(m.group(1)))
    if not re.match(r"CREATE\s+(TEMPORARY\s+)?(SYSTEM\s+)?FUNCTION\b", text, re.IGNORECASE):
        return None
    m = _CREATE_FUNCTION.match(text)
    if m is None:
        raise SqlParserException("CREATE FUNCTION: expected CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] "
                                 "name AS 'module.function' LANGUAGE PYTHON")
    language = (m.group(4) or "JAVA").upper()
    if language != "PYTHON":
        raise NotSupportedYet(f"CREATE FUNCTION .. LANGUAGE {language} (only LANGUAGE PYTHON; Flink's default is "
                              "JAVA)")
    return CreateFunction(m.group(2).replace("`", ""), m.group(3), bool(m.group(1)))


def parse_query(sql: str) -> exp.Expression:
    stmt = parse_statement(sql)
    if not isinstance(stmt, Query):
        raise ValidationException(f"sql_query expects a SELECT query, got a {type(stmt).__name__} statement")
    return stmt.query


def _parse(text: str) -> exp.Expression:
    try:
        trees = sqlglot.parse(text, read=DIALECT)
    except sqlglot.errors.ParseError as e:
        err = e.errors[0] if e.errors else {}
        raise SqlParserException(
            f"SQL parse error at line {err.get('line', '?')}, column {err.get('col', '?')}: "
            f"{err.get('description', str(e)).splitlines()[0]} (near {err.get('highlight', '')!r})"
        ) from None
    except sqlglot.errors.TokenError as e:
        raise SqlParserException(f"SQL parse error: {str(e).splitlines()[0]}") from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise NotSupportedYet("several statements in one execute_sql call (run them one by one)")
    return trees[0]


def _table_name(node: Any) -> str:
    if isinstance(node, exp.Table):
        return ".".join(p.name for p in node.parts)
    raise NotSupportedYet(f"table reference {node.sql(DIALECT)}")


def parse_expression(text: str) -> Expression:
    """One SQL expression (a computed column, a watermark, Schema.column_by_expression)."""
    tree = _parse(f"SELECT {text}")
    assert isinstance(tree, exp.Select)
    if len(tree.expressions) != 1 or tree.args.get("from_") or tree.args.get("from"):
        raise SqlParserException(f"expected one SQL expression, got {text!r}")
    return _Translator(set()).expr(tree.expressions[0])


def _create(tree: exp.Create, watermark: tuple[str, Expression] | None = None) -> Statement:
    kind = str(tree.args.get("kind") or "").upper()
    if_not_exists = bool(tree.args.get("exists"))
    if tree.args.get("replace"):
        raise NotSupportedYet("CREATE OR REPLACE")
    if kind == "VIEW":
        return CreateView(_table_name(tree.this), tree.expression, if_not_exists)
    if kind != "TABLE":
        raise NotSupportedYet(f"CREATE {kind}")
    if tree.expression is not None:
        raise NotSupportedYet("CREATE TABLE ... AS SELECT")
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise NotSupportedYet("CREATE TABLE without a column list (LIKE)")
    name = _table_name(schema.this)
    columns: list[tuple[str, DataType]] = []
    computed: list[tuple[str, Expression]] = []
    order: list[str] = []
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            order.append(item.name)
            constraints = item.args.get("constraints") or []
            if item.args.get("kind") is None:
                kinds = [c.kind for c in constraints]
                if len(kinds) != 1 or not isinstance(kinds[0], exp.ComputedColumnConstraint):
                    raise NotSupportedYet(f"column {item.name!r} without a type")
                computed.append((item.name, _Translator(set()).expr(kinds[0].this)))
                continue
            t = data_type(item.args["kind"], f"column {item.name!r}")
            for c in constraints:
                if isinstance(c.kind, exp.NotNullColumnConstraint) and not c.kind.args.get("allow_null"):
                    t = t.not_null()
                else:
                    raise NotSupportedYet(f"column constraint {c.sql(DIALECT)} on {item.name!r}")
            columns.append((item.name, t))
        elif isinstance(item, exp.PrimaryKey):
            raise NotSupportedYet("PRIMARY KEY (upsert sinks)")
        else:
            raise NotSupportedYet(f"table element {item.sql(DIALECT)}")
    options: dict[str, str] = {}
    properties = tree.args.get("properties")
    for prop in properties.expressions if properties is not None else []:
        if isinstance(prop, exp.Property) and isinstance(prop.this, exp.Literal) and isinstance(prop.args.get("value"),
                                                                                             exp.Literal):
            options[prop.this.this] = prop.args["value"].this
        elif isinstance(prop, exp.TemporaryProperty):
            continue
        else:
            raise NotSupportedYet(f"table property {prop.sql(DIALECT)}")
    if watermark is not None and watermark[0] not in order:
        raise ValidationException(f"WATERMARK FOR {watermark[0]!r}: no such column in table {name!r} "
                                  f"(columns: {', '.join(order)})")
    return CreateTable(name, columns, options, if_not_exists, computed, order, watermark)


_TYPES = {
    exp.DataType.Type.TEXT: "STRING",
    exp.DataType.Type.VARCHAR: "STRING",
    exp.DataType.Type.INT: "INT",
    exp.DataType.Type.BIGINT: "BIGINT",
    exp.DataType.Type.SMALLINT: "SMALLINT",
    exp.DataType.Type.TINYINT: "TINYINT",
    exp.DataType.Type.DOUBLE: "DOUBLE",
    exp.DataType.Type.FLOAT: "FLOAT",
    exp.DataType.Type.BOOLEAN: "BOOLEAN",
    exp.DataType.Type.DATE: "DATE",
    exp.DataType.Type.TIMESTAMP: "TIMESTAMP",
    exp.DataType.Type.TIMESTAMPLTZ: "TIMESTAMP_LTZ",
}


def data_type(node: exp.DataType, where: str) -> DataType:
    root = _TYPES.get(node.this)
    if root is None:
        raise NotSupportedYet(f"type {node.sql(DIALECT)} ({where})")
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        params = node.expressions
        precision = int(params[0].this.this) if params else 6
        return DataTypes.TIMESTAMP(precision) if root == "TIMESTAMP" else DataTypes.TIMESTAMP_LTZ(precision)
    return DataType(root)


def parse_type(text: str, where: str) -> DataType:
    """A type written as SQL (`'BIGINT'`, `'TIMESTAMP(3)'`), as PyFlink accepts in udf(result_type=...)."""
    try:
        node = exp.DataType.build(text, dialect=DIALECT)
    except (sqlglot.errors.ParseError, ValueError):
        raise ValidationException(f"{where}: {text!r} is not a SQL type") from None
    return data_type(node, where)


# -- queries ---------------------------------------------------------------------------------------
@dataclass
class SelectParts:
    """One SELECT block, translated: the planner (environment) builds the plan from these."""

    source: Any  # a table name (str), a WindowTVF, a nested SelectParts/UnionParts or ValuesParts
    source_alias: str | None
    select: list[Expression]
    where: Expression | None
    group_by: list[Expression] | None
    having: Expression | None
    qualifiers: set[str] = field(default_factory=set)
    distinct: bool = False
    order_by: list[tuple[Expression, bool, bool]] = field(default_factory=list)  # (expr, desc, nulls_first)
    limit: int | None = None
    lateral: Lateral | None = None  # `, LATERAL TABLE(f(..)) AS T(a, b)` after the FROM item
    joins: list[JoinParts] = field(default_factory=list)  # regular joins after the FROM item, left-deep
    source_qualifier: str | None = None  # the FROM item's alias or table name (joins resolve `q.col` by it)


@dataclass
class JoinParts:
    """`[INNER | LEFT | RIGHT | FULL [OUTER]] JOIN right [AS q] ON condition`; the condition's column
    references keep their qualifiers (`q.col`), resolved by the planner against both sides."""

    source: Any  # a table name or nested SelectParts/UnionParts/ValuesParts
    qualifier: str
    kind: str  # INNER, LEFT, RIGHT, FULL
    on: Expression | None  # None: `FROM a, b WHERE ..` (the WHERE is the join's condition, as Flink pushes it)


@dataclass
class Lateral:
    """A correlated table function call in FROM (Flink's Correlate): CROSS (inner) or LEFT ... ON TRUE."""

    call: Expression
    names: list[str] | None
    left_outer: bool


@dataclass
class ValuesParts:
    """`VALUES (..), (..)` with the column names of `AS t(a, b)` (None: Calcite's EXPR$i)."""

    rows: list[list[Expression]]
    names: list[str] | None


def _values_parts(node: exp.Values) -> ValuesParts:
    tr = _Translator(set())
    rows = [[tr.expr(v) for v in (t.expressions if isinstance(t, exp.Tuple) else [t])] for t in node.expressions]
    alias = node.args.get("alias")
    names = [c.name for c in alias.columns] if alias is not None and alias.columns else None
    return ValuesParts(rows, names)


@dataclass
class UnionParts:
    """`a UNION ALL b` (all) or `a UNION b` (distinct rows)."""

    inputs: list[Any]  # SelectParts | UnionParts
    all: bool


_CLAUSES = [
    ("offset", "OFFSET"),
    ("with_", "WITH (common table expressions)"),
    ("with", "WITH (common table expressions)"),
    ("laterals", "LATERAL"),
    ("windows", "WINDOW clause"),
    ("qualify", "QUALIFY"),
]


def select_parts(tree: exp.Expression, functions: dict[str, Any] | None = None
                 ) -> SelectParts | UnionParts | ValuesParts:
    """`functions`: the environment's Python functions by lower-case name (create_temporary_function)."""
    functions = functions or {}
    if isinstance(tree, exp.Subquery):
        return select_parts(tree.this, functions)
    if isinstance(tree, exp.Values):
        return _values_parts(tree)
    if isinstance(tree, exp.Union):
        for key, feature in (("order", "ORDER BY"), ("limit", "LIMIT"), ("offset", "OFFSET")):
            if tree.args.get(key):
                raise NotSupportedYet(feature)
        return UnionParts([select_parts(tree.this, functions), select_parts(tree.expression, functions)],
                          all=not tree.args.get("distinct"))
    if isinstance(tree, (exp.Intersect, exp.Except)):
        raise NotSupportedYet(type(tree).__name__.upper())
    if not isinstance(tree, exp.Select):
        raise NotSupportedYet(f"query {type(tree).__name__.upper()}")
    for key, feature in _CLAUSES:
        if tree.args.get(key):
            raise NotSupportedYet(feature)
    distinct = tree.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        raise NotSupportedYet("SELECT DISTINCT ON")
    from_ = tree.args.get("from_") or tree.args.get("from")
    if from_ is None:
        raise NotSupportedYet("SELECT without FROM")
    src = from_.this
    qualifiers: set[str] = set()
    if isinstance(src, exp.Table):
        if src.args.get("joins"):
            raise NotSupportedYet("JOIN")
        source: Any = _table_name(src)
        qualifiers.add(src.name)
        if source in WINDOW_TVFS:
            source = WINDOW_TVFS[source]
            qualifiers.add(source.table.split(".")[-1])
        if isinstance(src.this, exp.Anonymous) or isinstance(src.this, exp.Func):
            raise NotSupportedYet(f"table function {src.this.sql(DIALECT)} in FROM")
    elif isinstance(src, exp.Subquery):
        source = select_parts(src.this, functions)
    elif isinstance(src, exp.Values):
        source = _values_parts(src)
    else:
        raise NotSupportedYet(f"FROM {src.sql(DIALECT)}")
    alias = src.alias or None
    if alias:
        qualifiers.add(alias)
    joins_ = tree.args.get("joins") or []
    regular = bool(joins_) and not isinstance(joins_[0].this, exp.Lateral)
    lateral = None if regular else _lateral(joins_, qualifiers, functions)
    joins = _joins(joins_, qualifiers, functions) if regular else []
    tr = _Translator(qualifiers, functions, qualified=regular)
    where = tree.args.get("where")
    group = tree.args.get("group")
    having = tree.args.get("having")
    if group is not None and any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup")):
        raise NotSupportedYet("GROUPING SETS / CUBE / ROLLUP")
    return SelectParts(
        source=source,
        source_alias=alias,
        select=[tr.expr(e) for e in tree.expressions],
        where=tr.expr(where.this) if where is not None else None,
        group_by=[tr.expr(e) for e in group.expressions] if group is not None else None,
        having=tr.expr(having.this) if having is not None else None,
        qualifiers=qualifiers,
        distinct=distinct is not None,
        order_by=_order_by(tree, tr),
        limit=_limit(tree),
        lateral=lateral,
        joins=joins,
        source_qualifier=alias or (src.name if isinstance(src, exp.Table) else None),
    )


_JOIN_KINDS = {"": "INNER", "INNER": "INNER", "LEFT": "LEFT", "RIGHT": "RIGHT", "FULL": "FULL"}


def _joins(joins: list[exp.Join], qualifiers: set[str], functions: dict[str, Any]) -> list[JoinParts]:
    out = []
    for join in joins:
        right = join.this
        if isinstance(right, exp.Lateral):
            raise NotSupportedYet("LATERAL TABLE together with a regular JOIN in one FROM")
        side = str(join.args.get("side") or "").upper()
        kind = str(join.args.get("kind") or "").upper()
        if join.args.get("using"):
            raise NotSupportedYet("JOIN .. USING (write ON a.k = b.k)")
        if kind in ("SEMI", "ANTI") or (join.args.get("on") is None and (side or kind not in ("", "CROSS"))):
            raise NotSupportedYet(f"{side or kind} JOIN without ON")
        if join.args.get("on") is None and len(joins) > 1:
            raise NotSupportedYet("comma/CROSS joins of more than two tables (write JOIN .. ON)")
        if isinstance(right, exp.Table):
            source: Any = _table_name(right)
            if source in WINDOW_TVFS:
                raise NotSupportedYet("window joins (a join of window TVFs)")
            if isinstance(right.this, exp.Func):
                raise NotSupportedYet(f"table function {right.this.sql(DIALECT)} in JOIN")
            qualifier = right.alias or right.name
        elif isinstance(right, exp.Subquery):
            source = select_parts(right.this, functions)
            qualifier = right.alias
            if not qualifier:
                raise ValidationException("a subquery in JOIN needs an alias: JOIN (SELECT ..) AS q ON ..")
        else:
            raise NotSupportedYet(f"JOIN {right.sql(DIALECT)}")
        qualifiers.add(qualifier)
        on_node = join.args.get("on")
        on = _Translator(qualifiers, functions, qualified=True).expr(on_node) if on_node is not None else None
        out.append(JoinParts(source, qualifier, _JOIN_KINDS[side], on))
    return out


def _lateral(joins: list[exp.Join], qualifiers: set[str], functions: dict[str, Any]) -> Lateral | None:
    """`FROM t, LATERAL TABLE(f(..)) AS T(a)`, `CROSS JOIN LATERAL TABLE(..)`, `LEFT JOIN LATERAL TABLE(..) ..
    ON TRUE`; any other join is refused here."""
    if not joins:
        return None
    if len(joins) > 1 or not isinstance(joins[0].this, exp.Lateral):
        raise NotSupportedYet("JOIN (only LATERAL TABLE(table function) joins)")
    join = joins[0]
    lateral = join.this
    call = lateral.this
    if not (isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE" and len(call.expressions) == 1):
        raise NotSupportedYet(f"LATERAL {call.sql(DIALECT)} (only LATERAL TABLE(table function))")
    side = str(join.args.get("side") or "").upper()
    on = join.args.get("on")
    if side == "LEFT":
        if not (isinstance(on, exp.Boolean) and on.this is True):
            raise ValidationException("LEFT JOIN LATERAL TABLE(..) takes ON TRUE as its condition")
    elif side or on is not None:
        raise NotSupportedYet(f"{side or 'INNER'} JOIN LATERAL with a condition (CROSS JOIN or LEFT JOIN .. ON TRUE)")
    alias = lateral.args.get("alias")
    names = [c.name for c in alias.columns] if alias is not None and alias.columns else None
    if alias is not None and alias.name:
        qualifiers.add(alias.name)
    expr = _Translator(qualifiers, functions).expr(call.expressions[0])
    if not (expr.op == "call" and expr.name == "udtf"):
        raise ValidationException(f"LATERAL TABLE({call.expressions[0].sql(DIALECT)}): not a table function "
                                  "(register one made by udtf with create_temporary_function)")
    return Lateral(expr, names, side == "LEFT")


def _order_by(tree: exp.Select, tr: _Translator) -> list[tuple[Expression, bool, bool]]:
    order = tree.args.get("order")
    if order is None:
        return []
    return [(tr.expr(o.this), bool(o.args.get("desc")), bool(o.args.get("nulls_first"))) for o in order.expressions]


def _limit(tree: exp.Select) -> int | None:
    limit = tree.args.get("limit")
    if limit is None:
        return None
    value = limit.expression
    if not isinstance(value, exp.Literal) or value.is_string or not re.fullmatch(r"\d+", value.this):
        raise ValidationException(f"LIMIT takes a non-negative integer literal, got {limit.sql(DIALECT)}")
    return int(value.this)


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
             "HOP_START", "HOP_END", "HOP_ROWTIME"}
_UNITS = {"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


def _interval(node: exp.Interval) -> datetime.timedelta:
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
        return (kind, _interval(start))
    raise NotSupportedYet(f"OVER frame {spec.sql(DIALECT)} (ROWS n PRECEDING or RANGE INTERVAL .. PRECEDING)")


class _Translator:
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
            if isinstance(node.this, exp.Star):
                return col("*")
            table = node.table
            if table and table not in self.qualifiers:
                raise ValidationException(f"unknown table {table!r} in column reference {node.sql(DIALECT)}")
            return col(f"{table}.{node.name}" if table and self.qualified else node.name)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return lit(node.this)
            text = node.this
            return lit(int(text)) if re.fullmatch(r"-?\d+", text) else lit(float(text))
        if isinstance(node, exp.Boolean):
            return lit(bool(node.this))
        if isinstance(node, exp.Null):
            return lit(None)
        if isinstance(node, exp.Paren):
            return self.expr(node.this)
        if isinstance(node, exp.Neg):
            inner = self.expr(node.this)
            if inner.op == "lit" and isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
                return lit(-inner.value)
            return -inner
        if isinstance(node, exp.Not):
            if isinstance(node.this, exp.Is) and isinstance(node.this.expression, exp.Null):
                return self.expr(node.this.this).is_not_null
            return ~self.expr(node.this)
        if isinstance(node, exp.Is):
            if isinstance(node.expression, exp.Null):
                return self.expr(node.this).is_null
            raise NotSupportedYet(f"IS {node.expression.sql(DIALECT)}")
        for cls, name in _BINARY.items():
            if type(node) is cls:
                return Expression("call", name, (self.expr(node.this), self.expr(node.expression)))
        for cls, name in _UNARY.items():
            if type(node) is cls:
                return Expression("call", name, (self.expr(node.this),))
        if isinstance(node, exp.DPipe):
            return concat(self.expr(node.this), self.expr(node.expression))
        if isinstance(node, exp.Concat):
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
        if isinstance(node, exp.Interval):
            return lit(_interval(node))
        udf = self._user_function(node)
        if udf is not None:
            return udf
        if isinstance(node, exp.Anonymous) and node.name.upper() in FUNCTIONS:
            return Expression("call", node.name.lower(), tuple(self.expr(a) for a in node.expressions))
        if isinstance(node, exp.Window):
            return self._over(node)
        if isinstance(node, (exp.Subquery, exp.Exists)):
            raise NotSupportedYet("subqueries in expressions")
        if isinstance(node, exp.Anonymous):
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
        if not isinstance(node.this, exp.RowNumber):
            raise NotSupportedYet(f"OVER windows ({node.this.sql(DIALECT)} OVER ...; ROW_NUMBER() runs as Top-N)")
        if node.args.get("spec") is not None:
            raise NotSupportedYet("ROW_NUMBER() OVER with a frame (ROWS/RANGE BETWEEN)")
        return Expression("call", "row_number_over", (*partition, *keys), value=(len(partition), flags))

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
