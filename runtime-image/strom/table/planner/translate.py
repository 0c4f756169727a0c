"""Plans onto DataStream operators: Values/TableSourceScan -> a source, Calc -> map (+ filter),
GroupAggregate -> key_by + GroupAggFunction (a keyed process function with ValueState). Rows travel as
`Row`s carrying their RowKind; every operator's uid derives from its plan digest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strom.common.row import Row
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream.data_stream import DataStream
from strom.table.connectors import BlackHoleSink, DatagenSpec
from strom.table.errors import NotSupportedYet
from strom.table.planner.group_agg import GlobalGroupMarker, GroupAggFunction
from strom.table.planner.plan import CalcNode, GroupAggregateNode, PlanNode, SourceNode, UnionAllNode
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar
from strom.table.planner.values import java_string


def translate(node: PlanNode, env: Any, memo: dict[str, DataStream] | None = None) -> DataStream:
    """A sub-plan that occurs twice (a view read twice, a self-union) is translated once and its stream
    shared, as Flink reuses common sub-plans; so every uid in the job is distinct."""
    memo = {} if memo is None else memo
    key = node.digest()
    if key not in memo:
        memo[key] = _translate(node, env, memo)
    return memo[key]


def _translate(node: PlanNode, env: Any, memo: dict[str, DataStream]) -> DataStream:
    if isinstance(node, SourceNode):
        return _source(node, env)
    if isinstance(node, CalcNode):
        assert node.input is not None
        return _calc(node, translate(node.input, env, memo))
    if isinstance(node, GroupAggregateNode):
        assert node.input is not None
        return _group_aggregate(node, translate(node.input, env, memo))
    if isinstance(node, UnionAllNode):
        first, *rest = (translate(i, env, memo) for i in node.union_inputs)
        names = node.names()
        renamed = [ds.map(_CalcMap([_getter(k) for k in range(len(names))], names)).name("Calc[union-names]").uid(
            node.uid(f"union-input-{i + 1}")) for i, ds in enumerate(rest)]
        return first.union(*renamed)
    raise NotSupportedYet(f"plan node {type(node).__name__}")


def _source(node: SourceNode, env: Any) -> DataStream:
    names = node.names()
    if node.elements is not None:
        rows = [make_row(values, tuple(names)) for values in node.elements]
        return env.from_collection(rows).name(f"Values[{node.table_name}]").uid(node.uid("values"))
    if node.options.get("connector") == "datagen":
        from strom.connectors.datagen import DataGeneratorSource

        spec = DatagenSpec(node.table_name, node.columns, node.options)
        src = DataGeneratorSource(spec, spec.count, spec.rate)
        return env.from_source(src, WatermarkStrategy.no_watermarks(), f"TableSourceScan[{node.table_name}]").uid(
            node.uid("source")
        )
    raise NotSupportedYet(f"reading from connector {node.options.get('connector')!r} (table {node.table_name!r})")


class _CalcMap:
    """Projection of one row, keeping its RowKind."""

    def __init__(self, fns: list[Callable[[Any], Any]], names: list[str]) -> None:
        self.fns = fns
        self.names = tuple(names)

    def __call__(self, row: Any) -> Row:
        return make_row([f(row) for f in self.fns], self.names, row.get_row_kind())


def _getter(k: int) -> Callable[[Any], Any]:
    return lambda row: row[k]


def _calc(node: CalcNode, ds: DataStream) -> DataStream:
    assert node.input is not None
    columns = node.input.columns
    if node.condition is not None:
        pred, _ = compile_scalar(node.condition, columns)
        ds = ds.filter(lambda row, p=pred: p(row) is True).name("Calc[where]").uid(node.uid("calc-filter"))
    fns = [compile_scalar(e, columns)[0] for e in node.projections]
    return ds.map(_CalcMap(fns, node.names())).name("Calc[select]").uid(node.uid("calc"))


def _group_aggregate(node: GroupAggregateNode, ds: DataStream) -> DataStream:
    keys = list(node.keys)
    fn = GroupAggFunction(len(keys), list(node.aggs), node.names(), node.final_only)
    assert keys == list(range(len(keys))), "the planner puts group keys first: the function reads them by position"
    if node.final_only and not keys:
        marker = ds.get_execution_environment().from_collection([GlobalGroupMarker()])
        ds = ds.union(marker.uid(node.uid("global-group-marker")))
    keyed = ds.key_by(lambda row, k=len(keys): tuple(row[:k]))
    return keyed.process(fn).name(node.describe()).uid(node.uid("group-aggregate"))


def changelog_string(row: Row) -> str:
    """A row as Flink's print connector prints it: `+I[Mary, 1]`."""
    return f"{_SHORT[row.get_row_kind().value]}[{', '.join(java_string(v) for v in row)}]"


_SHORT = ("+I", "-U", "+U", "-D")


def print_sink(ds: DataStream, options: dict[str, str], uid: str) -> None:
    mapped = ds.map(changelog_string).name("PrintFormat").uid(uid + "-format")
    identifier = options.get("print-identifier")
    if options.get("standard-error", "false").lower() == "true":
        sink = mapped.print_to_err(identifier)
    else:
        sink = mapped.print(identifier)
    sink.uid(uid)
    if "sink.parallelism" in options:
        sink.set_parallelism(int(options["sink.parallelism"]))


def blackhole_sink(ds: DataStream, uid: str) -> None:
    ds.add_sink(BlackHoleSink()).name("BlackHole").uid(uid)
