"""Build plan nodes from expressions: the one place the Table API and the SQL translator meet.

`select` resolves names and derives types; a select with aggregates (and `aggregate` for GROUP BY)
becomes Flink's three-step plan: a Calc computing group keys and aggregate arguments, a
GroupAggregate, and a Calc evaluating the select list (and HAVING) over keys and aggregate values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from strom.table import decimals
from strom.table.errors import NotSupportedYet, TableException, ValidationException
from strom.table.expressions import AGGREGATES, Expression, col
from strom.table.planner.plan import (
    AggCall,
    CalcNode,
    Columns,
    GroupAggregateNode,
    PlanNode,
    UnionAllNode,
    WindowAggregateNode,
    WindowSpec,
)
from strom.table.planner.scalar import compile_scalar
from strom.table.types import DataType, DataTypes, wider_numeric


def output_name(e: Expression, position: int, unnamed: str = "EXPR$") -> str:
    """An unnamed select item is `EXPR$i` in SQL (Calcite's name) and `_ci` in the Table API (Flink's)."""
    if e.op == "alias":
        return e.name
    if e.op == "col":
        return e.name
    if e.op == "call" and e.name == "get_field" and isinstance(e.value, str):
        return e.value  # `bid.price` is named `price`, as in Flink
    return f"{unnamed}{position}"


def expand_star(exprs: list[Expression], input_node: PlanNode) -> list[Expression]:
    out: list[Expression] = []
    for e in exprs:
        if e.op == "col" and e.name == "*":
            out.extend(col(n) for n in input_node.names())
        else:
            out.append(e)
    return out


def _unique(names: list[str]) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise ValidationException(f"ambiguous column name {n!r} in the select list; give it an alias")
        seen.add(n)


def select(
    input_node: PlanNode,
    exprs: list[Expression],
    where: Expression | None = None,
    unnamed: str = "EXPR$",
    final_only: bool = False,
) -> PlanNode:
    exprs = expand_star(exprs, input_node)
    if any(e.contains_aggregate() for e in exprs):
        node = input_node if where is None else filter_(input_node, where)
        return aggregate(node, [], exprs, None, final_only=final_only, unnamed=unnamed)
    names = [output_name(e, i, unnamed) for i, e in enumerate(exprs)]
    _unique(names)
    columns = [(n, compile_scalar(e, input_node.columns)[1]) for n, e in zip(names, exprs, strict=True)]
    if where is not None:
        _check_condition(where, input_node.columns)
    return CalcNode(columns, input=input_node, projections=[_strip(e) for e in exprs], condition=where)


def filter_(input_node: PlanNode, condition: Expression) -> PlanNode:
    _check_condition(condition, input_node.columns)
    return CalcNode(list(input_node.columns), input=input_node,
                    projections=[col(n) for n in input_node.names()], condition=condition)


def rename(input_node: PlanNode, names: list[str]) -> PlanNode:
    if len(names) != len(input_node.columns):
        raise ValidationException(
            f"alias: the table has {len(input_node.columns)} columns ({', '.join(input_node.names())}), "
            f"got {len(names)} names"
        )
    _unique(names)
    return CalcNode([(n, t) for n, (_, t) in zip(names, input_node.columns, strict=True)], input=input_node,
                    projections=[col(n) for n in input_node.names()])


def _check_condition(condition: Expression, columns: Columns) -> None:
    if condition.contains_aggregate():
        raise ValidationException(f"aggregate in a WHERE condition: {condition.sql()} (use HAVING)")
    _, t = compile_scalar(condition, columns)
    if t.root != "BOOLEAN":
        raise ValidationException(f"condition {condition.sql()} is {t}, expected BOOLEAN")


def _strip(e: Expression) -> Expression:
    return e.args[0] if e.op == "alias" else e


def _agg_type(agg: Expression, arg_type: DataType | None) -> DataType:
    if agg.name == "count":
        return DataTypes.BIGINT(False)
    assert arg_type is not None
    if agg.name in ("sum", "avg") and not arg_type.is_numeric:
        raise ValidationException(f"{agg.sql()}: argument is {arg_type}, expected a numeric type")
    if arg_type.root == "DECIMAL" and agg.name in ("sum", "avg"):  # DECIMAL(38, s) / DECIMAL(38, max(6, s))
        return decimals.sum_type(arg_type) if agg.name == "sum" else decimals.avg_type(arg_type)
    return replace(arg_type.plain(), nullable=True)


def aggregate(
    input_node: PlanNode,
    group_exprs: list[Expression],
    select_exprs: list[Expression],
    having: Expression | None,
    final_only: bool,
    unnamed: str = "EXPR$",
) -> PlanNode:
    def node(pre: CalcNode, agg_columns: Columns, agg_calls: list[AggCall]) -> PlanNode:
        pandas = [c for c in agg_calls if c.udaf is not None and getattr(c.udaf, "func_type", "") == "pandas"]
        if pandas and not final_only:  # Flink's words: pandas UDAFs run in batch and in window aggregations only
            raise TableException(f"Pandas UDAFs are not supported in streaming mode currently ({pandas[0].text}: "
                                 "use a window aggregation, or batch mode)")
        return GroupAggregateNode(agg_columns, input=pre, keys=list(range(len(group_exprs))), aggs=agg_calls,
                                  final_only=final_only)

    return _aggregate(input_node, group_exprs, select_exprs, having, unnamed, node, [])


def window_aggregate(
    input_node: PlanNode,
    window: WindowSpec,
    group_exprs: list[Expression],
    select_exprs: list[Expression],
    having: Expression | None,
    window_columns: Columns,
    unnamed: str = "EXPR$",
) -> PlanNode:
    """GROUP BY a window (and `group_exprs`): a WindowAggregate whose rows end with `window_columns`
    (window_start, window_end, window_time under the names the query may use).

    SESSION's PARTITION BY columns must be grouped by: sessions are kept per group key (the window
    aggregate's key), so a partition column left out of GROUP BY would mix partitions into one session."""
    grouped = {g.name for g in group_exprs if g.op == "col"}
    missing = [p for p in window.partition if p not in grouped]
    if missing:
        raise ValidationException(f"SESSION window: PARTITION BY column {missing[0]!r} must be in GROUP BY "
                                  f"(GROUP BY window_start, window_end, {', '.join(window.partition)})")

    def node(pre: CalcNode, agg_columns: Columns, agg_calls: list[AggCall]) -> PlanNode:
        return WindowAggregateNode(agg_columns + window_columns, input=pre, window=window,
                                   keys=list(range(len(group_exprs))), aggs=agg_calls)

    return _aggregate(input_node, group_exprs, select_exprs, having, unnamed, node, window_columns)


def _aggregate(
    input_node: PlanNode,
    group_exprs: list[Expression],
    select_exprs: list[Expression],
    having: Expression | None,
    unnamed: str,
    make_node: Callable[[CalcNode, Columns, list[AggCall]], PlanNode],
    extra_columns: Columns,
) -> PlanNode:
    select_exprs = expand_star(select_exprs, input_node)
    names = [output_name(e, i, unnamed) for i, e in enumerate(select_exprs)]
    _unique(names)
    in_cols = input_node.columns
    # 1. Calc: group keys first, then aggregate arguments
    pre_exprs: list[Expression] = []
    pre_names: list[str] = []
    for i, g in enumerate(group_exprs):
        if g.contains_aggregate():
            raise ValidationException(f"aggregate in GROUP BY: {g.sql()}")
        compile_scalar(g, in_cols)
        pre_exprs.append(_strip(g))
        pre_names.append(g.name if g.op == "col" else f"$f{i}")
    aggs: list[Expression] = []
    for e in [*select_exprs, *([having] if having is not None else [])]:
        _collect_aggs(e, aggs)
    agg_calls: list[AggCall] = []
    for a in aggs:
        if a.name == "udaf":
            agg_calls.append(_udaf_call(a, input_node, in_cols, pre_exprs, pre_names))
            continue
        if a.name not in AGGREGATES:
            raise NotSupportedYet(f"aggregate function {a.name.upper()}")
        if not a.args or (a.args[0].op == "col" and a.args[0].name == "*"):
            agg_calls.append(AggCall(a.name, None, a.is_distinct, _agg_type(a, None), a.sql()))
            continue
        arg = a.args[0]
        if arg.contains_aggregate():
            raise ValidationException(f"nested aggregate {a.sql()}")
        _, arg_type = compile_scalar(arg, in_cols)
        texts = [p.sql() for p in pre_exprs]
        if arg.sql() in texts:
            index = texts.index(arg.sql())
        else:
            index = len(pre_exprs)
            pre_exprs.append(arg)
            pre_names.append(f"$f{index}")
        agg_calls.append(AggCall(a.name, index, a.is_distinct, _agg_type(a, arg_type), a.sql()))
    pre_columns = [(n, compile_scalar(e, in_cols)[1].plain()) for n, e in zip(pre_names, pre_exprs, strict=True)]
    pre = CalcNode(pre_columns, input=input_node, projections=pre_exprs)
    # 2. the aggregation: keys, then one column per distinct aggregate call (then a window's columns)
    key_count = len(group_exprs)
    agg_names = [f"$a{j}" for j in range(len(agg_calls))]
    agg_columns = pre_columns[:key_count] + [(n, a.data_type) for n, a in zip(agg_names, agg_calls, strict=True)]
    agg_node = make_node(pre, agg_columns, agg_calls)
    # 3. Calc over keys and aggregate values: the select list and HAVING
    mapping = {g.sql(): pre_names[i] for i, g in enumerate(pre_exprs[:key_count])}
    mapping.update({a.sql(): agg_names[j] for j, a in enumerate(aggs)})
    mapping.update({n: n for n, _ in extra_columns})
    post_exprs = [_rewrite(_strip(e), mapping, in_cols) for e in select_exprs]
    post_having = _rewrite(having, mapping, in_cols) if having is not None else None
    post_columns = [(n, compile_scalar(e, agg_node.columns)[1]) for n, e in zip(names, post_exprs, strict=True)]
    if post_having is not None:
        _check_condition(post_having, agg_node.columns)
    return CalcNode(post_columns, input=agg_node, projections=post_exprs, condition=post_having)


def _udaf_call(a: Expression, input_node: PlanNode, in_cols: Columns, pre_exprs: list[Expression],
               pre_names: list[str]) -> AggCall:
    """A Python AggregateFunction: its arguments travel as one tuple column computed by the Calc before it.
    Over an updating input it must implement retract, as Flink requires."""
    wrapper = a.value
    if a.is_distinct:
        raise NotSupportedYet(f"DISTINCT in a Python aggregate function call {a.sql()}")
    for arg in a.args:
        if arg.contains_aggregate():
            raise ValidationException(f"nested aggregate {a.sql()}")
        compile_scalar(arg, in_cols)
    if input_node.updating and not callable(getattr(wrapper.function, "retract", None)):
        raise ValidationException(f"aggregate function {wrapper.name!r} must implement retract(accumulator, *args): "
                                  "its input is an updating changelog")
    index = len(pre_exprs)
    pre_exprs.append(Expression("call", "udaf_args", a.args))
    pre_names.append(f"$f{index}")
    return AggCall("udaf", index, False, wrapper.result_type, a.sql(), udaf=wrapper)


def _collect_aggs(e: Expression, out: list[Expression]) -> None:
    if e.op == "agg":
        if all(a.sql() != e.sql() for a in out):
            out.append(e)
        return
    for a in e.args:
        _collect_aggs(a, out)


def _rewrite(e: Expression, mapping: dict[str, str], in_cols: Columns) -> Expression:
    text = e.sql()
    if text in mapping:
        return col(mapping[text])
    if e.op == "col":
        names = [n for n, _ in in_cols]
        if e.name not in names:
            raise ValidationException(f"unknown column {e.name!r}; available columns: {', '.join(names)}")
        raise ValidationException(f"column {e.name!r} is neither grouped nor aggregated (add it to GROUP BY)")
    if e.op in ("lit",) or not e.args:
        return e
    return Expression(e.op, e.name, tuple(_rewrite(a, mapping, in_cols) for a in e.args), e.value, e.data_type,
                      e.is_distinct)


def distinct(input_node: PlanNode, final_only: bool) -> PlanNode:
    """SELECT DISTINCT: a GroupAggregate over every column with no aggregate calls, as Flink plans it."""
    return aggregate(input_node, [col(n) for n in input_node.names()], [col(n) for n in input_node.names()], None,
                     final_only)


def union_all(inputs: list[PlanNode]) -> PlanNode:
    first = inputs[0]
    for other in inputs[1:]:
        if len(other.columns) != len(first.columns):
            raise ValidationException(
                f"UNION ALL: inputs have {len(first.columns)} and {len(other.columns)} columns"
            )
        for (n, a), (_, b) in zip(first.columns, other.columns, strict=True):
            if a.root != b.root and not (a.is_numeric and b.is_numeric):
                raise ValidationException(f"UNION ALL: column {n!r} is {a.base()} in one input, {b.base()} in another")
    columns = []
    for k, (n, t) in enumerate(first.columns):
        for other in inputs[1:]:
            if t.is_numeric:
                t = wider_numeric(t, other.columns[k][1])  # INT with BIGINT is BIGINT, as Flink widens
        columns.append((n, replace(t.plain(), nullable=any(i.columns[k][1].nullable for i in inputs))))
    return UnionAllNode(columns, union_inputs=list(inputs))
