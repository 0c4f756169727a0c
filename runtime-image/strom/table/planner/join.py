"""Regular joins (INNER, LEFT/RIGHT/FULL OUTER) as Flink plans them: name resolution over both inputs,
the ON condition split into equality keys and a residual condition, and the join node.

Column names: the output has the left input's columns, then the right input's; a right column whose
name is already taken gets a digit appended (`k` -> `k0`), as Flink names the columns of `SELECT *`.
`q.col` resolves through the input named (or aliased) `q`; an unqualified name must be unique.
Flink refuses a streaming regular join without an equality between the two inputs; so do we.
An equality of both inputs' window_start and window_end makes it a window join (planner/window_join.py).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from strom.table.errors import TableException, ValidationException
from strom.table.expressions import Expression, col
from strom.table.planner.interval_join import OuterIntervalJoinNode, bounds
from strom.table.planner.plan import IntervalJoinNode, JoinNode, PlanNode
from strom.table.planner.scalar import compile_scalar
from strom.table.planner.window_join import WindowJoinNode, window_join, window_keys

# qualifier -> {column name as written -> output column name}
Scope = dict[str, dict[str, str]]


def scope_of(qualifier: str | None, node: PlanNode) -> Scope:
    return {qualifier or "": {n: n for n in node.names()}}


def _output_names(left: list[str], right: list[str]) -> list[str]:
    taken = set(left)
    out = []
    for n in right:
        name, i = n, 0
        while name in taken:
            name, i = f"{n}{i}", i + 1
        taken.add(name)
        out.append(name)
    return out


def resolve(e: Expression, scope: Scope) -> Expression:
    """Qualified and unqualified column references -> the join output's column names."""
    if e.op == "col":
        if e.name == "*":
            return e
        if "." in e.name:
            q, name = e.name.split(".", 1)
            columns = scope.get(q)
            if columns is None:
                raise ValidationException(f"unknown table {q!r} in column reference {e.name}")
            if name not in columns:
                raise ValidationException(f"unknown column {name!r} in table {q!r}; available columns: "
                                          f"{', '.join(columns)}")
            return col(columns[name])
        found = [columns[e.name] for columns in scope.values() if e.name in columns]
        if len(found) > 1:
            raise ValidationException(f"column {e.name!r} is ambiguous (in {len(found)} joined tables); "
                                      "qualify it (t.col)")
        return col(found[0]) if found else e  # an unknown name fails later, listing the columns
    if not e.args:
        return e
    args = tuple(resolve(a, scope) for a in e.args)
    return Expression(e.op, e.name, args, e.value, e.data_type, e.is_distinct)


def _qualified_star(e: Expression, scope: Scope) -> list[Expression]:
    """`q.*`: the columns of the input named `q` in its order (their join output names); anything else resolved."""
    if e.op != "col" or not e.name.endswith(".*"):
        return [resolve(e, scope)]
    q = e.name[:-2]
    if q not in scope:
        raise ValidationException(f"unknown table {q!r} in {e.name}; tables in this join: {', '.join(scope)}")
    return [col(n) for n in scope[q].values()]


def written_names(e: ValidationException, scope: Scope) -> ValidationException:
    """A not-grouped column named as the query wrote it (`B.dateTime`, not the join output's `dateTime0`),
    worded as Flink's validator words it; any other error unchanged."""
    m = re.match(r"column '([^']+)' is neither grouped nor aggregated", str(e))
    if m is None:
        return e
    written = next((f"{q}.{n}" if q else n for q, columns in scope.items() for n, out in columns.items()
                    if out == m.group(1)), m.group(1))
    return ValidationException(f"Expression '{written}' is not being grouped ({e})")


def resolve_parts(parts: Any, scope: Scope) -> Any:
    """A SelectParts' select list, WHERE, GROUP BY and HAVING over the join's output names."""
    return replace(
        parts,
        select=[r for e in parts.select for r in _qualified_star(e, scope)],
        where=resolve(parts.where, scope) if parts.where is not None else None,
        group_by=[resolve(e, scope) for e in parts.group_by] if parts.group_by is not None else None,
        having=resolve(parts.having, scope) if parts.having is not None else None,
        order_by=[(resolve(e, scope), d, n) for e, d, n in parts.order_by],
    )


def _conjuncts(e: Expression) -> list[Expression]:
    if e.op == "call" and e.name == "and":
        return _conjuncts(e.args[0]) + _conjuncts(e.args[1])
    return [e]


def plan_join(left: PlanNode, left_scope: Scope, right: PlanNode, right_qualifier: str, kind: str,
              on: Expression, final_only: bool, state_ttl_ms: int = 0
              ) -> tuple[JoinNode | IntervalJoinNode | WindowJoinNode, Scope]:
    right_names = _output_names(left.names(), right.names())
    if right_qualifier in left_scope:
        raise ValidationException(f"table name {right_qualifier!r} appears twice in the join; alias one (AS q)")
    scope = dict(left_scope)
    scope[right_qualifier] = dict(zip(right.names(), right_names, strict=True))
    left_types = [t.nullable_() if kind in ("RIGHT", "FULL") else t for _, t in left.columns]
    right_types = [t.nullable_() if kind in ("LEFT", "FULL") else t for _, t in right.columns]
    columns = list(zip(left.names(), left_types, strict=True)) + list(zip(right_names, right_types, strict=True))
    names = [n for n, _ in columns]
    condition = resolve(on, scope)
    if condition.contains_aggregate():
        raise ValidationException(f"aggregate in a join condition: {condition.sql()}")
    _, t = compile_scalar(condition, columns)
    if t.root != "BOOLEAN":
        raise ValidationException(f"join condition {condition.sql()} is {t}, expected BOOLEAN")
    n_left = len(left.columns)
    left_keys: list[int] = []
    right_keys: list[int] = []
    residual: list[Expression] = []
    for c in _conjuncts(condition):
        a, b = (c.args if c.op == "call" and c.name == "=" else (None, None))
        if a is not None and b is not None and a.op == "col" and b.op == "col":
            ia, ib = names.index(a.name), names.index(b.name)
            if ia < n_left <= ib or ib < n_left <= ia:
                li, ri = (ia, ib) if ia < n_left else (ib, ia)
                ta, tb = columns[li][1], columns[ri][1]
                if not (ta.root == tb.root or (ta.is_numeric and tb.is_numeric)):
                    raise ValidationException(f"join condition {c.sql()}: cannot compare {ta} with {tb}")
                left_keys.append(li)
                right_keys.append(ri - n_left)
                continue
        residual.append(c)
    if not left_keys:
        raise TableException(
            "Cannot generate a valid execution plan for the given query: a regular join needs an equality "
            f"between columns of its two inputs (an equi-join); got ON {condition.sql()}. This exception "
            "indicates that the query uses an unsupported SQL feature.")
    ends = None if final_only else window_keys(left, right, left_keys, right_keys)
    if ends is not None and not left.updating and not right.updating:  # a window join: once per window
        columns = [(n, t.plain()) for n, t in columns]
        return window_join(columns, left, right, kind, left_keys, right_keys, _and_all(residual), ends), scope
    interval = None if final_only else bounds(residual, columns, n_left)
    if interval is not None:
        for side, node_ in (("left", left), ("right", right)):
            if node_.updating:
                raise ValidationException(f"IntervalJoin doesn't support consuming update changes which is "
                                          f"produced by its {side} input")
        if kind != "INNER":  # a NULL-padded side keeps no time attribute
            columns = [(n, t.plain() if (i < n_left) == (kind == "RIGHT") or kind == "FULL" else t)
                       for i, (n, t) in enumerate(columns)]
            return OuterIntervalJoinNode(columns, left=left, right=right, left_keys=left_keys, right_keys=right_keys,
                                         lower=interval.lower, upper=interval.upper, left_time=interval.left_time,
                                         right_time=interval.right_time, condition=_and_all(interval.residual),
                                         kind=kind), scope
        return IntervalJoinNode(columns, left=left, right=right, left_keys=left_keys, right_keys=right_keys,
                                lower=interval.lower, upper=interval.upper,
                                condition=_and_all(interval.residual)), scope
    # a regular join's output has no time attributes (its rows are not ordered by either input's time)
    columns = [(n, t.plain()) for n, t in columns]
    node = JoinNode(columns, left=left, right=right, kind=kind, left_keys=left_keys, right_keys=right_keys,
                    condition=_and_all(residual), final_only=final_only, state_ttl_ms=state_ttl_ms)
    return node, scope


def _and_all(conjuncts: list[Expression]) -> Expression | None:
    out = conjuncts[0] if conjuncts else None
    for c in conjuncts[1:]:
        out = out & c
    return out
