"""Calc code generation (planner/calc_codegen.py) against the interpreter (scalar.compile_scalar) and plain Python:
thousands of random expressions over rows with NULLs — arithmetic with INT overflow, comparisons, AND/OR/NOT with
NULL, IS [NOT] NULL, CASE, COALESCE, casts (incl. failing ones), string functions, ROW field access, LIKE/IN via
the fallback — evaluated through two stacked Calcs with filters must give identical rows (or the same error)."""

from __future__ import annotations

import random
from typing import Any

import cloudpickle
import pytest
from strom.common.row import Row, make_row
from strom.table.expressions import Expression
from strom.table.planner.calc_codegen import CalcStep, CompiledCalcFlatMap, CompiledCalcMap, compile_calc
from strom.table.planner.scalar import compile_scalar
from strom.table.types import DataTypes

ROW_T = DataTypes.ROW([DataTypes.FIELD("x", DataTypes.INT()), DataTypes.FIELD("y", DataTypes.STRING())])
COLUMNS = [("i", DataTypes.INT()), ("j", DataTypes.BIGINT()), ("d", DataTypes.DOUBLE()), ("s", DataTypes.STRING()),
           ("b", DataTypes.BOOLEAN()), ("r", ROW_T)]


def col(n: str) -> Expression:
    return Expression("col", n)


def lit(v: Any, t: Any = None) -> Expression:
    return Expression("lit", value=v, data_type=t)


def call(name: str, *args: Expression, value: Any = None, data_type: Any = None) -> Expression:
    return Expression("call", name, tuple(args), value, data_type)


def random_rows(rng: random.Random, n: int) -> list[Row]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.25 else v

    rows = []
    for _ in range(n):
        r = maybe((maybe(rng.randint(-5, 5)), maybe(rng.choice(["a", "B", "7", "x%"]))))
        rows.append(make_row([maybe(rng.choice([0, 1, -3, 7, 2**31 - 1])), maybe(rng.randint(-10, 10)),
                              maybe(rng.choice([0.0, -1.5, 2.25])), maybe(rng.choice(["abc", "7", " 12 ", "", "Xy"])),
                              maybe(rng.choice([True, False])), r], ("i", "j", "d", "s", "b", "r")))
    return rows


class ExprGen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def num(self, depth: int) -> Expression:
        r = self.rng
        if depth <= 0 or r.random() < 0.3:
            return r.choice([col("i"), col("j"), lit(r.randint(-3, 3)), lit(None, DataTypes.INT()),
                             call("get_field", col("r"), value="x"), lit(2.5)])
        k = r.randrange(6)
        if k == 0:
            return call(r.choice(["+", "-", "*"]), self.num(depth - 1), self.num(depth - 1))
        if k == 1:
            return call("case", self.bool(depth - 1), self.num(depth - 1), *([self.num(depth - 1)] * r.randint(0, 1)))
        if k == 2:
            return call("coalesce", self.num(depth - 1), self.num(depth - 1))
        if k == 3:
            return call("cast", self.str(depth - 1), value=r.random() < 0.7, data_type=DataTypes.INT())
        if k == 4:
            return call("abs", self.num(depth - 1))  # not inlined: the interpreter's closure
        return call("/", self.num(depth - 1), lit(r.choice([2, 3])))

    def str(self, depth: int) -> Expression:
        r = self.rng
        if depth <= 0 or r.random() < 0.3:
            return r.choice([col("s"), lit("q'\"\\n"), lit(None, DataTypes.STRING()),
                             call("get_field", col("r"), value="y")])
        k = r.randrange(4)
        if k == 0:
            return call(r.choice(["upper", "lower"]), self.str(depth - 1))
        if k == 1:
            return call("concat", self.str(depth - 1), self.str(depth - 1))
        if k == 2:
            return call("cast", self.num(depth - 1), value=False, data_type=DataTypes.STRING())
        return call("case", self.bool(depth - 1), self.str(depth - 1), self.str(depth - 1))

    def bool(self, depth: int) -> Expression:
        r = self.rng
        if depth <= 0 or r.random() < 0.2:
            return r.choice([col("b"), lit(True), lit(None, DataTypes.BOOLEAN())])
        k = r.randrange(8)
        if k == 0:
            return call(r.choice(["=", "<>", "<", "<=", ">", ">="]), self.num(depth - 1), self.num(depth - 1))
        if k == 1:
            return call(r.choice(["=", "<", ">="]), self.str(depth - 1), self.str(depth - 1))
        if k in (2, 3):
            return call(r.choice(["and", "or"]), self.bool(depth - 1), self.bool(depth - 1))
        if k == 4:
            return call("not", self.bool(depth - 1))
        if k == 5:
            return call(r.choice(["is_null", "is_not_null"]), r.choice([self.num(depth - 1), self.str(depth - 1)]))
        if k == 6:
            return call("like", self.str(depth - 1), lit(r.choice(["a%", "_", "%y"])))
        return call("in", self.num(depth - 1), lit(1), lit(None, DataTypes.INT()))


def interpret(steps: list[CalcStep], row: Row) -> Any:
    """The interpreter's rows, step by step as the Calc operators ran before code generation."""
    values: Any = row
    for step in steps:
        if step.condition is not None and compile_scalar(step.condition, step.columns)[0](values) is not True:
            return None
        values = [compile_scalar(p, step.columns)[0](values) for p in step.projections]
    return values


def outcome(f: Any, *args: Any) -> Any:
    try:
        return ("ok", f(*args))
    except Exception as e:  # both paths must fail alike (a failing CAST, division by zero, overflow)
        return ("error", type(e).__name__)


def compiled_values(fn: Any, row: Row) -> Any:
    out = fn.map(row) if isinstance(fn, CompiledCalcMap) else fn.flat_map(row)
    if isinstance(fn, CompiledCalcFlatMap):
        if out is None:
            return None
        (out,) = out
    assert out.get_row_kind() == row.get_row_kind()
    return list(out)


@pytest.mark.parametrize("seed", range(40))
def test_generated_calc_chain_equals_the_interpreter(seed: int) -> None:
    rng = random.Random(seed)
    gen = ExprGen(rng)
    rows = random_rows(rng, 40)
    first = [gen.num(3), gen.str(3), gen.bool(3), col("i"), gen.num(2)]
    mid_columns = [(f"c{k}", compile_scalar(e, COLUMNS)[1]) for k, e in enumerate(first)]
    inner = CalcStep(COLUMNS, first, gen.bool(3) if rng.random() < 0.6 else None)
    second = [call("+", col("c0"), col("c4")), col("c1"), call("or", col("c2"), lit(None, DataTypes.BOOLEAN())),
              call("case", call("is_null", col("c3")), lit("null"), call("cast", col("c3"), value=False,
                                                                          data_type=DataTypes.STRING()))]
    if rng.random() < 0.5:  # an inner value nobody reads: still computed (and failing) unless it cannot fail
        second = [second[0], *second[2:]]
    outer = CalcStep(mid_columns, second, call(">", col("c0"), lit(-1000)) if rng.random() < 0.5 else None)
    for steps in ([inner], [inner, outer]):
        try:
            fn = compile_calc(steps, [f"o{k}" for k in range(len(steps[-1].projections))])
        except Exception as e:  # an expression the interpreter refuses at plan time: the generator refuses alike
            with pytest.raises(type(e)):
                for s in steps:
                    for x in [*s.projections, *([s.condition] if s.condition is not None else [])]:
                        compile_scalar(x, s.columns)
            continue
        fn = cloudpickle.loads(cloudpickle.dumps(fn)) if seed % 2 else fn  # travels to a TaskManager: compiled again
        for row in rows:
            assert outcome(compiled_values, fn, row) == outcome(interpret, steps, row), (fn.source, row)


def test_three_valued_logic_and_null_propagation_as_plain_python_says() -> None:
    cols = [("a", DataTypes.BOOLEAN()), ("x", DataTypes.INT())]
    projections = [call("and", col("a"), lit(None, DataTypes.BOOLEAN())), call("or", col("a"), lit(None,
                   DataTypes.BOOLEAN())), call("+", col("x"), lit(1)), call("*", col("x"), lit(2))]
    fn = compile_calc([CalcStep(cols, projections, None)], ["and_", "or_", "plus", "times"])
    assert isinstance(fn, CompiledCalcMap)
    assert list(fn.map(make_row([False, None]))) == [False, None, None, None]
    assert list(fn.map(make_row([True, 3]))) == [None, True, 4, 6]
    assert list(fn.map(make_row([None, 2**31 - 1]))) == [None, None, -(2**31), -2]  # INT wraps as Java's


def test_filter_passes_only_true_and_keeps_the_row_kind() -> None:
    from strom.common.row import RowKind

    cols = [("x", DataTypes.INT())]
    fn = compile_calc([CalcStep(cols, [col("x")], call(">", col("x"), lit(1)))], ["x"])
    assert isinstance(fn, CompiledCalcFlatMap)
    assert fn.flat_map(make_row([None])) is None and fn.flat_map(make_row([1])) is None
    (out,) = fn.flat_map(make_row([5], None, RowKind.UPDATE_BEFORE))
    assert list(out) == [5] and out.get_row_kind() == RowKind.UPDATE_BEFORE


def test_string_literals_are_data_not_code() -> None:
    evil = "'); import os; os._exit(3) #"
    fn = compile_calc([CalcStep([("s", DataTypes.STRING())], [call("concat", col("s"), lit(evil))], None)], ["v"])
    assert list(fn.map(make_row(["x"]))) == ["x" + evil]  # type: ignore[union-attr]
