"""Plans onto DataStream operators: Values/TableSourceScan -> a source, Calc -> map (+ filter),
GroupAggregate -> key_by + GroupAggFunction (a keyed process function with ValueState). Rows travel as
`Row`s carrying their RowKind; every operator's uid derives from its plan digest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from strom.common.config_options import TABLE_COLUMNAR_ENABLED
from strom.common.row import Row
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream.data_stream import DataStream
from strom.datastream.functions import ProcessFunction
from strom.graph.transformations import OperatorDescriptor
from strom.table.errors import NotSupportedYet
from strom.table.planner import calc_codegen, scan_fusion
from strom.table.planner.columnar_calc import columnar_bundle, compile_columnar
from strom.table.planner.correlate import CorrelateFunction
from strom.table.planner.event_time import (
    RowtimeExtractor,
    SqlWatermarkGenerator,
    WindowAggAccumulate,
    WindowAggEmit,
    WindowTableFunction,
    from_millis,
    rowtime_offset_ms,
    window_assigner,
)
from strom.table.planner.group_agg import GlobalGroupMarker, GroupAggFunction
from strom.table.planner.interval_join import IntervalJoinFunction
from strom.table.planner.lookup_join import LookupJoinNode, translate_lookup_join
from strom.table.planner.over_agg import OverAggFunction
from strom.table.planner.pandas_calc import has_pandas_call, pandas_calc_stream
from strom.table.planner.plan import (
    CalcNode,
    CorrelateNode,
    DataStreamScanNode,
    GroupAggregateNode,
    IntervalJoinNode,
    JoinNode,
    OverAggregateNode,
    PlanNode,
    RankNode,
    SourceNode,
    UnionAllNode,
    WatermarkAssignerNode,
    WindowAggregateNode,
    WindowTableFunctionNode,
)
from strom.table.planner.rank import DeduplicateFunction, TopNFunction
from strom.table.planner.retract_rank import RetractableTopNFunction
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar
from strom.table.planner.streaming_join import StreamingJoinFunction


def translate(node: PlanNode, env: Any, memo: dict[str, Any] | None = None) -> DataStream:
    """A sub-plan that occurs twice (a view read twice, a self-union) is translated once and its stream
    shared, as Flink reuses common sub-plans; so every uid in the job is distinct. A source read once is fused
    with the Calcs over it (scan_fusion; with several roots, the caller counts readers over all of them)."""
    if memo is None:
        memo = {scan_fusion.CONSUMERS_KEY: scan_fusion.count_sources([node])}
    key = node.digest()
    if key not in memo:
        memo[key] = _translate(node, env, memo)
    return memo[key]


def _translate(node: PlanNode, env: Any, memo: dict[str, Any]) -> DataStream:
    build = getattr(node, "build_stream", None)
    if build is not None:  # a node whose planner module owns its operator (temporal join, window rank, ...)
        return build([translate(i, env, memo) for i in node.inputs])  # type: ignore[no-any-return]
    if isinstance(node, SourceNode):
        return _source(node, env)
    if isinstance(node, CalcNode):
        assert node.input is not None
        row_code = calc_codegen.ENABLED and not env.get_configuration().get(TABLE_COLUMNAR_ENABLED)
        fused = scan_fusion.fuse(node, memo.get(scan_fusion.CONSUMERS_KEY)) if row_code else None
        if fused is not None:  # projection, filter and watermark pushed into the source, one generated Calc
            assert fused.match is not None
            return scan_fusion.build_stream(fused, env, interval_ms=_auto_watermark_interval(env),
                                            idle_ms=_idle_timeout_ms(fused.match.watermark))
        if calc_codegen.ENABLED and not env.get_configuration().get(TABLE_COLUMNAR_ENABLED):
            steps, below = calc_codegen.calc_chain(node, lambda c: not _has_pandas(c))
            if steps:  # stacked Calcs fused into one generated function (Flink's Calc code generation)
                return _compiled_calc(node, steps, translate(below, env, memo))
        return _calc(node, translate(node.input, env, memo))
    if isinstance(node, GroupAggregateNode):
        assert node.input is not None
        return _group_aggregate(node, translate(node.input, env, memo))
    if isinstance(node, WatermarkAssignerNode):
        assert node.input is not None
        return _watermark_assigner(node, translate(node.input, env, memo), env)
    if isinstance(node, DataStreamScanNode):
        return _data_stream_scan(node)
    if isinstance(node, WindowAggregateNode):
        assert node.input is not None
        return _window_aggregate(node, translate(node.input, env, memo))
    if isinstance(node, OverAggregateNode):
        assert node.input is not None
        keyed = translate(node.input, env, memo).key_by(lambda row, p=tuple(node.partition): tuple(row[i] for i in p))
        return keyed.process(OverAggFunction(node)).name(node.describe()).uid(node.uid("over-aggregate"))
    if isinstance(node, RankNode):
        assert node.input is not None
        return _rank(node, translate(node.input, env, memo))
    if isinstance(node, WindowTableFunctionNode):
        assert node.input is not None and node.window is not None
        fn = WindowTableFunction(node.window, node.time_column, node.names())
        return translate(node.input, env, memo).flat_map(fn).name(node.describe()).uid(node.uid("window-tvf"))
    if isinstance(node, IntervalJoinNode):
        assert node.left is not None and node.right is not None
        return _interval_join(node, translate(node.left, env, memo), translate(node.right, env, memo))
    if isinstance(node, JoinNode):
        assert node.left is not None and node.right is not None
        return _join(node, translate(node.left, env, memo), translate(node.right, env, memo))
    if isinstance(node, LookupJoinNode):
        assert node.input is not None
        return translate_lookup_join(node, translate(node.input, env, memo), env.get_configuration())
    if isinstance(node, CorrelateNode):
        assert node.input is not None
        source = translate(node.input, env, memo)
        out = source.flat_map(CorrelateFunction(node)).name(node.describe()).uid(node.uid("correlate"))
        return _same_parallelism(out, source)
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
    from strom.table.connectors import factory_for

    ctx = source_context(node)
    return factory_for(ctx.name, ctx.options).build_source(ctx, env, node.uid("source"), batch=False)


def source_context(node: SourceNode) -> Any:
    """The connector's view of a scanned table (its name without the catalog and database)."""
    from strom.table.connectors import TableContext

    return TableContext(node.table_name.rsplit(".", 1)[-1], list(node.columns), dict(node.options),
                        node.primary_key, node.partition_keys, node.table_name)

class _CalcMap:
    """Projection of one row, keeping its RowKind."""

    def __init__(self, fns: list[Callable[[Any], Any]], names: list[str]) -> None:
        self.fns = fns
        self.names = tuple(names)

    def __call__(self, row: Any) -> Row:
        return make_row([f(row) for f in self.fns], self.names, row.get_row_kind())


def _has_pandas(node: CalcNode) -> bool:
    return has_pandas_call(node.condition) or any(has_pandas_call(p) for p in node.projections)


def _compiled_calc(node: CalcNode, steps: list[calc_codegen.CalcStep], ds: DataStream) -> DataStream:
    fn = calc_codegen.compile_calc(steps, node.names())
    out = ds.map(fn) if isinstance(fn, calc_codegen.CompiledCalcMap) else ds.flat_map(fn)
    return _same_parallelism(out.name("Calc[compiled]").uid(node.uid("calc")), ds)


def _getter(k: int) -> Callable[[Any], Any]:
    return lambda row: row[k]


def _calc(node: CalcNode, ds: DataStream) -> DataStream:
    assert node.input is not None
    columns = node.input.columns
    source = ds
    if has_pandas_call(node.condition) or any(has_pandas_call(p) for p in node.projections):
        return _same_parallelism(pandas_calc_stream(node, ds), source)
    config = ds.get_execution_environment().get_configuration()
    if config.get(TABLE_COLUMNAR_ENABLED):
        columnar = compile_columnar(columns, list(node.projections), node.condition, node.names())
        if columnar is not None:  # every expression has an Arrow kernel with Flink's semantics
            op = OperatorDescriptor("bundled_map", columnar, params=columnar_bundle(config))
            out = DataStream(ds._env, ds._one_input("Calc[columnar]", op, None))
            return _same_parallelism(out.name("Calc[columnar]").uid(node.uid("calc")), source)
    if node.condition is not None:
        pred, _ = compile_scalar(node.condition, columns)
        ds = ds.filter(lambda row, p=pred: p(row) is True).name("Calc[where]").uid(node.uid("calc-filter"))
        ds = _same_parallelism(ds, source)
    fns = [compile_scalar(e, columns)[0] for e in node.projections]
    out = ds.map(_CalcMap(fns, node.names())).name("Calc[select]").uid(node.uid("calc"))
    return _same_parallelism(out, source)


def _group_aggregate(node: GroupAggregateNode, ds: DataStream) -> DataStream:
    keys = list(node.keys)
    fn = GroupAggFunction(len(keys), list(node.aggs), node.names(), node.final_only)
    assert keys == list(range(len(keys))), "the planner puts group keys first: the function reads them by position"
    if node.final_only and not keys:
        marker = ds.get_execution_environment().from_collection([GlobalGroupMarker()])
        ds = ds.union(marker.uid(node.uid("global-group-marker")))
    keyed = ds.key_by(lambda row, k=len(keys): tuple(row[:k]))
    return keyed.process(fn).name(node.describe()).uid(node.uid("group-aggregate"))


def _watermark_assigner(node: WatermarkAssignerNode, ds: DataStream, env: Any) -> DataStream:
    assert node.input is not None and node.watermark is not None
    watermark_of, _ = compile_scalar(node.watermark, node.input.columns)
    interval = _auto_watermark_interval(env)
    if node.batch:
        strategy = WatermarkStrategy.no_watermarks()
    else:
        offset = rowtime_offset_ms(node.watermark, node.names()[node.rowtime])
        strategy = WatermarkStrategy.for_generator(lambda: SqlWatermarkGenerator(watermark_of, interval, offset))
    strategy = strategy.with_timestamp_assigner(RowtimeExtractor(node.rowtime, node.names()[node.rowtime]))
    idle_ms = _idle_timeout_ms(node)
    if idle_ms and not node.batch:
        strategy = strategy.with_idleness(idle_ms)
    out = ds.assign_timestamps_and_watermarks(strategy).name(node.describe()).uid(node.uid("watermark-assigner"))
    return _same_parallelism(out, ds)


def _idle_timeout_ms(node: WatermarkAssignerNode) -> int:
    """The source table's `scan.watermark.idle-timeout` (Flink's FLIP-296 option): a subtask that sees no row
    for that long is idle, so its watermark does not hold back the others (0: never idle)."""
    below: PlanNode | None = node.input
    while below is not None and not isinstance(below, SourceNode):
        below = below.inputs[0] if len(below.inputs) == 1 else None
    value = below.options.get("scan.watermark.idle-timeout") if below is not None else None
    if value is None:
        return 0
    from strom.common.config_options import parse_duration_ms

    return parse_duration_ms(value)


def _auto_watermark_interval(env: Any) -> int:
    from strom.common import config_options as opts

    return int(env.get_configuration().get(opts.AUTO_WATERMARK_INTERVAL))


class _StreamRecordToRow(ProcessFunction):
    """from_data_stream: a record (Row, tuple or atomic value) as a Row of the table's columns; metadata
    rowtime columns get the record's timestamp."""

    def __init__(self, physical: list[str], rowtime: list[int], names: list[str], keep_kind: bool = False) -> None:
        self.physical = physical
        self.rowtime = set(rowtime)
        self.names = tuple(names)
        self.keep_kind = keep_kind  # from_changelog_stream: a Row's RowKind is the change it describes

    def process_element(self, value: Any, ctx: Any) -> Iterator[Row]:
        if isinstance(value, Row) and getattr(value, "_fields", None):
            fields = [value[f] for f in self.physical]
        elif isinstance(value, tuple | Row):
            fields = list(value)
        else:
            fields = [value]
        it = iter(fields)
        out = []
        for i in range(len(self.names)):
            if i in self.rowtime:
                ts = ctx.timestamp()
                out.append(None if ts is None else from_millis(ts))
            else:
                out.append(next(it))
        if self.keep_kind and isinstance(value, Row):
            yield make_row(out, self.names, value.get_row_kind())
        else:
            yield make_row(out, self.names)


def _data_stream_scan(node: DataStreamScanNode) -> DataStream:
    fn = _StreamRecordToRow(node.physical, node.metadata_rowtime, node.names(), node.changelog)
    out = node.stream.process(fn).name(node.describe()).uid(node.uid("datastream-scan"))
    return _same_parallelism(out, node.stream)


def _same_parallelism(out: DataStream, ds: DataStream) -> DataStream:
    """Flink chains a conversion or watermark assigner to its input: the same parallelism, so that a
    single-subtask source's rows and watermarks stay in one order (lateness is then decided by event
    time alone, not by how rows were spread over subtasks)."""
    parallelism = ds._t.parallelism
    if parallelism is not None:
        out.set_parallelism(parallelism)
    return out


def _window_aggregate(node: WindowAggregateNode, ds: DataStream) -> DataStream:
    assert node.window is not None
    keys = list(node.keys)
    assert keys == list(range(len(keys))), "the planner puts group keys first: the key selector reads them by position"
    keyed = ds.key_by(lambda row, k=len(keys): tuple(row[:k]))
    windowed = keyed.window(window_assigner(node.window))
    out = windowed.aggregate(WindowAggAccumulate(list(node.aggs)), WindowAggEmit(node.names()))
    return out.name(node.describe()).uid(node.uid("window-aggregate"))


class _JoinKey:
    """A join key of one side; numbers compared across INT and DOUBLE keys hash as floats on both sides."""

    def __init__(self, indexes: list[int], as_float: list[bool]) -> None:
        self.indexes = indexes
        self.as_float = as_float

    def __call__(self, row: Any) -> tuple:  # hot path: called per record
        values = row._values if type(row) is Row else row  # the list itself: no Row.__getitem__ call per field
        if True in self.as_float:
            return tuple([float(values[i]) if f and values[i] is not None else values[i]
                          for i, f in zip(self.indexes, self.as_float)])  # noqa: B905 - equal by construction
        return tuple([values[i] for i in self.indexes])


def _join(node: JoinNode, left: DataStream, right: DataStream) -> DataStream:
    assert node.left is not None and node.right is not None
    as_float = [lt.root != rt.root and (lt.root in ("DOUBLE", "FLOAT") or rt.root in ("DOUBLE", "FLOAT"))
                for lt, rt in ((node.left.columns[a][1], node.right.columns[b][1])
                               for a, b in zip(node.left_keys, node.right_keys, strict=True))]
    connected = left.connect(right).key_by(_JoinKey(node.left_keys, as_float), _JoinKey(node.right_keys, as_float))
    return connected.process(StreamingJoinFunction(node)).name(node.describe()).uid(node.uid("join"))


def _interval_join(node: IntervalJoinNode, left: DataStream, right: DataStream) -> DataStream:
    """The DataStream interval join bounds right.ts - left.ts; the plan bounds left.ts - right.ts."""
    assert node.left is not None and node.right is not None
    as_float = [lt.root != rt.root and (lt.root in ("DOUBLE", "FLOAT") or rt.root in ("DOUBLE", "FLOAT"))
                for lt, rt in ((node.left.columns[a][1], node.right.columns[b][1])
                               for a, b in zip(node.left_keys, node.right_keys, strict=True))]
    keyed_left = left.key_by(_JoinKey(node.left_keys, as_float))
    keyed_right = right.key_by(_JoinKey(node.right_keys, as_float))
    joined = keyed_left.interval_join(keyed_right).between(-node.upper, -node.lower)
    return joined.process(IntervalJoinFunction(node)).name(node.describe()).uid(node.uid("interval-join"))


def _rank(node: RankNode, ds: DataStream) -> DataStream:
    assert node.input is not None
    fn: Any
    if node.deduplicate is not None:
        fn = DeduplicateFunction(node.deduplicate, node.order[0].index, node.rowtime, node.names(), node.final_only)
    elif node.input.updating or node.rank_type != "ROW_NUMBER":
        fn = RetractableTopNFunction(list(node.order), node.rank_end, node.output_rank, node.names(),
                                     node.final_only, node.rank_type, append_only=not node.input.updating)
    else:
        fn = TopNFunction(list(node.order), node.rank_end, node.output_rank, node.names(), node.final_only)
    keyed = ds.key_by(lambda row, p=tuple(node.partition): tuple(row[i] for i in p))
    return keyed.process(fn).name(node.describe()).uid(node.uid("rank"))

