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
    like: LikeClause | None = None  # CREATE TABLE .. LIKE source (..): merged by the environment


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
    columns: list[str] | None = None  # INSERT INTO t (a, b): the sink's other columns get NULL
    overwrite: bool = False
    # INSERT .. PARTITION (k = 'v', ..): static partition columns and their constants; the query gives the others
    static_partition: list[tuple[str, Expression]] = field(default_factory=list)


@dataclass
class Set:
    """`SET` (list the session's options) or `SET 'key' = 'value'`."""

    key: str | None = None
    value: str | None = None


@dataclass
class Reset:
    key: str | None = None  # None: every option set in this session


@dataclass
class Use:
    name: str
    catalog: bool  # USE CATALOG name (else USE [catalog.]database)


@dataclass
class ShowCreateTable:
    name: str
    view: bool = False


@dataclass
class AlterTable:
    """ALTER TABLE t RENAME TO u | SET ('k' = 'v', ..) | RESET ('k', ..)."""

    name: str
    new_name: str | None = None
    set_options: dict[str, str] = field(default_factory=dict)
    reset_keys: list[str] = field(default_factory=list)
    if_exists: bool = False


@dataclass
class StatementSetBegin:
    """`BEGIN STATEMENT SET;`: the SQL client collects the following INSERTs until `END;`."""


@dataclass
class StatementSetEnd:
    pass


@dataclass
class ExecuteStatementSet:
    """`EXECUTE STATEMENT SET BEGIN INSERT ..; INSERT ..; END`: the INSERTs run as one job."""

    inserts: list[Insert]


@dataclass
class LikeClause:
    """CREATE TABLE .. LIKE source (INCLUDING|EXCLUDING|OVERWRITING feature ..): feature -> strategy, with
    Flink's defaults (INCLUDING ALL OVERWRITING OPTIONS) for what is not named."""

    source: str
    strategies: dict[str, str]


@dataclass
class Query:
    query: exp.Expression


@dataclass
class Show:
    what: str  # TABLES, VIEWS, FUNCTIONS, USER FUNCTIONS, CATALOGS, DATABASES, CURRENT CATALOG, CURRENT DATABASE


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
             | DropFunction | Set | Reset | Use | ShowCreateTable | AlterTable | StatementSetBegin
             | StatementSetEnd | ExecuteStatementSet)

_UNSUPPORTED_LEADS = [
    (r"SHOW\s+\w+", "SHOW (TABLES, VIEWS, [USER] FUNCTIONS, CATALOGS, DATABASES, CURRENT CATALOG|DATABASE, "
                    "CREATE TABLE|VIEW)"),
    (r"ALTER\b", "ALTER (ALTER TABLE t RENAME TO | SET (..) | RESET (..))"),
    (r"CREATE\s+CATALOG", "CREATE CATALOG"),
    (r"CREATE\s+DATABASE", "CREATE DATABASE"),
    (r"LOAD\s+MODULE|UNLOAD\s+MODULE", "modules"),
]
_NAME = r"(`[^`]+`|[\w.]+)"
_SHOW = re.compile(r"SHOW\s+(TABLES|VIEWS|FUNCTIONS|USER\s+FUNCTIONS|CATALOGS|DATABASES|CURRENT\s+CATALOG|"
                   r"CURRENT\s+DATABASE)$", re.IGNORECASE)


def parse_statement(sql: str) -> Statement:
    text = strip_statement(sql)
    if not text:
        raise SqlParserException("empty SQL statement")
    m = _SHOW.match(text)
    if m:
        return Show(" ".join(m.group(1).upper().split()))
    utility = utility_statement(text)
    if utility is not None:
        return utility
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
    text, like = split_like(text)
    if like is not None:  # a placeholder column (dropped below): sqlglot needs a column list, WATERMARK a column
        head = r"(\bTABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?" + _NAME + r")"
        if re.search(head + r"\s*\(", text, re.IGNORECASE):
            text = re.sub(head + r"\s*\(", r"\1 (`__strom_like__` INT, ", text, count=1, flags=re.IGNORECASE)
        else:
            text = re.sub(head, r"\1 (`__strom_like__` INT)", text, count=1, flags=re.IGNORECASE)
    if re.match(r"CREATE\s+(TEMPORARY\s+)?TABLE\b", text, re.IGNORECASE):
        text = re.sub(r"\bROW\s*<", "STRUCT<", text, flags=re.IGNORECASE)  # Flink's ROW<..> is Hive's STRUCT<..>
    text, watermark = extract_watermark(text, parse_expression)
    text = extract_window_tvfs(text, parse_expression)
    tree = parse_one(text)
    if isinstance(tree, exp.Create):
        created = _create(tree, watermark)
        if like is not None and isinstance(created, CreateTable):
            created.like = like
            keep = [i for i, (n, _) in enumerate(created.columns) if n != "__strom_like__"]
            created.columns = [created.columns[i] for i in keep]
            created.order = [n for n in created.order if n != "__strom_like__"]
        return created
    if isinstance(tree, exp.Insert):
        target = tree.this
        columns = None
        if isinstance(target, exp.Schema):
            columns = [i.name for i in target.expressions]
            target = target.this
        static: list[tuple[str, Expression]] = []
        spec = target.args.get("partition") if isinstance(target, exp.Table) else None
        for item in (spec.expressions if spec is not None else []):
            if not (isinstance(item, exp.EQ) and isinstance(item.this, exp.Column)):
                raise SqlParserException(f"INSERT .. PARTITION ({item.sql(DIALECT)}): a partition spec lists "
                                         "static values, PARTITION (column = 'value', ..)")
            static.append((item.this.name, Translator(set()).expr(item.expression)))
        return Insert(table_name(target), tree.expression, columns, bool(tree.args.get("overwrite")), static)
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
    if watermark is not None and watermark[0] not in order and "__strom_like__" not in order:  # LIKE: merged later
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


# -- utility statements: SET, RESET, USE, SHOW CREATE, ALTER TABLE, statement sets ------------------
_SET = re.compile(r"SET(?:\s+'([^']*)'\s*=\s*'((?:[^']|'')*)'|\s+([\w.\-]+)\s*=\s*(\S+))?$", re.IGNORECASE | re.DOTALL)
_RESET = re.compile(r"RESET(?:\s+'([^']*)'|\s+([\w.\-]+))?$", re.IGNORECASE)
_USE = re.compile(r"USE\s+(CATALOG\s+)?" + _NAME + r"$", re.IGNORECASE)
_SHOW_CREATE = re.compile(r"SHOW\s+CREATE\s+(TABLE|VIEW)\s+" + _NAME + r"$", re.IGNORECASE)
_ALTER = re.compile(r"ALTER\s+TABLE\s+(IF\s+EXISTS\s+)?" + _NAME + r"\s+(RENAME\s+TO\s+" + _NAME +
                    r"|SET\s*\((.*)\)|RESET\s*\((.*)\))$", re.IGNORECASE | re.DOTALL)
_EXECUTE_SET = re.compile(r"EXECUTE\s+STATEMENT\s+SET\s+BEGIN\s+(.*?)\s*END$", re.IGNORECASE | re.DOTALL)
_OPTION = re.compile(r"\s*'((?:[^']|'')*)'\s*=\s*'((?:[^']|'')*)'\s*(,|$)")
_KEY = re.compile(r"\s*'((?:[^']|'')*)'\s*(,|$)")
_QUOTED = re.compile(r"'(?:[^']|'')*'|`[^`]*`")


def _unquote(name: str) -> str:
    return name.replace("`", "")


def _options(text: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text.rstrip()):
        m = _OPTION.match(text, pos)
        if m is None:
            raise SqlParserException(f"{what}: expected 'key' = 'value' pairs, got {text[pos:].strip()!r}")
        out[m.group(1).replace("''", "'")] = m.group(2).replace("''", "'")
        pos = m.end()
    return out


def _keys(text: str, what: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text.rstrip()):
        m = _KEY.match(text, pos)
        if m is None:
            raise SqlParserException(f"{what}: expected 'key', ..., got {text[pos:].strip()!r}")
        out.append(m.group(1).replace("''", "'"))
        pos = m.end()
    return out


def split_statements(text: str) -> list[str]:
    """Statements separated by ';' outside quoted text."""
    parts, last = [], 0
    quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(text)]
    for i, c in enumerate(text):
        if c == ";" and not any(a < i < b for a, b in quoted):
            parts.append(text[last:i])
            last = i + 1
    parts.append(text[last:])
    return [p.strip() for p in parts if p.strip()]


def utility_statement(text: str) -> Statement | None:
    """SET, RESET, USE, SHOW CREATE, ALTER TABLE and the statement-set statements (Flink's SQL client syntax)."""
    head = text.split(None, 1)[0].upper() if text.split() else ""
    if head == "SET":
        m = _SET.match(text)
        if m is None:
            raise SqlParserException("SET: expected SET 'key' = 'value' (or SET to list the options)")
        if m.group(1) is not None:
            return Set(m.group(1), m.group(2).replace("''", "'"))
        return Set(m.group(3), m.group(4)) if m.group(3) is not None else Set()
    if head == "RESET":
        m = _RESET.match(text)
        if m is None:
            raise SqlParserException("RESET: expected RESET 'key' (or RESET to reset every option)")
        return Reset(m.group(1) if m.group(1) is not None else m.group(2))
    if head == "USE":
        m = _USE.match(text)
        if m is None or m.group(2).upper().startswith("MODULES"):
            raise NotSupportedYet("USE MODULES") if m is not None else SqlParserException(
                "USE: expected USE [CATALOG] name")
        return Use(_unquote(m.group(2)), bool(m.group(1)))
    m = _SHOW_CREATE.match(text)
    if m:
        return ShowCreateTable(_unquote(m.group(2)), m.group(1).upper() == "VIEW")
    if head == "ALTER":
        m = _ALTER.match(text)
        if m is None:
            return None  # refused below, naming what ALTER supports
        name, if_exists = _unquote(m.group(2)), bool(m.group(1))
        if m.group(4) is not None:
            return AlterTable(name, new_name=_unquote(m.group(4)), if_exists=if_exists)
        if m.group(5) is not None:
            return AlterTable(name, set_options=_options(m.group(5), "ALTER TABLE .. SET"), if_exists=if_exists)
        return AlterTable(name, reset_keys=_keys(m.group(6), "ALTER TABLE .. RESET"), if_exists=if_exists)
    if re.fullmatch(r"BEGIN\s+STATEMENT\s+SET", text, re.IGNORECASE):
        return StatementSetBegin()
    if re.fullmatch(r"END", text, re.IGNORECASE):
        return StatementSetEnd()
    if head == "EXECUTE":
        m = _EXECUTE_SET.match(text)
        if m is None:
            if re.match(r"EXECUTE\s+(INSERT|SELECT|WITH)\b", text, re.IGNORECASE):
                return parse_statement(text.split(None, 1)[1])
            raise SqlParserException("EXECUTE: expected EXECUTE STATEMENT SET BEGIN INSERT ..; ... END")
        inserts = []
        for part in split_statements(m.group(1)):
            stmt = parse_statement(part)
            if not isinstance(stmt, Insert):
                raise ValidationException(f"a statement set holds only INSERT statements, got {part.split()[0]!r}")
            inserts.append(stmt)
        if not inserts:
            raise ValidationException("EXECUTE STATEMENT SET: no INSERT between BEGIN and END")
        return ExecuteStatementSet(inserts)
    return None


_LIKE = re.compile(r"\s+LIKE\s+" + _NAME + r"\s*(?:\(([^()]*)\))?\s*$", re.IGNORECASE | re.DOTALL)
LIKE_FEATURES = ("ALL", "CONSTRAINTS", "PARTITIONS", "GENERATED", "OPTIONS", "WATERMARKS", "METADATA")


def split_like(text: str) -> tuple[str, LikeClause | None]:
    """`CREATE TABLE .. LIKE source (options)` -> the statement without the clause, and the clause."""
    if not re.match(r"CREATE\s+(TEMPORARY\s+)?TABLE\b", text, re.IGNORECASE):
        return text, None
    m = _LIKE.search(text)
    if m is None or _inside_quotes(text, m.start()):
        return text, None
    strategies = {"CONSTRAINTS": "INCLUDING", "PARTITIONS": "INCLUDING", "GENERATED": "INCLUDING",
                  "OPTIONS": "OVERWRITING", "WATERMARKS": "INCLUDING", "METADATA": "INCLUDING"}
    words = (m.group(2) or "").replace(",", " ").upper().split()  # Flink: space-separated pairs
    for i in range(0, len(words), 2):
        pair = words[i:i + 2]
        if (len(pair) != 2 or pair[0] not in ("INCLUDING", "EXCLUDING", "OVERWRITING")
                or pair[1] not in LIKE_FEATURES):
            raise SqlParserException(f"LIKE option {' '.join(pair)!r}: expected INCLUDING|EXCLUDING|OVERWRITING "
                                     f"{'|'.join(LIKE_FEATURES)}")
        strategy, feature = pair
        if feature == "ALL":
            if strategy == "OVERWRITING":
                raise ValidationException("LIKE: OVERWRITING ALL is not allowed (use INCLUDING ALL OVERWRITING ..)")
            strategies = {f: strategy for f in strategies}
        elif strategy == "OVERWRITING" and feature in ("CONSTRAINTS", "PARTITIONS"):
            raise ValidationException(f"LIKE: OVERWRITING is not allowed for {feature} (only INCLUDING/EXCLUDING)")
        else:
            strategies[feature] = strategy
    return text[:m.start()], LikeClause(_unquote(m.group(1)), strategies)


def _inside_quotes(text: str, at: int) -> bool:
    return any(q.start() < at < q.end() for q in _QUOTED.finditer(text))
