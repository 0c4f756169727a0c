"""Planning Top-N, deduplication and ORDER BY/LIMIT onto RankNode, with Flink's rules:

* `SELECT .. FROM (SELECT .., ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) AS rn FROM t) WHERE rn <= N`
  is Top-N; the rank number is an output column only when the outer query uses it (or selects `*`);
* N = 1 ordered by one time attribute, rank number unused, is deduplication (ASC keeps the first row, DESC
  the last);
* with window_start and window_end in PARTITION BY over an insert-only input it is a window Top-N or window
  deduplication (planner/window_rank.py): emitted once per window, insert-only;
* ORDER BY .. LIMIT n and LIMIT n are a Top-N over the whole table; ORDER BY without LIMIT sorts only in
  BATCH mode (streaming refuses it with Flink's message, except on a time attribute: not supported yet).
Top-N over an updating input runs as Flink's retract Top-N (planner/retract_rank.py), as do RANK() and
DENSE_RANK() (`rank_over`/`dense_rank_over` calls from the translator).
"""

from __future__ import annotations

from typing import Any

from strom.table.errors import NotSupportedYet, TableException
from strom.table.expressions import Expression, col
from strom.table.planner import builder
from strom.table.planner.plan import CalcNode, PlanNode, RankNode, SortKey
from strom.table.planner.scalar import column_index
from strom.table.planner.window_rank import window_bounds, window_rank
from strom.table.types import DataTypes

OVER = "row_number_over"
RANK_CALLS = {"row_number_over": "ROW_NUMBER", "rank_over": "RANK", "dense_rank_over": "DENSE_RANK"}


def over_item(select: list[Expression]) -> tuple[int, Expression, str] | None:
    """(position, ROW_NUMBER() OVER call, its output name) of a select list, if it has one."""
    found = None
    for i, e in enumerate(select):
        inner = e.args[0] if e.op == "alias" else e
        if inner.op == "call" and inner.name in RANK_CALLS:
            if found is not None:
                raise NotSupportedYet("several ROW_NUMBER() OVER (...) in one select")
            found = (i, inner, builder.output_name(e, i))
        elif _contains_over(inner):
            raise NotSupportedYet(f"ROW_NUMBER() OVER inside an expression ({inner.sql()})")
    return found


def _contains_over(e: Expression) -> bool:
    return (e.op == "call" and e.name in RANK_CALLS) or any(_contains_over(a) for a in e.args)


def _conjuncts(e: Expression | None) -> list[Expression]:
    if e is None:
        return []
    if e.op == "call" and e.name == "and":
        return _conjuncts(e.args[0]) + _conjuncts(e.args[1])
    return [e]


def _rank_bound(e: Expression, rn: str) -> int | None:
    """`rn <= N`, `rn < N`, `rn = 1` (and mirrored): the inclusive upper rank, else None."""
    if e.op != "call" or e.name not in ("<=", "<", "=", ">=", ">") or len(e.args) != 2:
        return None
    a, b = e.args
    op = e.name
    if b.op == "col" and b.name == rn and a.op == "lit":
        a, b = b, a
        op = {"<=": ">=", "<": ">", ">=": "<=", ">": "<", "=": "="}[op]
    if not (a.op == "col" and a.name == rn and b.op == "lit" and isinstance(b.value, int)):
        return None
    n = b.value
    if op == "<=":
        return n
    if op == "<":
        return n - 1
    if op == "=" and n == 1:
        return 1
    raise NotSupportedYet(f"Top-N rank range {e.sql()} (ranks must start at 1: rn <= N)")


def _uses(e: Expression, name: str) -> bool:
    return (e.op == "col" and e.name in (name, "*")) or any(_uses(a, name) for a in e.args)


def plan_top_n(
    inner_source: PlanNode,
    inner_select: list[Expression],
    outer_select: list[Expression],
    outer_where: Expression | None,
    final_only: bool,
) -> tuple[PlanNode, Expression | None]:
    """The Rank node for a ROW_NUMBER() subquery, and what is left of the outer WHERE."""
    found = over_item(inner_select)
    assert found is not None
    position, over, rn = found
    conditions = _conjuncts(outer_where)
    bounds = [(c, b) for c in conditions if (b := _rank_bound(c, rn)) is not None]
    if not bounds:
        raise NotSupportedYet(f"OVER windows: ROW_NUMBER() runs only as Top-N, with WHERE {rn} <= N in the "
                              f"enclosing query")
    rank_end = min(b for _, b in bounds)
    rest = [c for c in conditions if all(c is not r for r, _ in bounds)]
    remaining = None
    for c in rest:
        remaining = c if remaining is None else remaining & c
    output_rank = any(_uses(e, rn) for e in outer_select) or (remaining is not None and _uses(remaining, rn))
    items = builder.expand_star(inner_select[:position] + inner_select[position + 1:], inner_source)
    partition_count, flags = over.value
    keys = list(over.args)
    for k in keys:
        if k.op != "col":
            raise NotSupportedYet(f"ROW_NUMBER() OVER (PARTITION BY/ORDER BY {k.sql()}): only columns")
        column_index(k.name, inner_source.columns)
    names = [builder.output_name(e, i) for i, e in enumerate(items)]
    hidden = list(dict.fromkeys(k.name for k in keys if k.name not in names))
    calc = builder.select(inner_source, items + [col(h).alias(f"$rank_{h}") for h in hidden])
    calc_names = calc.names()

    def index_of(name: str) -> int:
        return calc_names.index(name) if name in names else calc_names.index(f"$rank_{name}")

    partition = [index_of(k.name) for k in keys[:partition_count]]
    order = [SortKey(index_of(k.name), desc, nulls_first)
             for k, (desc, nulls_first) in zip(keys[partition_count:], flags, strict=True)]
    node: PlanNode = _rank(calc, partition, order, rank_end, output_rank, final_only, rn, RANK_CALLS[over.name])
    bounds = window_bounds(calc, partition)
    if bounds is not None and not calc.updating and rank_end is not None:
        assert isinstance(node, RankNode)
        node = window_rank(node, bounds[1])  # window Top-N / window deduplication: once per window, insert-only
    if hidden:
        keep = [n for n in node.names() if not n.startswith("$rank_")]
        node = CalcNode([c for c in node.columns if not c[0].startswith("$rank_")], input=node,
                        projections=[col(n) for n in keep])
    return node, remaining


def _rank(calc: PlanNode, partition: list[int], order: list[SortKey], rank_end: int | None, output_rank: bool,
          final_only: bool, rn: str = "rn", rank_type: str = "ROW_NUMBER") -> RankNode:
    if calc.updating and rank_end is None:
        raise NotSupportedYet("ORDER BY without LIMIT over an updating input")
    columns = list(calc.columns) + ([(rn, DataTypes.BIGINT(False))] if output_rank else [])
    deduplicate = None
    rowtime = False
    if rank_end == 1 and not output_rank and len(order) == 1 and rank_type == "ROW_NUMBER" and not calc.updating:
        t = calc.columns[order[0].index][1]
        if t.time_attr is not None:
            deduplicate = "last" if order[0].descending else "first"
            rowtime = t.time_attr == "ROWTIME"
    return RankNode(columns, input=calc, partition=partition, order=order, rank_end=rank_end,
                    output_rank=output_rank, deduplicate=deduplicate, rowtime=rowtime, final_only=final_only,
                    rank_type=rank_type)


def hidden_sort_columns(parts: Any) -> list[Expression]:
    """ORDER BY columns missing from a plain select list (Flink sorts by input columns too): the extra
    select items that carry them, named `$sort_<column>`."""
    if not parts.order_by or parts.distinct or parts.group_by is not None:
        return []
    if any(e.op == "col" and e.name == "*" for e in parts.select):
        return []
    names = {builder.output_name(e, i) for i, e in enumerate(parts.select)}
    missing = [e.name for e, _, _ in parts.order_by if e.op == "col" and e.name not in names]
    return [col(n).alias(f"$sort_{n}") for n in dict.fromkeys(missing)]


def sort_limit(node: PlanNode, order_by: list[tuple[Expression, bool, bool]], limit: int | None,
               final_only: bool, hidden: int = 0) -> PlanNode:
    """ORDER BY and LIMIT of a query; the last `hidden` columns carry ORDER BY columns the result drops."""
    order: list[SortKey] = []
    names = node.names()
    for e, desc, nulls_first in order_by:
        if e.op != "col":
            raise NotSupportedYet(f"ORDER BY {e.sql()} (order by columns)")
        name = e.name if e.name in names or f"$sort_{e.name}" not in names else f"$sort_{e.name}"
        order.append(SortKey(column_index(name, node.columns), desc, nulls_first))
    if limit is None and not final_only:
        t = node.columns[order[0].index][1]
        if t.time_attr is not None and not order[0].descending:
            raise NotSupportedYet("ORDER BY a time attribute in streaming mode (temporal sort)")
        raise TableException("Sort on a non-time-attribute field is not supported.")
    ranked: PlanNode = _rank(node, [], order, limit, False, final_only)
    if hidden:
        kept = ranked.columns[: len(ranked.columns) - hidden]
        ranked = CalcNode(kept, input=ranked, projections=[col(n) for n, _ in kept])
    return ranked
