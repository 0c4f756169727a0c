"""One SELECT (or UNION / VALUES) -> the parts the planner builds a plan from: source, joins, LATERAL
TABLE, projection, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.expressions import Expression
from strom.table.sql.flink_syntax import WINDOW_TVFS
from strom.table.sql.sql_text import DIALECT, table_name
from strom.table.sql.translator import Translator


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
    as_of: Expression | None = None  # `right FOR SYSTEM_TIME AS OF l.ts`: the left time (qualified); a temporal join


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
    tr = Translator(set())
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
        source: Any = table_name(src)
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
    regular = bool(joins_) and not isinstance(joins_[0].this, (exp.Lateral, exp.Unnest))
    lateral = None if regular else _lateral(joins_, qualifiers, functions)
    joins = _joins(joins_, qualifiers, functions) if regular else []
    tr = Translator(qualifiers, functions, qualified=regular)
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
        version = right.args.get("version") if isinstance(right, exp.Table) else None
        if isinstance(right, exp.Table):
            source: Any = table_name(right)
            if source in WINDOW_TVFS:
                raise NotSupportedYet("a join of a window TVF written in FROM; join subqueries over it: "
                                      "JOIN (SELECT * FROM TABLE(TUMBLE(..))) r ON l.window_start = r.window_start ..")
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
        as_of = None
        if version is not None:
            if str(version.args.get("kind", "")).upper() != "AS OF" or str(version.name).upper() != "TIMESTAMP":
                raise NotSupportedYet(f"{version.sql(DIALECT)} (only FOR SYSTEM_TIME AS OF left_table.time_column)")
            if join.args.get("on") is None:
                raise ValidationException(f"a temporal join of {source} needs ON with an equality on its primary key")
            as_of = Translator(qualifiers, functions, qualified=True).expr(version.expression)
        qualifiers.add(qualifier)
        on_node = join.args.get("on")
        on = Translator(qualifiers, functions, qualified=True).expr(on_node) if on_node is not None else None
        out.append(JoinParts(source, qualifier, _JOIN_KINDS[side], on, as_of))
    return out


def _lateral(joins: list[exp.Join], qualifiers: set[str], functions: dict[str, Any]) -> Lateral | None:
    """`FROM t, LATERAL TABLE(f(..)) AS T(a)`, `CROSS JOIN LATERAL TABLE(..)`, `LEFT JOIN LATERAL TABLE(..) ..
    ON TRUE`; any other join is refused here."""
    if not joins:
        return None
    if len(joins) > 1 or not isinstance(joins[0].this, (exp.Lateral, exp.Unnest)):
        raise NotSupportedYet("JOIN (only LATERAL TABLE(table function) joins)")
    join = joins[0]
    lateral = join.this
    if isinstance(lateral, exp.Unnest):  # CROSS JOIN UNNEST(arr) AS t(x): a built-in table function
        return _unnest(join, lateral, qualifiers, functions)
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
    expr = Translator(qualifiers, functions).expr(call.expressions[0])
    if not (expr.op == "call" and expr.name == "udtf"):
        raise ValidationException(f"LATERAL TABLE({call.expressions[0].sql(DIALECT)}): not a table function "
                                  "(register one made by udtf with create_temporary_function)")
    return Lateral(expr, names, side == "LEFT")


def _unnest(join: exp.Join, unnest: exp.Unnest, qualifiers: set[str], functions: dict[str, Any]) -> Lateral:
    if len(unnest.expressions) != 1:
        raise NotSupportedYet(f"{unnest.sql(DIALECT)} (UNNEST of one array or map)")
    offset = unnest.args.get("offset")  # WITH ORDINALITY: sqlglot holds the last alias column (or True) here
    side = str(join.args.get("side") or "").upper()
    on = join.args.get("on")
    if side == "LEFT":
        if not (isinstance(on, exp.Boolean) and on.this is True):
            raise ValidationException("LEFT JOIN UNNEST(..) takes ON TRUE as its condition")
    elif side or on is not None:
        raise NotSupportedYet(f"{side or 'INNER'} JOIN UNNEST with a condition (CROSS JOIN or LEFT JOIN .. ON TRUE)")
    alias = unnest.args.get("alias")
    names = [c.name for c in alias.columns] if alias is not None and alias.columns else None
    if alias is not None and alias.name:
        qualifiers.add(alias.name)
    if isinstance(offset, exp.Identifier):
        names = [*(names or []), offset.name]
    array = Translator(qualifiers, functions).expr(unnest.expressions[0])
    return Lateral(Expression("call", "unnest", (array,), value="ordinality" if offset else None), names,
                   side == "LEFT")


def _order_by(tree: exp.Select, tr: Translator) -> list[tuple[Expression, bool, bool]]:
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
