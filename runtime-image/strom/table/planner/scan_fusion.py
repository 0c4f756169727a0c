"""Projection, filter and watermark push-down into a source of tagged events, fused with the Calcs above it.

A source such as Nexmark's emits events of several kinds as ONE table: a tag column (`event_type`) and one ROW
column per kind, NULL for the other kinds. A query reads one kind through a view (`WHERE event_type = 2`) and a
few of its fields. Unfused, every event is built as a full row (nested ROWs included), the computed rowtime
column's Calc builds another, the watermark assigner reads it, and the view's and the query's Calcs build more.

Here, as Flink's optimizer pushes projections, filters and watermarks into a source that supports them
(SupportsProjectionPushDown, SupportsFilterPushDown, SupportsWatermarkPushDown) and then generates one Calc:
  * the Calc chain (computed columns, the view, the query) is merged into one Calc over the source's columns;
  * for each event kind (an `EventBranch` the connector declares) the merged expressions are specialised: the
    tag is a constant, other kinds' ROW columns are NULL, this kind's fields read the event itself, and constant
    sub-expressions are folded, so `CASE WHEN event_type = 0 THEN person.dateTime .. END` becomes `bid.dateTime`
    and `event_type = 2` becomes TRUE (or FALSE: no row is built for that kind at all);
  * the watermark is assigned on the events themselves, before any filter, so it advances on every event as
    the unfused WatermarkAssigner does (the rowtime is the specialised rowtime expression, NULL refused).

Only what cannot change results is fused: a source read by one consumer only (a shared source keeps one
scan), inner Calcs of cheap deterministic expressions (calc_codegen's rule), `WATERMARK FOR t AS t - INTERVAL`
(whole milliseconds), STREAMING. Rows keep +I (the source is insert-only). The remaining expressions compile
through calc_codegen's generator, so NULL handling is the interpreter's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from strom.common.row import Row, RowKind, make_row
from strom.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from strom.datastream.functions import FlatMapFunction
from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.expressions import Expression
from strom.table.planner import calc_codegen
from strom.table.planner.event_time import RowtimeExtractor, SqlWatermarkGenerator, rowtime_offset_ms
from strom.table.planner.plan import CalcNode, PlanNode, SourceNode, WatermarkAssignerNode
from strom.table.planner.scalar import Columns, column_index, compile_scalar
from strom.table.types import DataType

CONSUMERS_KEY = "\0scan-consumers"  # translate's memo holds the per-source consumer counts under this key


@dataclass(frozen=True)
class EventBranch:
    """One kind of event a source emits (`type(event) is event_class`) and how the table's columns read it."""

    event_class: type
    constants: dict[str, Any]  # tag columns: their value for this kind (event_type = 2)
    row_column: str | None  # the ROW column this kind fills; the source's other ROW columns are NULL
    fields: dict[str, str]  # field of row_column -> Python source over the event `e` ("e[2]")
    millis: dict[str, str] = field(default_factory=dict)  # a TIMESTAMP field -> its epoch ms over `e` ("e[5]")


class TaggedEventSource(Protocol):
    """A connector factory whose table is a tagged union of event kinds (the push-down ability)."""

    def event_branches(self, ctx: Any) -> list[EventBranch]: ...

    def build_event_stream(self, ctx: Any, env: Any, uid: str) -> Any: ...


# -- matching ------------------------------------------------------------------------------------------------
@dataclass
class _Match:
    top: CalcNode
    watermark: WatermarkAssignerNode
    source: SourceNode
    offset_ms: int
    steps: list[calc_codegen.CalcStep]  # computed-column Calcs then the Calcs above the watermark, innermost first


def _usable(node: CalcNode) -> bool:
    from strom.table.planner.pandas_calc import has_pandas_call

    return not (has_pandas_call(node.condition) or any(has_pandas_call(p) for p in node.projections))


def _tagged(source: SourceNode) -> TaggedEventSource | None:
    if source.elements is not None or source.changelog:
        return None
    from strom.table.connectors import factory_for

    factory = factory_for(source.table_name.rsplit(".", 1)[-1], source.options)
    return factory if hasattr(factory, "event_branches") else None  # type: ignore[return-value]


def match(node: PlanNode) -> _Match | None:
    """`node` as Calc(s) over a WATERMARK over computed-column Calc(s) over a tagged-event source, else None."""
    if not isinstance(node, CalcNode) or not _usable(node):
        return None
    top_steps, below = calc_codegen.calc_chain(node, _usable)
    if not isinstance(below, WatermarkAssignerNode) or below.batch or below.watermark is None:
        return None
    assert below.input is not None
    offset = rowtime_offset_ms(below.watermark, below.names()[below.rowtime])
    if offset is None:
        return None
    inner: list[calc_codegen.CalcStep] = []
    current = below.input
    while isinstance(current, CalcNode):
        if not (_usable(current) and calc_codegen._fusable(current)):
            return None
        inner.insert(0, calc_codegen.CalcStep(current.input.columns if current.input else [], current.projections,
                                              current.condition))
        current = current.input  # type: ignore[assignment]
    if not isinstance(current, SourceNode) or _tagged(current) is None:
        return None
    return _Match(node, below, current, offset, inner + top_steps)


# -- merging the chain into one Calc over the source's columns ------------------------------------------------
def _strip(e: Expression) -> Expression:
    return _strip(e.args[0]) if e.op == "alias" else e


def substitute(e: Expression, columns: Columns, values: Sequence[Expression]) -> Expression:
    """`e` over `columns` with each column replaced by its expression in `values` (aliases dropped)."""
    if e.op == "alias":
        return substitute(e.args[0], columns, values)
    if e.op == "col":
        return values[column_index(e.name, columns)]
    if not e.args:
        return e
    return Expression(e.op, e.name, tuple(substitute(a, columns, values) for a in e.args), e.value, e.data_type,
                      e.is_distinct)


@dataclass
class MergedCalc:
    """The chain as one Calc over the source's columns: projections, the conditions of each step in order, and
    the rowtime column's expression."""

    columns: Columns
    projections: list[Expression]
    conditions: list[Expression]
    rowtime: Expression


def merge(m: _Match) -> MergedCalc | None:
    """None when a step's declared column type differs from its expression's type (substitution would then
    change the static types the generated arithmetic relies on)."""
    columns = list(m.source.columns)
    values: list[Expression] = [Expression("col", n) for n, _ in columns]
    conditions: list[Expression] = []
    n_computed = len(m.steps) - len(calc_codegen.calc_chain(m.top, _usable)[0])
    rowtime: Expression | None = None if n_computed else values[m.watermark.rowtime]
    for k, step in enumerate(m.steps):
        if step.condition is not None:
            conditions.append(substitute(step.condition, step.columns, values))
        out = [substitute(p, step.columns, values) for p in step.projections]
        next_columns = m.steps[k + 1].columns if k + 1 < len(m.steps) else m.top.columns
        for p, (_, declared) in zip(step.projections, next_columns, strict=True):
            if compile_scalar(p, step.columns)[1].base() != declared.base():
                return None
        values = out
        if k + 1 == n_computed:
            rowtime = values[m.watermark.rowtime]
    assert rowtime is not None
    return MergedCalc(columns, values, conditions, rowtime)


# -- specialising per event kind and folding constants --------------------------------------------------------
_TRUE = Expression("lit", value=True)
_FALSE = Expression("lit", value=False)
_CMP = {"=": lambda x, y: x == y, "<>": lambda x, y: x != y, "<": lambda x, y: x < y,
        "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}


def _lit(v: Any, t: DataType | None = None) -> Expression:
    return Expression("lit", value=v, data_type=t)


def _is_lit(e: Expression, *values: Any) -> bool:
    return e.op == "lit" and (not values or any(e.value is v for v in values))


def branch_columns(branch: EventBranch, columns: Columns) -> Columns:
    """The columns a specialised expression reads: `kind.field` per field of the kind's ROW, then the ROW."""
    if branch.row_column is None:
        return []
    t = dict(columns)[branch.row_column]
    return [(f"{branch.row_column}.{n}", ft.nullable_()) for n, ft in t.fields] + [(branch.row_column, t)]


class Specialiser:
    """Expressions over the source's columns, for the events of one branch: tag columns are constants, the
    other kinds' ROW columns NULL, this kind's fields the columns of `branch_columns`; constants folded where
    the result is exactly what the interpreter computes."""

    def __init__(self, branch: EventBranch, columns: Columns) -> None:
        self.branch = branch
        self.columns = list(columns)
        self.types = dict(columns)
        self.virtual = branch_columns(branch, columns)

    def __call__(self, e: Expression) -> Expression:
        if e.op == "alias":
            return self(e.args[0])
        if e.op == "col":
            t = self.types[e.name]
            if e.name in self.branch.constants:
                return _lit(self.branch.constants[e.name], t)
            if e.name != self.branch.row_column and t.root == "ROW":
                return _lit(None, t)
            if e.name != self.branch.row_column:
                raise _NotFusable(f"column {e.name!r} is neither a tag nor an event ROW")
            return e
        if e.op == "call" and e.name == "get_field" and e.args[0].op == "col" and e.args[0].name == \
                self.branch.row_column:
            names = self.types[e.args[0].name].field_names()
            name = names[e.value] if isinstance(e.value, int) else e.value
            return Expression("col", f"{self.branch.row_column}.{name}")
        if not e.args:
            return e
        out = Expression(e.op, e.name, tuple(self(a) for a in e.args), e.value, e.data_type, e.is_distinct)
        return self.fold(out, e)

    def type_of(self, e: Expression, *, specialised: bool) -> str:
        return compile_scalar(e, self.virtual if specialised else self.columns)[1].base()

    def fold(self, e: Expression, original: Expression) -> Expression:  # noqa: C901 - one rule per node kind
        if e.op != "call":
            return e
        a, name = e.args, e.name
        if name == "get_field" and _is_lit(a[0], None):
            return _lit(None, compile_scalar(original, self.columns)[1].nullable_())
        if name in _CMP and all(_is_lit(x) for x in a):
            x, y = a[0].value, a[1].value
            if x is None or y is None:
                return _lit(None, _boolean())
            if type(x) is int and type(y) is int:  # other types: the interpreter's comparison rules
                return _TRUE if _CMP[name](x, y) else _FALSE
            return e
        if name == "not" and _is_lit(a[0], None, True, False):
            return a[0] if a[0].value is None else (_FALSE if a[0].value else _TRUE)
        if name in ("is_null", "is_not_null") and _is_lit(a[0]):
            return _TRUE if (a[0].value is None) == (name == "is_null") else _FALSE
        if name in ("and", "or"):
            stop, neutral = (False, True) if name == "and" else (True, False)
            first, second = a
            if _is_lit(first, stop):
                return first  # the interpreter short-circuits here too: the second operand is never evaluated
            if _is_lit(first, neutral):
                return second  # TRUE AND x is x for x in TRUE, FALSE, NULL
            if _is_lit(second, neutral):
                return first
            return e
        if name == "case":
            return self._fold_case(e, original)
        return e

    def _fold_case(self, e: Expression, original: Expression) -> Expression:
        """Branches whose condition is a constant other than TRUE are dropped; a constant TRUE first condition
        selects its value. The CASE passes values through unchanged, but its static type may be wider than the
        value's (arithmetic over it is generated for that type): it folds only when the types are equal."""
        args = list(e.args)
        default = args[-1] if len(args) % 2 else None
        kept: list[Expression] = []
        for i in range(0, len(args) - 1, 2):
            cond, value = args[i], args[i + 1]
            if _is_lit(cond) and cond.value is not True:
                continue
            if _is_lit(cond, True):
                default = value
                break
            kept += [cond, value]
        case_type = compile_scalar(original, self.columns)[1]
        if not kept and default is None:
            return _lit(None, case_type)
        candidate = default if not kept else Expression(
            "call", "case", tuple(kept + ([default] if default is not None else [])), e.value, e.data_type)
        assert candidate is not None
        if candidate.op == "lit" and candidate.value is None:
            return _lit(None, case_type)
        try:
            same = self.type_of(candidate, specialised=True) == case_type.base()
        except Exception:  # noqa: BLE001 - a column only the unfolded form resolves: keep it unfolded
            same = False
        return candidate if same else e


def _boolean() -> DataType:
    from strom.table.types import DataTypes

    return DataTypes.BOOLEAN()


class _NotFusable(Exception):
    """The plan cannot be fused (the caller translates it unfused)."""


# -- code generation ------------------------------------------------------------------------------------------
class _Level(calc_codegen._Level):
    """calc_codegen's expression generator, with integer `%` and `/` inlined (Nexmark q2's MOD(auction, 123)):
    Java's truncating division agrees with Python's floor division when both operands are positive, the common
    case; other operands (and division by zero) go to the interpreter's rules."""

    def expr(self, e: Expression) -> str:
        if e.op == "call" and e.name in ("%", "/") and all(self.type_of(a).is_integral for a in e.args):
            g = self.gen
            x, y = g.tmp(), g.tmp()
            a, b = self.expr(e.args[0]), self.expr(e.args[1])
            slow = g.const(_integer_division(e.sql(), e.name))
            fast = f"{x} % {y}" if e.name == "%" else f"{x} // {y}"
            return (f"(None if {calc_codegen._both(x, a, y, b, e.args[1])} else "
                    f"({fast} if {x} >= 0 and {y} > 0 else {slow}({x}, {y})))")
        return super().expr(e)


def _integer_division(text: str, op: str) -> Callable[[int, int], int]:
    """scalar._arith's integral `/` and `%` (Java semantics: truncation toward zero)."""

    def f(x: int, y: int) -> int:
        if y == 0:
            raise ArithmeticError(f"{text}: division by zero")
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        return q if op == "/" else x - q * y

    return f


def generate(merged: MergedCalc, branches: Sequence[EventBranch], names: Sequence[str], rowtime_name: str,
             consts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Source of `calc(e)` (the output row as a 1-tuple, or None) and `rowtime(e, ts)` (epoch ms) over the
    events of `branches`, and their constants. Raises _NotFusable when an expression cannot be specialised."""
    gen = calc_codegen._Generator()
    calc = ["def calc(e):", "    t = type(e)"]
    rowtime = ["def rowtime(e, ts):", "    t = type(e)"]
    extractor = _RowtimeMillis(rowtime_name)
    for branch in branches:
        spec = Specialiser(branch, merged.columns)
        cls = gen.const(branch.event_class)
        calc.append(f"    if t is {cls}:")
        rowtime.append(f"    if t is {cls}:")
        refs = [branch.fields[c.partition(".")[2]] for c, _ in spec.virtual[:-1]]
        if spec.virtual:  # the whole ROW, built only where an expression reads it whole
            row_names = gen.const(tuple(spec.virtual[-1][1].field_names()))
            refs.append(f"{gen.const(make_row)}([{', '.join(refs)}], {row_names})")
        # the record timestamp
        level = _Level(gen, spec.virtual, refs, "_rb")
        rt = spec(merged.rowtime)
        direct = rt.op == "col" and rt.name.partition(".")[2] in branch.millis
        if direct:
            rowtime.append(f"        return {branch.millis[rt.name.partition('.')[2]]}")
        else:
            value = level.expr(rt)
            if level.needs_row:
                rowtime.append(f"        _rb = ({''.join(r + ', ' for r in refs)})")
            rowtime.append(f"        return {gen.const(extractor)}({value})")
        # the row
        level = _Level(gen, spec.virtual, refs, "_rb")
        conditions = [spec(c) for c in merged.conditions]
        if any(_is_lit(c) and c.value is not True for c in conditions):
            calc.append("        return None")  # filtered out at the source: no row built for this kind
            continue
        body = [f"        if {level.expr(c)} is not True:\n            return None" for c in conditions
                if not _is_lit(c, True)]
        values = [level.expr(spec(p)) for p in merged.projections]
        if level.needs_row:
            calc.append(f"        _rb = ({''.join(r + ', ' for r in refs)})")
        calc += body
        calc.append(f"        r = _new(_Row); r._values = [{', '.join(values)}]; r._fields = _names; r._row_kind = _I")
        calc.append("        return (r,)")
    for lines in (calc, rowtime):
        lines.append("    raise TypeError(f'not an event of this source: {t.__name__}')")
    out = dict(consts, **gen.consts, _Row=Row, _new=object.__new__, _I=RowKind.INSERT, _names=tuple(names))
    return "\n".join(calc) + "\n\n" + "\n".join(rowtime) + "\n", out


class _RowtimeMillis:
    """A rowtime value as epoch milliseconds; NULL refused as RowtimeExtractor refuses it (same message)."""

    def __init__(self, column: str) -> None:
        self.check = RowtimeExtractor(0, column)

    def __call__(self, value: Any) -> int:
        return self.check((value,), 0)


class GeneratedRowtime(TimestampAssigner):
    """The record timestamp of an event: the generated `rowtime(e, ts)`; pickles its source."""

    def __init__(self, source: str, consts: dict[str, Any]) -> None:
        self.source = source
        self.consts = consts
        self._fn = _compile(source, consts, "rowtime")

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "consts": self.consts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["source"], state["consts"])  # type: ignore[misc]

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return self._fn(value, record_timestamp)  # type: ignore[no-any-return]

    def extractor(self) -> Callable[[Any, int], int]:
        return self._fn


class FusedScanCalc(FlatMapFunction):  # type: ignore[type-arg]
    """An event as the query's row (a 1-tuple) or nothing: the generated `calc(e)`; pickles its source."""

    def __init__(self, source: str, consts: dict[str, Any]) -> None:
        self.source = source
        self.consts = consts
        self.flat_map = _compile(source, consts, "calc")  # type: ignore[method-assign]

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "consts": self.consts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["source"], state["consts"])  # type: ignore[misc]

    def flat_map(self, value: Any) -> Any:  # replaced per instance by the generated function
        raise AssertionError("unbound")


def _compile(source: str, consts: dict[str, Any], name: str) -> Callable[..., Any]:
    namespace = dict(consts)
    exec(compile(source, "<strom-fused-scan>", "exec"), namespace)  # noqa: S102 - generated from the plan
    return namespace[name]  # type: ignore[no-any-return]


# -- the plan node ---------------------------------------------------------------------------------------------
def _reads(e: Expression, out: set[str]) -> None:
    if e.op == "call" and e.name == "get_field" and e.args[0].op == "col":
        out.add(f"{e.args[0].name}.{e.value}")
        return
    if e.op == "col":
        out.add(e.name)
    for a in e.args:
        _reads(a, out)


def _conjuncts(e: Expression) -> list[Expression]:
    e = _strip(e)
    if e.op == "call" and e.name == "and":
        return _conjuncts(e.args[0]) + _conjuncts(e.args[1])
    return [e]


@dataclass(eq=False)
class PushedScanNode(PlanNode):
    """The source with what was pushed into it, as EXPLAIN shows it (Flink's TableSourceScan digest with
    project=[..], filter=[..], watermark=[..]); translated only as part of its FusedScanNode."""

    source: SourceNode | None = None
    project: list[str] = field(default_factory=list)
    filter: list[str] = field(default_factory=list)
    watermark: str = ""

    def describe(self) -> str:
        assert self.source is not None
        opts = ", ".join(f"{k}={v}" for k, v in sorted(self.source.options.items()))
        pushed = f"project=[{', '.join(self.project)}]"
        pushed += f", filter=[{', '.join(self.filter)}]" if self.filter else ""
        return (f"TableSourceScan(table=[{self.source.table_name}, {pushed}, watermark=[{self.watermark}]], "
                f"options=[{opts}])")


@dataclass(eq=False)
class FusedScanNode(PlanNode):
    """Calcs over a WATERMARK over computed columns over a tagged-event source, as one generated function
    per event kind (see the module docstring)."""

    match: _Match | None = None
    merged: MergedCalc | None = None
    branches: list[EventBranch] = field(default_factory=list)
    scan: PushedScanNode | None = None
    source_text: str = ""
    consts: dict[str, Any] = field(default_factory=dict)

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.scan is not None
        return [self.scan]

    def describe(self) -> str:
        assert self.merged is not None and self.scan is not None
        select = ", ".join(f"{e.sql()} AS {n}" for e, n in zip(self.merged.projections, self.names(), strict=True))
        pushed = set(self.scan.filter)
        rest = [c.sql() for cond in self.merged.conditions for c in _conjuncts(cond) if c.sql() not in pushed]
        where = f", where=[{' AND '.join(rest)}]" if rest else ""
        return f"Calc(select=[{select}]{where})"


def fuse(node: PlanNode, consumers: dict[str, int] | None) -> FusedScanNode | None:
    """`node` fused with the tagged-event source below it, or None (then it is translated as it is)."""
    if consumers is None or not isinstance(node, CalcNode):
        return None
    m = match(node)
    if m is None or consumers.get(m.source.digest(), 0) != 1:
        return None
    merged = merge(m)
    if merged is None:
        return None
    factory = _tagged(m.source)
    assert factory is not None
    branches = factory.event_branches(source_context(m.source))
    rowtime_name = m.watermark.names()[m.watermark.rowtime]
    try:
        source_text, consts = generate(merged, branches, node.names(), rowtime_name, factory_consts(factory))
    except (_NotFusable, ValidationException, NotSupportedYet):
        return None  # translated unfused, which reports the query's own error if it has one
    tags = {k for b in branches for k in b.constants}
    read: set[str] = set()
    for e in [*merged.projections, *merged.conditions, merged.rowtime]:
        _reads(e, read)
    order = [n for n, t in merged.columns for n in ([n] if t.root != "ROW" else [n, *(f"{n}.{f}" for f in
                                                                                     t.field_names())])]
    filters = []
    for cond in merged.conditions:
        for c in _conjuncts(cond):
            cols: set[str] = set()
            _reads(c, cols)
            if cols and cols <= tags:
                filters.append(c.sql())
    assert m.watermark.watermark is not None
    scan = PushedScanNode(list(m.source.columns), source=m.source, project=[n for n in order if n in read],
                          filter=filters,
                          watermark=f"{rowtime_name} := {merged.rowtime.sql()}, {m.watermark.watermark.sql()}")
    return FusedScanNode(list(node.columns), match=m, merged=merged, branches=branches, scan=scan,
                         source_text=source_text, consts=consts)


def factory_consts(factory: Any) -> dict[str, Any]:
    """Names the connector's field expressions use (e.g. the epoch for TIMESTAMP fields)."""
    return dict(getattr(factory, "event_consts", dict)())


def source_context(node: SourceNode) -> Any:
    from strom.table.connectors import TableContext

    return TableContext(node.table_name.rsplit(".", 1)[-1], list(node.columns), dict(node.options),
                        node.primary_key, node.partition_keys, node.table_name)


def count_sources(roots: Sequence[PlanNode]) -> dict[str, int]:
    """How many times each source (by digest) is read in these plans, a shared sub-plan counted per reader:
    a source read more than once keeps one scan for all its readers instead of being fused into each."""
    counts: dict[str, int] = {}
    stack = list(roots)
    while stack:
        n = stack.pop()
        if isinstance(n, SourceNode):
            key = n.digest()
            counts[key] = counts.get(key, 0) + 1
        stack.extend(n.inputs)
    return counts


def build_stream(node: FusedScanNode, env: Any, *, interval_ms: int, idle_ms: int) -> Any:
    """source (events) -> timestamps and watermarks on every event -> the generated Calc (rows of one kind)."""
    m = node.match
    assert m is not None
    factory = _tagged(m.source)
    assert factory is not None
    events = factory.build_event_stream(source_context(m.source), env, m.source.uid("source"))
    offset = m.offset_ms
    strategy = WatermarkStrategy.for_generator(lambda: SqlWatermarkGenerator(_no_expression, interval_ms, offset))
    strategy = strategy.with_timestamp_assigner(GeneratedRowtime(node.source_text, node.consts))
    if idle_ms:
        strategy = strategy.with_idleness(idle_ms)
    stamped = events.assign_timestamps_and_watermarks(strategy).name(m.watermark.describe()).uid(
        m.watermark.uid("watermark-assigner"))
    parallelism = events._t.parallelism
    if parallelism is not None:
        stamped.set_parallelism(parallelism)
    out = stamped.flat_map(FusedScanCalc(node.source_text, node.consts)).name("Calc[fused-scan]").uid(
        m.top.uid("calc"))
    if parallelism is not None:
        out.set_parallelism(parallelism)
    return out


def _no_expression(row: Any) -> Any:
    raise AssertionError("the watermark is the record timestamp less the offset")


def with_pushdown(root: PlanNode) -> PlanNode:
    """The plan as it runs, for EXPLAIN: each fusable Calc chain replaced by its FusedScanNode (shallow copies of
    the nodes above it; the plan itself is left as it is)."""
    if not calc_codegen.ENABLED:
        return root
    counts = count_sources([root])

    def rewrite(node: PlanNode) -> PlanNode:
        fused = fuse(node, counts)
        if fused is not None:
            return fused
        children = node.inputs
        new = [rewrite(c) for c in children]
        if all(a is b for a, b in zip(children, new, strict=True)):
            return node
        replaced = {id(a): b for a, b in zip(children, new, strict=True)}
        clone = copy.copy(node)
        for name, value in vars(node).items():
            if id(value) in replaced:
                setattr(clone, name, replaced[id(value)])
            elif isinstance(value, list) and any(id(v) in replaced for v in value):
                setattr(clone, name, [replaced.get(id(v), v) for v in value])
        return clone

    return rewrite(root)
