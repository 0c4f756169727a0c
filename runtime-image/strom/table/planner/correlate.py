"""Table functions in FROM (Flink's Correlate): LATERAL TABLE(f(..)) AS T(a, b) in SQL and
Table.join_lateral / left_outer_join_lateral in the Table API. The plan node gets the input's columns and
then the function's; at run time a flat_map calls the function per row."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from strom.common.row import Row
from strom.table.errors import ValidationException
from strom.table.expressions import Expression
from strom.table.planner.plan import CorrelateNode, PlanNode
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar
from strom.table.types import DataTypes


def correlate(input_node: PlanNode, call: Expression, names: list[str] | None, left_outer: bool) -> CorrelateNode:
    """`call` is a udtf call (op "call", name "udtf"), possibly aliased (`f(col('s')).alias('w')`)."""
    if call.op == "alias":
        names = names or list(call.value or (call.name,))
        call = call.args[0]
    if call.op == "call" and call.name == "unnest":
        return _unnest(input_node, call, names, left_outer)
    if not (call.op == "call" and call.name == "udtf"):
        raise ValidationException(f"{call.sql()} is not a table function call (make one with udtf)")
    wrapper = call.value
    types = wrapper.result_types
    names = names or getattr(wrapper, "_result_names", None) or [f"f{i}" for i in range(len(types))]
    if len(names) != len(types):
        raise ValidationException(f"table function {wrapper.name!r} returns {len(types)} columns, "
                                  f"got {len(names)} names ({', '.join(names)})")
    for a in call.args:
        compile_scalar(a, input_node.columns)  # unknown columns fail now, naming the column
    clash = set(names) & set(input_node.names())
    if clash:
        raise ValidationException(f"table function {wrapper.name!r}: column {sorted(clash)[0]!r} already exists "
                                  "in the input; give the function's columns other names")
    out_types = [t.nullable_() for t in types] if left_outer else list(types)
    return CorrelateNode(list(input_node.columns) + list(zip(names, out_types, strict=True)), input=input_node,
                         call=call, left_outer=left_outer)


def _unnest(input_node: PlanNode, call: Expression, names: list[str] | None, left_outer: bool) -> CorrelateNode:
    """UNNEST(array): one row per element (an ARRAY<ROW<..>> element gives its fields as columns); UNNEST(map):
    one row per entry (key, value); a NULL or empty one gives none (LEFT JOIN .. ON TRUE: one row of NULLs).
    WITH ORDINALITY adds the 1-based position as a last INT NOT NULL column (Flink's `ORDINALITY`)."""
    _, t = compile_scalar(call.args[0], input_node.columns)
    if t.root not in ("ARRAY", "MAP"):
        raise ValidationException(f"UNNEST({call.args[0].sql()}): {call.args[0].sql()} is {t}, not an ARRAY or a MAP")
    element = t.fields[0][1]
    if t.root == "MAP":
        fields = [(n, ft) for n, ft in t.fields]
    else:
        fields = list(element.fields) if element.root == "ROW" else [("EXPR$0", element)]
    if call.value == "ordinality":
        fields.append(("ORDINALITY", DataTypes.INT(False)))
    types = [ft for _, ft in fields]
    names = names or [n for n, _ in fields]
    if len(names) != len(types):
        raise ValidationException(f"UNNEST({call.args[0].sql()}) gives {len(types)} columns, got {len(names)} names "
                                  f"({', '.join(names)})")
    clash = set(names) & set(input_node.names())
    if clash:
        raise ValidationException(f"UNNEST: column {sorted(clash)[0]!r} already exists in the input; name the "
                                  "element otherwise (AS t(name))")
    out = [ft.nullable_() for ft in types] if left_outer else list(types)
    return CorrelateNode(list(input_node.columns) + list(zip(names, out, strict=True)), input=input_node, call=call,
                         left_outer=left_outer)


class CorrelateFunction:
    """flat_map: the input row's values followed by each row the table function yields."""

    def __init__(self, node: CorrelateNode) -> None:
        assert node.input is not None and node.call is not None
        self.args = [compile_scalar(a, node.input.columns)[0] for a in node.call.args]
        self.unnest = node.call.name == "unnest"
        self.width = len(node.columns) - len(node.input.columns)
        if self.unnest:  # ARRAY<ROW<..>>: each element's fields are the columns; MAP: (key, value)
            array_type = compile_scalar(node.call.args[0], node.input.columns)[1]
            self.map_entries = array_type.root == "MAP"
            self.row_elements = not self.map_entries and array_type.fields[0][1].root == "ROW"
            self.ordinality = node.call.value == "ordinality"
        else:
            wrapper = node.call.value
            self.invoker = wrapper.invoker()
            self.width = len(wrapper.result_types)
        self.left_outer = node.left_outer
        self.names = tuple(node.names())

    def _rows(self, values: list[Any]) -> list[tuple[Any, ...]]:
        result = self.invoker.func.eval(*values)
        out = []
        for r in ([] if result is None else result):
            t = tuple(r) if isinstance(r, (tuple, list, Row)) else (r,)
            if len(t) != self.width:
                raise ValueError(f"yielded {r!r}: {len(t)} values, the function declares {self.width} columns")
            out.append(t)
        return out

    def _unnested(self, value: Any) -> list[tuple[Any, ...]]:
        if not value:
            return []
        if self.map_entries:
            produced = list(value.items())
        elif self.row_elements:
            width = self.width - self.ordinality
            produced = [tuple(e) if e is not None else (None,) * width for e in value]
        else:
            produced = [(e,) for e in value]
        if self.ordinality:
            return [(*t, i) for i, t in enumerate(produced, 1)]
        return produced

    def __call__(self, row: Row) -> Iterator[Row]:
        values = [g(row) for g in self.args]
        if self.unnest:
            produced = self._unnested(values[0])
        else:
            produced = self.invoker.call(self._rows, values)  # the generator runs inside, so its errors are named
        kind = row.get_row_kind()
        for t in produced:
            yield make_row((*row, *t), self.names, kind)
        if not produced and self.left_outer:
            yield make_row((*row, *([None] * self.width)), self.names, kind)
