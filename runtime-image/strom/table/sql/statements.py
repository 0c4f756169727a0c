"""Flink SQL statements -> statement objects (CREATE/DROP TABLE, VIEW and FUNCTION, INSERT, queries,
SHOW, DESCRIBE, EXPLAIN). Statements sqlglot does not know are recognized first by their leading
keywords, and anything not translated here is refused with a one-line "not supported yet: <clause>"
error rather than run differently from Flink."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from strom.table.errors import NotSupportedYet, SqlParserException, ValidationException
from strom.table.expressions import Expression
from strom.table.sql.flink_syntax import extract_watermark, extract_window_tvfs
from strom.table.sql.sql_text import DIALECT, parse_one, strip_statement, table_name
from strom.table.sql.sql_types import data_type
from strom.table.sql.translator import Translator, parse_expression
from strom.table.types import DataType


@dataclass
class CreateTable:
    name: str
    columns: list[tuple[str, DataType]]  # physical columns (what the connector reads)
    options: dict[str, str]
    if_not_exists: bool
    computed: list[tuple[str, Expression]] = field(default_factory=list)  # `name AS expr`
    order: list[str] = field(default_factory=list)  # every column in declared order
    watermark: tuple[str, Expression] | None = None  # WATERMARK FOR column AS expression
    primary_key: tuple[str, ...] = ()  # PRIMARY KEY (..) NOT ENFORCED
    partition_keys: tuple[str, ...] = ()  # PARTITIONED BY (..)


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


def parse_statement(sql: str) -> Statement:
    text = strip_statement(sql)
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
    tree = parse_one(text)
    if isinstance(tree, exp.Create):
        return _create(tree, watermark)
    if isinstance(tree, exp.Insert):
        if tree.args.get("overwrite"):
            raise NotSupportedYet("INSERT OVERWRITE")
        target = tree.this
        if isinstance(target, exp.Schema):
            raise NotSupportedYet("INSERT INTO with a column list")
        return Insert(table_name(target), tree.expression)
    if isinstance(tree, exp.Drop):
        kind = str(tree.args.get("kind") or "").upper()
        if kind not in ("TABLE", "VIEW"):
            raise NotSupportedYet(f"DROP {kind}")
        tables = tree.args.get("tables") or [tree.this]
        return Drop(table_name(tables[0]), bool(tree.args.get("exists")), kind == "VIEW")
    if isinstance(tree, exp.Describe):
        return Describe(table_name(tree.this))
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


def _create(tree: exp.Create, watermark: tuple[str, Expression] | None = None) -> Statement:
    kind = str(tree.args.get("kind") or "").upper()
    if_not_exists = bool(tree.args.get("exists"))
    if tree.args.get("replace"):
        raise NotSupportedYet("CREATE OR REPLACE")
    if kind == "VIEW":
        return CreateView(table_name(tree.this), tree.expression, if_not_exists)
    if kind != "TABLE":
        raise NotSupportedYet(f"CREATE {kind}")
    if tree.expression is not None:
        raise NotSupportedYet("CREATE TABLE ... AS SELECT")
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise NotSupportedYet("CREATE TABLE without a column list (LIKE)")
    name = table_name(schema.this)
    columns: list[tuple[str, DataType]] = []
    computed: list[tuple[str, Expression]] = []
    order: list[str] = []
    primary_key: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            order.append(item.name)
            constraints = item.args.get("constraints") or []
            if item.args.get("kind") is None:
                kinds = [c.kind for c in constraints]
                if len(kinds) != 1 or not isinstance(kinds[0], exp.ComputedColumnConstraint):
                    raise NotSupportedYet(f"column {item.name!r} without a type")
                computed.append((item.name, Translator(set()).expr(kinds[0].this)))
                continue
            t = data_type(item.args["kind"], f"column {item.name!r}")
            for c in constraints:
                if isinstance(c.kind, exp.NotNullColumnConstraint) and not c.kind.args.get("allow_null"):
                    t = t.not_null()
                elif isinstance(c.kind, exp.PrimaryKeyColumnConstraint):
                    primary_key = _primary_key(primary_key, [item.name], c.kind.args.get("options"))
                else:
                    raise NotSupportedYet(f"column constraint {c.sql(DIALECT)} on {item.name!r}")
            columns.append((item.name, t))
        elif isinstance(item, exp.PrimaryKey):
            primary_key = _primary_key(primary_key, [i.name for i in item.expressions], item.args.get("options"))
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
        elif isinstance(prop, exp.PartitionedByProperty) and isinstance(prop.this, exp.Schema):
            partition_keys = tuple(i.name for i in prop.this.expressions)
        else:
            raise NotSupportedYet(f"table property {prop.sql(DIALECT)}")
    if watermark is not None and watermark[0] not in order:
        raise ValidationException(f"WATERMARK FOR {watermark[0]!r}: no such column in table {name!r} "
                                  f"(columns: {', '.join(order)})")
    for key in primary_key + partition_keys:
        if key not in [n for n, _ in columns]:
            what = "PRIMARY KEY" if key in primary_key else "PARTITIONED BY"
            raise ValidationException(f"{what} column {key!r} is not a physical column of table {name!r} "
                                      f"(columns: {', '.join(n for n, _ in columns)})")
    # as Flink: the primary key's columns are NOT NULL
    columns = [(n, t.not_null() if n in primary_key else t) for n, t in columns]
    return CreateTable(name, columns, options, if_not_exists, computed, order, watermark, primary_key,
                       partition_keys)


_NOT_ENFORCED_ONLY = (
    "Flink doesn't support ENFORCED mode for PRIMARY KEY constraint. ENFORCED/NOT ENFORCED controls if the "
    "constraint checks are performed on the incoming/outgoing data. Flink does not own the data therefore the "
    "only supported mode is the NOT ENFORCED mode")


def _primary_key(existing: tuple[str, ...], names: list[str], options: list[str] | None) -> tuple[str, ...]:
    if existing:
        raise ValidationException("Duplicate primary key definition")
    if not any(str(o).upper() == "NOT ENFORCED" for o in options or []):
        raise ValidationException(_NOT_ENFORCED_ONLY)
    return tuple(names)
