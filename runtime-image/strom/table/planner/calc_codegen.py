"""Code generation of Calc (Flink's CalcCodeGenerator, in Python): a chain of projections and filters is
compiled into ONE Python function, generated as source text and compiled once per operator.

The interpreter (scalar.compile_scalar) builds a closure per expression node, so a row pays one Python call
per node; the generated function evaluates the whole chain inline. Semantics are the interpreter's exactly:
NULL in -> NULL out, three-valued AND/OR with the same short-circuit order, a filter passes only on TRUE.
Each expression is first compiled by the interpreter (which validates it and gives its type); node kinds
the generator does not inline call the interpreter's closure for that sub-expression, passed in as a
constant (CAST among them: its rules and session zone stay the interpreter's). Generated text holds only
column indexes, operator symbols and the literals None/True/False; every other value (numbers, strings, types,
closures) is a named constant, never user text.
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from strom.common.row import Row, make_row
from strom.datastream.functions import FlatMapFunction, MapFunction
from strom.table import decimals
from strom.table.expressions import Expression
from strom.table.planner.plan import CalcNode
from strom.table.planner.scalar import Columns, column_index, compile_scalar
from strom.table.types import DataType, wider_numeric, wrap_integer

ENABLED = True  # the benchmark flips it to measure the interpreter in the same process

_CMP_OPS = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class CalcStep:
    """One Calc of a chain: its input schema, projections and optional condition."""

    __slots__ = ("columns", "projections", "condition")

    def __init__(self, columns: Columns, projections: Sequence[Expression], condition: Expression | None) -> None:
        self.columns = list(columns)
        self.projections = list(projections)
        self.condition = condition


class _Level:
    """Generates the expressions of one Calc step: columns read from `row_var` (a list/tuple local)."""

    def __init__(self, gen: _Generator, columns: Columns, refs: list[str], fallback_var: str) -> None:
        self.gen = gen
        self.columns = list(columns)
        self.refs = refs  # how the generated code reads input column i
        self.fallback_var = fallback_var  # what an interpreter closure reads: the input Row itself, or a tuple
        self.used: set[int] = set()
        self.needs_row = False

    def type_of(self, e: Expression) -> DataType:
        return compile_scalar(e, self.columns)[1]

    def fallback(self, e: Expression) -> str:
        self.needs_row = True
        return f"{self.gen.const(compile_scalar(e, self.columns)[0])}({self.fallback_var})"

    def expr(self, e: Expression) -> str:  # noqa: C901 - one branch per inlined node kind
        g = self.gen
        if e.op == "alias":
            return self.expr(e.args[0])
        if e.op == "col":
            i = column_index(e.name, self.columns)
            self.used.add(i)
            return self.refs[i]
        if e.op == "lit":
            v = e.value
            if v is None or type(v) is bool:  # ints and strings as constants: `1 is None` would warn
                return repr(v)
            return g.const(v)
        if e.op != "call":
            return self.fallback(e)
        name = e.name
        if name in ("+", "-", "*"):
            t0, t1 = self.type_of(e.args[0]), self.type_of(e.args[1])
            if not (t0.is_numeric and t1.is_numeric):
                return self.fallback(e)
            if "DECIMAL" in (t0.root, t1.root):  # Flink's exact result type, rescaled (overflow: NULL)
                if {t0.root, t1.root} & {"FLOAT", "DOUBLE"}:
                    return self.fallback(e)
                x, y = g.tmp(), g.tmp()
                a, b = self.expr(e.args[0]), self.expr(e.args[1])
                fn = g.const(decimals.arithmetic(name, t0, t1)[0])
                return f"(None if {_both(x, a, y, b, e.args[1])} else {fn}({x}, {y}))"
            x, y = g.tmp(), g.tmp()
            a, b = self.expr(e.args[0]), self.expr(e.args[1])
            value = f"{x} {name} {y}"
            t = wider_numeric(t0, t1)
            if t.is_integral:
                value = f"{g.const(wrap_integer)}({value}, {t.root!r})"
            return f"(None if {_both(x, a, y, b, e.args[1])} else {value})"
        if name in _CMP_OPS:
            x, y = g.tmp(), g.tmp()
            a, b = self.expr(e.args[0]), self.expr(e.args[1])
            if e.args[1].op == "lit" and e.args[1].value is not None:  # a non-NULL constant: no NULL test
                return f"(None if ({x} := {a}) is None else {x} {_CMP_OPS[name]} {b})"
            return f"(None if {_both(x, a, y, b, e.args[1])} else {x} {_CMP_OPS[name]} {y})"
        if name in ("and", "or"):
            stop = "False" if name == "and" else "True"
            x, y = g.tmp(), g.tmp()
            a, b = self.expr(e.args[0]), self.expr(e.args[1])
            return (f"({stop} if ({x} := {a}) is {stop} else ({stop} if ({y} := {b}) is {stop} else "
                    f"(None if {x} is None or {y} is None else {'True' if name == 'and' else 'False'})))")
        if name == "not":
            x = g.tmp()
            return f"(None if ({x} := {self.expr(e.args[0])}) is None else not {x})"
        if name == "is_null":
            return f"({self.expr(e.args[0])} is None)"
        if name == "is_not_null":
            return f"({self.expr(e.args[0])} is not None)"
        if name == "case":
            args = e.args
            out = self.expr(args[-1]) if len(args) % 2 else "None"
            for i in range(len(args) - 2 - len(args) % 2, -1, -2):
                out = f"({self.expr(args[i + 1])} if {self.expr(args[i])} is True else {out})"
            return out
        if name == "coalesce":
            out = "None"
            for a in reversed(e.args):
                x = g.tmp()
                out = f"({x} if ({x} := {self.expr(a)}) is not None else {out})"
            return out
        if name == "get_field":
            i = e.value
            if isinstance(i, str):
                i = self.type_of(e.args[0]).field_names().index(i)
            x = g.tmp()
            # a Row's values read directly: Row.__getitem__ is a Python call per field (nested ROW columns)
            return (f"(None if ({x} := {self.expr(e.args[0])}) is None else "
                    f"({x}._values[{int(i)}] if type({x}) is _Row else {x}[{int(i)}]))")
        return self.fallback(e)


def _cannot_raise(e: Expression) -> bool:
    return e.op in ("col", "lit") or (e.op == "alias" and _cannot_raise(e.args[0]))


def _pure(e: Expression) -> bool:
    """Reads columns, literals and ROW fields only: nothing that can fail or has effects."""
    if e.op in ("col", "lit"):
        return True
    return (e.op == "alias" or (e.op == "call" and e.name == "get_field")) and _pure(e.args[0])


def _both(x: str, a: str, y: str, b: str, second: Expression) -> str:
    """`x` or `y` is NULL, with both operands evaluated first as the interpreter does (an error in the second
    operand is raised even when the first is NULL); skipping the second is the same when it cannot raise."""
    if _cannot_raise(second):
        return f"({x} := {a}) is None or ({y} := {b}) is None"
    return f"(({x} := {a}), ({y} := {b}))[0] is None or {y} is None"


class _Generator:
    def __init__(self) -> None:
        self.consts: dict[str, Any] = {}
        self._ids = itertools.count()

    def const(self, value: Any) -> str:
        name = f"_k{len(self.consts)}"
        self.consts[name] = value
        return name

    def tmp(self) -> str:
        return f"_t{next(self._ids)}"


def generate(steps: Sequence[CalcStep], names: Sequence[str], *, filtering: bool) -> tuple[str, dict[str, Any]]:
    """Source of `calc(row)` for the chain `steps` (innermost first) and its constants. With `filtering`, it
    returns a 1-tuple of the output row or None (a flat_map); otherwise the output row (a map)."""
    for step in steps:  # the interpreter validates every expression first: the same errors, raised at plan time
        for e in [*step.projections, *([step.condition] if step.condition is not None else [])]:
            compile_scalar(e, step.columns)
    gen = _Generator()
    levels: list[tuple[_Level, str | None, list[str]]] = []
    refs = [f"_r0[{i}]" for i in range(len(steps[0].columns))]
    for k, step in enumerate(steps):
        level = _Level(gen, step.columns, refs, "row" if k == 0 else f"_r{k}")
        condition = level.expr(step.condition) if step.condition is not None else None
        levels.append((level, condition, [level.expr(p) for p in step.projections]))
        refs = [f"_c{k + 1}_{j}" for j in range(len(step.projections))]
    body = ["    _r0 = row._values if type(row) is _Row else row"]
    for k, (level, condition, values) in enumerate(levels):
        if k > 0 and level.needs_row:
            body.append(f"    _r{k} = ({''.join(r + ', ' for r in level.refs)})")
        if condition is not None:
            body.append(f"    if {condition} is not True:")
            body.append("        return None")
        if k == len(levels) - 1:
            made = f"{gen.const(make_row)}([{', '.join(values)}], {gen.const(tuple(names))}, row.get_row_kind())"
            body.append(f"    return ({made},)" if filtering else f"    return {made}")
            break
        consumer = levels[k + 1][0]
        for j, v in enumerate(values):  # a value nobody reads is skipped when computing it cannot fail
            if consumer.needs_row or j in consumer.used or not _pure(steps[k].projections[j]):
                body.append(f"    _c{k + 1}_{j} = {v}")
    consts = dict(gen.consts, _Row=Row)
    return "def calc(row):\n" + "\n".join(body) + "\n", consts


def _compile(source: str, consts: dict[str, Any]) -> Callable[[Any], Any]:
    namespace = dict(consts)
    exec(compile(source, "<strom-calc>", "exec"), namespace)  # noqa: S102 - source generated from the plan
    return namespace["calc"]  # type: ignore[no-any-return]


class _Compiled:
    """Carries the generated source and its constants; pickles those and compiles again where it runs."""

    def __init__(self, source: str, consts: dict[str, Any]) -> None:
        self.source = source
        self.consts = consts
        self._bind()

    @abc.abstractmethod
    def _bind(self) -> None:
        """Install the compiled function as this function object's map or flat_map."""

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "consts": self.consts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.source = state["source"]
        self.consts = state["consts"]
        self._bind()


class CompiledCalcMap(_Compiled, MapFunction):
    """A chain of Calcs without conditions: one output row per input row."""

    def _bind(self) -> None:
        self.map = _compile(self.source, self.consts)  # type: ignore[method-assign]

    def map(self, value: Any) -> Any:  # replaced per instance by the compiled function
        raise AssertionError("unbound")


class CompiledCalcFlatMap(_Compiled, FlatMapFunction):
    """A chain of Calcs with a condition: zero or one output row per input row."""

    def _bind(self) -> None:
        self.flat_map = _compile(self.source, self.consts)  # type: ignore[method-assign]

    def flat_map(self, value: Any) -> Any:  # replaced per instance by the compiled function
        raise AssertionError("unbound")


def compile_calc(steps: Sequence[CalcStep], names: Sequence[str]) -> CompiledCalcMap | CompiledCalcFlatMap:
    """The fused function of `steps` (innermost first): a MapFunction when no step filters, else a FlatMapFunction."""
    filtering = any(s.condition is not None for s in steps)
    source, consts = generate(steps, names, filtering=filtering)
    return CompiledCalcFlatMap(source, consts) if filtering else CompiledCalcMap(source, consts)


def calc_chain(node: Any, usable: Callable[[Any], bool]) -> tuple[list[CalcStep], Any]:
    """The Calcs from `node` down through directly stacked Calcs that `usable` accepts (innermost first), and
    the plan node below them. Fusing them is Flink's FlinkCalcMergeRule: one operator, one call per row."""
    steps: list[CalcStep] = []
    current = node
    while isinstance(current, CalcNode) and usable(current) and (current is node or _fusable(current)):
        steps.insert(0, CalcStep(current.input.columns, current.projections, current.condition))
        current = current.input
    return steps, current


_INLINED = frozenset(["+", "-", "*", *_CMP_OPS, "and", "or", "not", "is_null", "is_not_null", "case", "coalesce",
                      "get_field"])


def _fusable(node: CalcNode) -> bool:
    """An inner Calc may be shared by several consumers (a view read twice, a statement set): fused into each, it
    runs once per consumer. Only Calcs of cheap, deterministic, inlined expressions are fused, so a UDF, PROCTIME()
    or any other function still runs once per row in its own operator."""
    exprs = [*node.projections, *([node.condition] if node.condition is not None else [])]
    return all(_inlined_only(e) for e in exprs)


def _inlined_only(e: Expression) -> bool:
    if e.op in ("col", "lit"):
        return True
    if e.op == "alias" or (e.op == "call" and e.name in _INLINED):
        return all(_inlined_only(a) for a in e.args)
    return False
