"""`strom.table.udf`: PyFlink's Python user-defined functions (pyflink.table.udf).

`udf` (scalar), `udtf` (table function, rows per input row) and `udaf` (aggregate function) wrap a Python
callable or a ScalarFunction/TableFunction/AggregateFunction instance with its declared result type.
Calling the wrapper with expressions (`f(col('a'))`, or `call(f, col('a'))`) builds an expression the
planner compiles; `t_env.create_temporary_function(name, f)` makes it callable from SQL by name. The
task calls `open(FunctionContext)` once before the first row; an exception raised by the function fails
the task with the function's name and the file and line that raised, the user's traceback chained.
"""

from __future__ import annotations

import importlib
import importlib.util
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from strom.table.errors import TableException, ValidationException
from strom.table.expressions import Expression, _to_expr
from strom.table.types import DataType


class FunctionContext:
    """What `open()` receives (PyFlink's FunctionContext): job parameters."""

    def __init__(self, job_parameters: dict[str, str] | None = None) -> None:
        self._job_parameters = dict(job_parameters or {})

    def get_job_parameter(self, key: str, default_value: str) -> str:
        return self._job_parameters.get(key, default_value)


class UserDefinedFunction:
    def open(self, function_context: FunctionContext) -> None:
        pass

    def close(self) -> None:
        pass

    def is_deterministic(self) -> bool:
        return True


class ScalarFunction(UserDefinedFunction):
    """`eval(*args)` returns one value per row."""

    def eval(self, *args: Any) -> Any:
        raise TableException(f"{type(self).__name__} must implement eval(*args)")


class TableFunction(UserDefinedFunction):
    """`eval(*args)` yields rows (a tuple/Row per row, or a value when the function has one column)."""

    def eval(self, *args: Any) -> Iterable[Any]:
        raise TableException(f"{type(self).__name__} must implement eval(*args)")


class AggregateFunction(UserDefinedFunction):
    """create_accumulator() -> acc; accumulate(acc, *args) updates it in place; get_value(acc) is the result;
    retract(acc, *args) undoes an accumulate (needed when the input is an updating changelog)."""

    def create_accumulator(self) -> Any:
        raise TableException(f"{type(self).__name__} must implement create_accumulator()")

    def accumulate(self, accumulator: Any, *args: Any) -> None:
        raise TableException(f"{type(self).__name__} must implement accumulate(accumulator, *args)")

    def get_value(self, accumulator: Any) -> Any:
        raise TableException(f"{type(self).__name__} must implement get_value(accumulator)")

    def get_result_type(self) -> DataType | None:
        return None

    def get_accumulator_type(self) -> DataType | None:
        return None


class TableAggregateFunction(UserDefinedFunction):
    """A table aggregate function (flat_aggregate): create_accumulator() -> acc; accumulate(acc, *args);
    emit_value(acc) yields the group's rows (a Row/tuple per row); retract(acc, *args) when the input updates."""

    def create_accumulator(self) -> Any:
        raise TableException(f"{type(self).__name__} must implement create_accumulator()")

    def accumulate(self, accumulator: Any, *args: Any) -> None:
        raise TableException(f"{type(self).__name__} must implement accumulate(accumulator, *args)")

    def emit_value(self, accumulator: Any) -> Iterable[Any]:
        raise TableException(f"{type(self).__name__} must implement emit_value(accumulator)")

    def get_result_type(self) -> DataType | None:
        return None

    def get_accumulator_type(self) -> DataType | None:
        return None


class _CallableScalar(ScalarFunction):
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def eval(self, *args: Any) -> Any:
        return self.fn(*args)


class _CallableTable(TableFunction):
    def __init__(self, fn: Callable[..., Iterable[Any]]) -> None:
        self.fn = fn

    def eval(self, *args: Any) -> Iterable[Any]:
        return self.fn(*args)


def _data_type(t: Any, what: str) -> DataType:
    if isinstance(t, DataType):
        return t
    if isinstance(t, str):
        from strom.table.sql.parser import parse_type

        return parse_type(t, what)
    raise ValidationException(f"{what}: expected a DataType (DataTypes.BIGINT()) or a type string, got {t!r}")


class UserDefinedFunctionWrapper:
    """A Python UDF with its kind ("scalar", "table", "aggregate"), name and result type(s)."""

    def __init__(self, func: UserDefinedFunction, kind: str, name: str, result_types: list[DataType],
                 result_names: list[str] | None = None, func_type: str = "general") -> None:
        self._func = func
        # "pandas": a vectorized function called with a pandas.Series per argument (planner/pandas_calc.py)
        self.func_type = func_type
        self._kind = kind
        self._name = name
        self._result_types = result_types
        self._result_names = result_names

    @property
    def name(self) -> str:
        return self._name

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def function(self) -> UserDefinedFunction:
        return self._func

    @property
    def result_type(self) -> DataType:
        return self._result_types[0]

    @property
    def result_types(self) -> list[DataType]:
        return list(self._result_types)

    def alias(self, *names: str) -> UserDefinedFunctionWrapper:
        return UserDefinedFunctionWrapper(self._func, self._kind, self._name, self._result_types, list(names),
                                          self.func_type)

    def __call__(self, *args: Any) -> Expression:
        exprs = tuple(_to_expr(a) for a in args)
        if self._kind == "aggregate":
            return Expression("agg", "udaf", exprs, value=self)
        if self._kind == "table_aggregate":
            return Expression("call", "udtaf", exprs, value=self)
        return Expression("call", "udf" if self._kind == "scalar" else "udtf", exprs, value=self)

    def invoker(self) -> Invoker:
        """Calls the function per row; a pandas UDF gets one-element Series (the planner's bundled Calc calls
        vectorized_invoker() instead where it can)."""
        if self.func_type == "pandas":
            return Invoker(_PandasPerRow(self._func, self._name), self._name)
        return Invoker(self._func, self._name)

    def vectorized_invoker(self) -> Invoker:
        """A pandas UDF's own function: eval(*pandas.Series) -> pandas.Series."""
        return Invoker(self._func, self._name)

    def shared_invoker(self) -> Invoker:
        """One invoker per wrapper object in a task (aggregate functions are called from several places)."""
        invoker = self.__dict__.get("_invoker")
        if invoker is None:
            invoker = self.__dict__["_invoker"] = self.invoker()
        return invoker

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_invoker"}  # a task opens its own copy

    def __repr__(self) -> str:
        return f"<{self._kind} function {self._name}>"


class _PandasAggregate(AggregateFunction):
    """A pandas UDAF as an aggregate function: the accumulator keeps the group's argument tuples (PyFlink's
    pandas UDAFs also buffer the group's rows), get_value calls the function with one Series per argument.
    Retract removes one equal tuple, so it may also run where rows are withdrawn (a window's late updates)."""

    def __init__(self, f: Callable[..., Any], name: str) -> None:
        self.f = f
        self.name = name

    def create_accumulator(self) -> list[tuple[Any, ...]]:
        return []

    def accumulate(self, accumulator: list[tuple[Any, ...]], *args: Any) -> None:
        accumulator.append(args)

    def retract(self, accumulator: list[tuple[Any, ...]], *args: Any) -> None:
        accumulator.remove(args)

    def get_value(self, accumulator: list[tuple[Any, ...]]) -> Any:
        import pandas as pd

        width = len(accumulator[0]) if accumulator else 0
        series = [pd.Series([row[i] for row in accumulator]) for i in range(width)]
        v = self.f(*series)
        if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v):
            return None
        return v.item() if hasattr(v, "item") else v


class _PandasPerRow(ScalarFunction):
    """A pandas UDF called for one row: one-element Series in, the first element out (NaN is NULL)."""

    def __init__(self, func: UserDefinedFunction, name: str) -> None:
        self.func = func
        self.name = name

    def open(self, function_context: FunctionContext) -> None:
        self.func.open(function_context)

    def close(self) -> None:
        self.func.close()

    def eval(self, *args: Any) -> Any:
        import pandas as pd

        result = self.func.eval(*[pd.Series([v]) for v in args])  # type: ignore[attr-defined]
        if len(result) != 1:
            raise TableException(f"pandas UDF {self.name!r} returned {len(result)} values for 1 row")
        v = result.iloc[0] if isinstance(result, pd.Series) else result[0]
        if v is None or (isinstance(v, float) and v != v) or v is pd.NA or v is pd.NaT:
            return None
        return v.item() if hasattr(v, "item") else v


class Invoker:
    """Calls a UDF in the task: opens it before the first call; an exception becomes a TableException
    naming the function and the file:line that raised (the user's traceback chained as __cause__)."""

    def __init__(self, func: UserDefinedFunction, name: str) -> None:
        self.func = func
        self.name = name
        self.opened = False

    def _open(self) -> None:
        self.opened = True
        self.func.open(FunctionContext())

    def call(self, method: Callable[..., Any], *args: Any) -> Any:
        if not self.opened:
            self._open()
        try:
            return method(*args)
        except Exception as e:
            raise self.failure(e) from e

    def failure(self, e: BaseException) -> TableException:
        frames = traceback.extract_tb(e.__traceback__)
        where = f" at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
        return TableException(f"Python function {self.name!r} raised {type(e).__name__}: {e}{where}")


def _refuse_pandas(func_type: str, kind: str) -> None:
    if func_type == "general":
        return
    if func_type != "pandas":
        raise ValidationException(f"{kind}: func_type must be 'general' or 'pandas', got {func_type!r}")
    if kind in ("udf", "udaf"):
        return  # vectorized scalar (planner/pandas_calc.py) and aggregate (_PandasAggregate) functions run
    # PyFlink has no vectorized table functions: its udtf/udtaf take no func_type, so Python refuses the call
    raise TypeError(f"{kind}() got an unexpected keyword argument 'func_type' (PyFlink has no vectorized table "
                    "functions; func_type='pandas' is for udf and udaf)")


def _name_of(f: Any, name: str | None) -> str:
    if name:
        return name
    if isinstance(f, UserDefinedFunction):
        return type(f).__name__
    return getattr(f, "__name__", type(f).__name__)


def udf(f: Any = None, input_types: Any = None, result_type: Any = None, deterministic: bool | None = None,
        name: str | None = None, func_type: str = "general", udf_type: str | None = None) -> Any:
    """A scalar Python function: `@udf(result_type=DataTypes.BIGINT())` or `udf(fn, result_type=...)`."""
    _refuse_pandas(udf_type or func_type, "udf")
    if f is None:
        return lambda g: udf(g, input_types, result_type, deterministic, name, func_type, udf_type)
    if result_type is None:
        raise ValidationException(f"udf {_name_of(f, name)!r}: result_type is required (e.g. DataTypes.BIGINT())")
    func = f if isinstance(f, ScalarFunction) else _CallableScalar(f)
    return UserDefinedFunctionWrapper(func, "scalar", _name_of(f, name),
                                      [_data_type(result_type, f"udf {_name_of(f, name)!r}")],
                                      func_type=udf_type or func_type)


def udtf(f: Any = None, input_types: Any = None, result_types: Any = None, deterministic: bool | None = None,
         name: str | None = None, func_type: str = "general") -> Any:
    """A table function: `@udtf(result_types=[DataTypes.STRING(), DataTypes.INT()])`, yielding rows."""
    _refuse_pandas(func_type, "udtf")
    if f is None:
        return lambda g: udtf(g, input_types, result_types, deterministic, name, func_type)
    label = f"udtf {_name_of(f, name)!r}"
    if result_types is None:
        raise ValidationException(f"{label}: result_types is required (e.g. [DataTypes.STRING()])")
    types = list(result_types) if isinstance(result_types, (list, tuple)) else [result_types]
    func = f if isinstance(f, TableFunction) else _CallableTable(f)
    return UserDefinedFunctionWrapper(func, "table", _name_of(f, name), [_data_type(t, label) for t in types])


def udaf(f: Any = None, input_types: Any = None, result_type: Any = None, accumulator_type: Any = None,
         deterministic: bool | None = None, name: str | None = None, func_type: str = "general") -> Any:
    """An aggregate function: `udaf(MyAggregateFunction(), result_type=DataTypes.BIGINT())`; with
    func_type='pandas' a callable over one pandas.Series per argument returning one value (vectorized)."""
    _refuse_pandas(func_type, "udaf")
    if f is None:
        return lambda g: udaf(g, input_types, result_type, accumulator_type, deterministic, name, func_type)
    label = f"udaf {_name_of(f, name)!r}"
    if func_type == "pandas":
        if result_type is None or not callable(f) or isinstance(f, AggregateFunction):
            raise ValidationException(f"{label}: a pandas aggregate function is a callable over pandas.Series with a "
                                      "result_type (udaf(lambda v: v.mean(), result_type=..., func_type='pandas'))")
        return UserDefinedFunctionWrapper(_PandasAggregate(f, _name_of(f, name)), "aggregate", _name_of(f, name),
                                          [_data_type(result_type, label)], func_type="pandas")
    if not isinstance(f, AggregateFunction):
        raise ValidationException(f"{label}: expected an AggregateFunction instance (create_accumulator, "
                                  "accumulate, get_value)")
    result_type = result_type if result_type is not None else f.get_result_type()
    if result_type is None:
        raise ValidationException(f"{label}: result_type is required (udaf(f, result_type=...) or get_result_type())")
    return UserDefinedFunctionWrapper(f, "aggregate", _name_of(f, name), [_data_type(result_type, label)])


def udtaf(f: Any = None, input_types: Any = None, result_type: Any = None, accumulator_type: Any = None,
          deterministic: bool | None = None, name: str | None = None, func_type: str = "general") -> Any:
    """A table aggregate function for flat_aggregate: `udtaf(Top2(), result_type=DataTypes.ROW([...]))`."""
    _refuse_pandas(func_type, "udtaf")
    if f is None:
        return lambda g: udtaf(g, input_types, result_type, accumulator_type, deterministic, name, func_type)
    label = f"udtaf {_name_of(f, name)!r}"
    if not isinstance(f, TableAggregateFunction):
        raise ValidationException(f"{label}: expected a TableAggregateFunction instance (create_accumulator, "
                                  "accumulate, emit_value)")
    result_type = result_type if result_type is not None else f.get_result_type()
    if result_type is None:
        raise ValidationException(f"{label}: result_type is required (udtaf(f, result_type=...) or "
                                  "get_result_type())")
    return UserDefinedFunctionWrapper(f, "table_aggregate", _name_of(f, name), [_data_type(result_type, label)])


def as_function(name: str, f: Any) -> UserDefinedFunctionWrapper:
    """What create_temporary_function accepts: a wrapper made by udf/udtf/udaf (renamed to `name`)."""
    if isinstance(f, UserDefinedFunctionWrapper):
        return UserDefinedFunctionWrapper(f._func, f._kind, name, f._result_types, f._result_names,
                                          f.func_type)
    raise ValidationException(f"function {name!r}: expected a function made by udf/udtf/udaf (e.g. "
                              f"udf(f, result_type=DataTypes.BIGINT())), got {type(f).__name__}")


def import_function(path: str, name: str) -> Any:
    """CREATE FUNCTION name AS 'package.module.attr' LANGUAGE PYTHON: the object at `path`."""
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ValidationException(f"CREATE FUNCTION {name}: {path!r} should be 'module.function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValidationException(f"CREATE FUNCTION {name}: cannot import module {module_name!r} ({e}); ship it "
                                  "with python.files or install it") from None
    if not hasattr(module, attr):
        raise ValidationException(f"CREATE FUNCTION {name}: module {module_name!r} has no attribute {attr!r}")
    return getattr(module, attr)
