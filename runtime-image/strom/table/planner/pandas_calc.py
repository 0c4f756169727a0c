"""Calc with pandas (vectorized) scalar UDFs: the function is called once per Arrow batch of rows.

A Calc whose select list or WHERE calls a `udf(..., func_type='pandas')` runs on the bundled-map
operator (runtime/operators/bundled_map.py): rows arrive in bundles (python.fn-execution.bundle.size /
bundle.time, flushed before every watermark and checkpoint barrier), each pandas call is lifted out of
the expressions into an extra column, and that column is computed per chunk of at most
`python.fn-execution.arrow.batch.size` rows: its arguments become one pandas.Series each (typed through
Arrow, as PyFlink's Arrow coder makes them: an INT column with NULLs is float64 with NaN), the function
returns a Series of the same length, and NaN/None in it is NULL. The rest of each expression is
evaluated per row over the row plus the lifted columns. WHERE's pandas calls see every row; the select
list's see only the rows that passed, as in Flink's Calc.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strom.common.python_options import PYTHON_ARROW_BATCH_SIZE, PYTHON_BUNDLE_SIZE, PYTHON_BUNDLE_TIME
from strom.table.errors import TableException
from strom.table.expressions import Expression, col
from strom.table.planner.plan import Columns
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar
from strom.table.types import DataType


def is_pandas_call(e: Expression) -> bool:
    return e.op == "call" and e.name == "udf" and getattr(e.value, "func_type", "general") == "pandas"


def has_pandas_call(e: Expression | None) -> bool:
    if e is None:
        return False
    return is_pandas_call(e) or any(has_pandas_call(a) for a in e.args)


class _Lifted:
    """One pandas call lifted into column `index` of the extended row: its argument evaluators."""

    def __init__(self, call: Expression, args: list[Callable[[Any], Any]], arg_types: list[DataType]) -> None:
        self.wrapper = call.value
        self.result_type: DataType = self.wrapper.result_type
        self.args = args
        self.arg_types = arg_types
        self.invoker = self.wrapper.vectorized_invoker()


def _lift(e: Expression, columns: Columns, lifted: list[_Lifted]) -> Expression:
    """`e` with every pandas call (innermost first) replaced by a reference to its lifted column; `columns`
    grows by one column per call, so an outer call's arguments may read an inner call's result."""
    if e.op != "call" and e.op != "alias":
        return e
    args = tuple(_lift(a, columns, lifted) for a in e.args)
    if not is_pandas_call(e):
        return Expression(e.op, e.name, args, e.value, e.data_type, e.is_distinct)
    compiled = [compile_scalar(a, columns) for a in args]
    name = f"$pandas{len(lifted)}"
    lifted.append(_Lifted(e, [f for f, _ in compiled], [t for _, t in compiled]))
    columns.append((name, e.value.result_type))
    return col(name)


class PandasCalc:
    """The bundled Calc: `map_bundle(rows)` -> the projected rows (None for a row WHERE dropped)."""

    def __init__(self, input_columns: Columns, projections: list[Expression], condition: Expression | None,
                 names: list[str], arrow_batch_size: int) -> None:
        self.names = tuple(names)
        self.batch = arrow_batch_size
        cond_cols: Columns = list(input_columns)
        self.cond_lifted: list[_Lifted] = []
        self.condition = None
        if condition is not None:
            self.condition = compile_scalar(_lift(condition, cond_cols, self.cond_lifted), cond_cols)[0]
        proj_cols: Columns = list(input_columns)
        self.proj_lifted: list[_Lifted] = []
        lifted_exprs = [_lift(p, proj_cols, self.proj_lifted) for p in projections]
        self.projections = [compile_scalar(p, proj_cols)[0] for p in lifted_exprs]

    def map_bundle(self, rows: list[Any]) -> list[Any]:
        kinds = [r.get_row_kind() for r in rows]
        out: list[Any] = [None] * len(rows)
        keep = list(range(len(rows)))
        if self.condition is not None:
            extended = self._extend([tuple(r) for r in rows], self.cond_lifted)
            cond = self.condition
            keep = [i for i, r in enumerate(extended) if cond(r) is True]
        extended = self._extend([tuple(rows[i]) for i in keep], self.proj_lifted)
        fns, names = self.projections, self.names
        for i, r in zip(keep, extended, strict=True):
            out[i] = make_row([f(r) for f in fns], names, kinds[i])
        return out

    def _extend(self, rows: list[tuple[Any, ...]], lifted: list[_Lifted]) -> list[tuple[Any, ...]]:
        for call in lifted:
            values: list[Any] = []
            for start in range(0, len(rows), self.batch):
                values.extend(_call_vectorized(call, rows[start:start + self.batch]))
            rows = [(*r, v) for r, v in zip(rows, values, strict=True)]
        return rows


def _series(values: list[Any], t: DataType) -> Any:
    import pandas as pd
    import pyarrow as pa

    from strom.table.pandas_conversion import to_arrow_type

    arrow_type = to_arrow_type(t)
    if arrow_type is None:
        return pd.Series(values, dtype=object)
    return pa.array(values, type=arrow_type).to_pandas()


def _call_vectorized(call: _Lifted, chunk: list[tuple[Any, ...]]) -> list[Any]:
    import pandas as pd
    import pyarrow as pa

    from strom.table.pandas_conversion import to_arrow_type

    if not chunk:
        return []
    series = [_series([f(r) for r in chunk], t) for f, t in zip(call.args, call.arg_types, strict=True)]
    result = call.invoker.call(call.invoker.func.eval, *series)
    name = call.wrapper.name
    if not isinstance(result, (pd.Series, list, tuple)) and not hasattr(result, "__len__"):
        raise TableException(f"pandas UDF {name!r} must return a pandas.Series, got {type(result).__name__}")
    if len(result) != len(chunk):
        raise TableException(f"pandas UDF {name!r} returned {len(result)} values for {len(chunk)} rows; a vectorized "
                             "scalar function returns a Series as long as its arguments")
    arrow_type = to_arrow_type(call.result_type)
    if arrow_type is None:
        return list(result)
    try:
        return pa.Array.from_pandas(pd.Series(result).reset_index(drop=True), type=arrow_type).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise TableException(f"pandas UDF {name!r}: its result is not {call.result_type}: {e}") from None


def pandas_calc_stream(node: Any, ds: Any) -> Any:
    """The CalcNode on the bundled-map operator, bounded by the job's python.fn-execution.* options."""
    from strom.datastream.data_stream import DataStream
    from strom.graph.transformations import OperatorDescriptor

    config = ds.get_execution_environment().get_configuration()
    bundle = config.get(PYTHON_BUNDLE_SIZE)
    arrow_batch = min(config.get(PYTHON_ARROW_BATCH_SIZE), bundle)  # as PyFlink caps it
    fn = PandasCalc(list(node.input.columns), list(node.projections), node.condition, node.names(), arrow_batch)
    params = {"bundle_size": bundle, "bundle_time_ms": config.get(PYTHON_BUNDLE_TIME)}
    t = ds._one_input("Calc[pandas]", OperatorDescriptor("bundled_map", fn, params=params), None)
    return DataStream(ds._env, t).name("Calc[pandas]").uid(node.uid("calc"))
