"""Table aggregate functions (`udtaf`, `GroupedTable.flat_aggregate`), as Flink's GroupTableAggFunction: per
group key an accumulator in state; each input row accumulates (+I/+U) or retracts (-U/-D, the function's
retract); the group's rows are `emit_value(accumulator)`. Streaming emits, per input row, -D of every row the
group emitted before and +I of every row it emits now (Python table aggregates have no incremental emit);
a group whose last row was retracted emits only the -D rows. BATCH (`final_only`): each group's rows once
at the end of the input.

A call without arguments (`flat_aggregate(top2)`) passes the whole input row, as PyFlink does; with
arguments (`top2(col('a'))`) their values.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from strom.common.row import Row, RowKind
from strom.common.time import MAX_WATERMARK
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor
from strom.table.errors import ValidationException
from strom.table.expressions import Expression
from strom.table.planner.plan import Columns, PlanNode
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar


@dataclass(eq=False)
class TableAggregateNode(PlanNode):
    input: PlanNode | None = None
    keys: list[int] = field(default_factory=list)
    function: Any = None  # the udtaf wrapper
    args: list[Expression] | None = None  # None: the whole input row
    final_only: bool = False

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    @property
    def updating(self) -> bool:
        return not self.final_only

    def describe(self) -> str:
        assert self.input is not None
        names = self.input.names()
        args = "*" if self.args is None else ", ".join(a.sql() for a in self.args)
        return (f"GroupTableAggregate(groupBy=[{', '.join(names[k] for k in self.keys)}], "
                f"select=[{self.function.name}({args})], output=[{', '.join(self.names())}])")

    def build_stream(self, streams: list[Any]) -> Any:
        (ds,) = streams
        keyed = ds.key_by(lambda row, k=tuple(self.keys): tuple(row[i] for i in k))
        return keyed.process(GroupTableAggFunction(self)).name(self.describe()).uid(self.uid("table-aggregate"))


def table_aggregate(input_node: PlanNode, keys: list[Expression], call: Expression, final_only: bool,
                    names: list[str] | None = None) -> PlanNode:
    """`flat_aggregate(f)` / `flat_aggregate(f(args).alias(..))` over `input_node` grouped by column `keys`;
    `names` (from `f.alias(..)`) name the function's columns."""
    if call.op == "alias":
        names = [call.name]
    call = call.args[0] if call.op == "alias" else call
    if not (call.op == "call" and call.name == "udtaf"):
        raise ValidationException(f"flat_aggregate takes a table aggregate function (udtaf), got {call.sql()}")
    wrapper = call.value
    if input_node.updating and not callable(getattr(wrapper.function, "retract", None)):
        raise ValidationException(f"table aggregate function {wrapper.name!r} must implement retract(accumulator, "
                                  "*args): its input is an updating changelog")
    args = list(call.args) if call.args else None
    for a in args or []:
        compile_scalar(a, input_node.columns)
    in_names = input_node.names()
    key_indexes = []
    for k in keys:
        if k.op != "col" or k.name not in in_names:
            raise ValidationException(f"flat_aggregate: group keys must be columns of the table ({', '.join(in_names)})"
                                      f", got {k.sql()}")
        key_indexes.append(in_names.index(k.name))
    rt = wrapper.result_type
    fields: Columns = list(rt.fields) if rt.root == "ROW" else [("f0", rt)]
    if names is not None:
        if len(names) != len(fields):
            raise ValidationException(f"table aggregate function {wrapper.name!r} returns {len(fields)} columns, "
                                      f"got {len(names)} names")
        fields = [(n, t) for n, (_, t) in zip(names, fields, strict=True)]
    columns = [input_node.columns[i] for i in key_indexes] + fields
    return TableAggregateNode(columns, input=input_node, keys=key_indexes, function=wrapper, args=args,
                              final_only=final_only)


class GroupTableAggFunction(KeyedProcessFunction):
    def __init__(self, node: TableAggregateNode) -> None:
        assert node.input is not None
        self.wrapper = node.function
        self.args = None if node.args is None else [compile_scalar(a, node.input.columns)[0] for a in node.args]
        self.n_fields = len(node.columns) - len(node.keys)
        self.names = tuple(node.names())
        self.final_only = node.final_only

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("table-agg", Types.PICKLED_BYTE_ARRAY()))
        self.invoker = self.wrapper.invoker()

    def _emitted(self, key: tuple, acc: Any, kind: RowKind) -> list[Row]:
        f = self.wrapper.function
        out = []
        for value in self.invoker.call(f.emit_value, acc) or ():
            values = tuple(value) if isinstance(value, (tuple, list, Row)) else (value,)
            if len(values) != self.n_fields:
                raise ValidationException(f"table aggregate function {self.wrapper.name!r} emitted {value!r}; "
                                          f"expected {self.n_fields} fields")
            out.append(make_row((*key, *values), self.names, kind))
        return out

    def process_element(self, value: Any, ctx: Any) -> Iterator[Row]:
        f = self.wrapper.function
        key = tuple(ctx.get_current_key())
        stored = self.state.value()
        retract = value.get_row_kind() in (RowKind.UPDATE_BEFORE, RowKind.DELETE)
        if stored is None:
            if retract:
                return
            count, acc = 0, self.invoker.call(f.create_accumulator)
            if self.final_only:
                ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
        else:
            count, acc = stored
            if not self.final_only:
                yield from self._emitted(key, acc, RowKind.DELETE)
        args = (value,) if self.args is None else tuple(a(value) for a in self.args)
        if retract:
            if not callable(getattr(f, "retract", None)):
                raise ValidationException(f"table aggregate function {self.wrapper.name!r} must implement "
                                          "retract(accumulator, *args): its input is an updating changelog")
            self.invoker.call(f.retract, acc, *args)
            count -= 1
        else:
            self.invoker.call(f.accumulate, acc, *args)
            count += 1
        if count <= 0:
            self.state.clear()
            return
        self.state.update((count, acc))
        if not self.final_only:
            yield from self._emitted(key, acc, RowKind.INSERT)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Row]:
        stored = self.state.value()
        if stored is not None:
            yield from self._emitted(tuple(ctx.get_current_key()), stored[1], RowKind.INSERT)
        self.state.clear()
