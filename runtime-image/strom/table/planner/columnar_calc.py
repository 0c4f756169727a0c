"""Columnar Calc: projection and filter evaluated per batch of rows with pyarrow.compute.

Where every expression of a Calc has a pyarrow.compute kernel with Flink's semantics, the Calc runs on
the bundled-map operator (one call per input batch, nothing held: bundle size 1 flushes each batch) and
evaluates each expression once over Arrow arrays instead of once per row. The subset is the one whose
kernels agree with the row path value for value, NULLs included:
  columns and literals of BOOLEAN, TINYINT..BIGINT, FLOAT/DOUBLE (computed as float64, as the row path
  computes Python floats), STRING; `+ - *` on numbers (integers wrap as Java's do: Arrow's unchecked
  kernels wrap too); `= <> < <= > >=` (NULL if either side is NULL; strings compare by code point, which
  UTF-8 byte order is); AND/OR with three-valued logic (Kleene kernels); NOT; IS [NOT] NULL; CHAR_LENGTH
  (code points, as the row path's len()).
Anything else (division, casts, UPPER — Arrow's case mapping differs from Java's for 'ß' —, UDFs,
temporal functions) returns None from `compile_columnar`, and the Calc stays on the row path.
A column the select list passes through unchanged is copied from the rows, never converted.
Switch: `table.exec.columnar.enabled` (strom.common.config_options). Arrow pays per call, so the kernels win
only over batches of about a thousand rows (benchmarks/columnar_calc.py); a runtime batch holds one network
buffer's worth (~100 rows of five columns). With Flink's mini-batch options (table.exec.mini-batch.enabled,
.size, .allow-latency: performance only, as in Flink) the Calc gathers up to .size rows for at most
.allow-latency, still flushed before every watermark and checkpoint barrier; without them it computes each
input batch as it comes. Default off: measured (benchmarks/columnar_calc.py), the rows' conversion to and
from Arrow costs more than calc_codegen's generated row code spends on these expressions (~1 us/row), so
the switch is for experiments until the runtime carries record batches between operators.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

from strom.common.config_options import TABLE_MINI_BATCH_ENABLED, TABLE_MINI_BATCH_LATENCY, TABLE_MINI_BATCH_SIZE
from strom.common.configuration import Configuration
from strom.table.expressions import Expression
from strom.table.planner.plan import Columns
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import column_index, compile_scalar
from strom.table.types import DataType

# batch -> Arrow array (or scalar); `batch` maps a column index to its Arrow array
Kernel = Callable[[dict[int, Any]], Any]

_ARROW_ROOTS = {"BOOLEAN": "bool_", "TINYINT": "int8", "SMALLINT": "int16", "INT": "int32", "BIGINT": "int64",
                "FLOAT": "float64", "DOUBLE": "float64", "STRING": "string"}
_CMP = {"=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_ARITH = {"+": "add", "-": "subtract", "*": "multiply"}


def arrow_type(t: DataType) -> Any:
    import pyarrow as pa

    name = _ARROW_ROOTS.get(t.root)
    return None if name is None else getattr(pa, name)()


class _Compiler:
    def __init__(self, columns: Columns) -> None:
        self.columns = columns
        self.used: set[int] = set()

    def compile(self, e: Expression) -> tuple[Kernel, DataType] | None:
        """The kernel of `e` and its type (the row path's type, so both paths agree), or None."""
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            _, t = compile_scalar(e, self.columns)  # the row path's type (and its validation errors)
        except Exception:  # noqa: BLE001 - the row path reports it, not this optional one
            return None
        if arrow_type(t) is None:
            return None
        if e.op == "alias":
            return self.compile(e.args[0])
        if e.op == "col":
            i = column_index(e.name, self.columns)
            if arrow_type(self.columns[i][1]) is None:
                return None
            self.used.add(i)
            return (lambda batch: batch[i]), t
        if e.op == "lit":
            scalar = pa.scalar(e.value, type=arrow_type(t))
            return (lambda batch: scalar), t
        if e.op != "call":
            return None
        args = [self.compile(a) for a in e.args]
        if e.name in _CMP and len(args) == 2:  # DOUBLE column vs DECIMAL literal (x <> 1.0): the literal as a double
            for k in (0, 1):
                lit_arg, other = e.args[k], args[1 - k]
                if (lit_arg.op == "lit" and isinstance(lit_arg.value, decimal.Decimal) and other is not None
                        and other[1].root in ("FLOAT", "DOUBLE")):
                    args[k] = (_constant(pa.scalar(float(lit_arg.value), type=pa.float64())), other[1])
        if any(a is None for a in args):
            return None
        ks = [a[0] for a in args if a is not None]
        name = e.name
        if name in _ARITH and t.is_numeric:
            fn, target = getattr(pc, _ARITH[name]), arrow_type(t)
            ka, kb = ks
            return (lambda batch: fn(pc.cast(ka(batch), target), pc.cast(kb(batch), target))), t
        if name in _CMP:
            ta, tb = (a[1] for a in args if a is not None)
            if not ((ta.is_numeric and tb.is_numeric) or (ta.root == tb.root and ta.root in ("STRING", "BOOLEAN"))):
                return None
            fn = getattr(pc, _CMP[name])
            ka, kb = ks
            return (lambda batch: fn(ka(batch), kb(batch))), t
        if name in ("and", "or"):
            fn = pc.and_kleene if name == "and" else pc.or_kleene
            ka, kb = ks
            return (lambda batch: fn(ka(batch), kb(batch))), t
        if name == "not":
            (ka,) = ks
            return (lambda batch: pc.invert(ka(batch))), t
        if name in ("is_null", "is_not_null"):
            (ka,) = ks
            fn = pc.is_null if name == "is_null" else pc.is_valid
            return (lambda batch: fn(ka(batch))), t
        if name == "char_length":
            (ka,) = ks
            return (lambda batch: pc.cast(pc.utf8_length(ka(batch)), pa.int32())), t
        return None


def _constant(scalar: Any) -> Kernel:
    return lambda batch: scalar


def _pass_through(e: Expression, columns: Columns) -> int | None:
    while e.op == "alias":
        e = e.args[0]
    return column_index(e.name, columns) if e.op == "col" else None


class ColumnarCalc:
    """`map_bundle(rows)` -> the projected rows (None where WHERE dropped the row), computed per column."""

    def __init__(self, columns: Columns, projections: list[tuple[int | None, Kernel | None]],
                 condition: Kernel | None, used: list[int], names: list[str]) -> None:
        self.columns = columns
        self.projections = projections
        self.condition = condition
        self.used = used
        self.names = tuple(names)

    # hot path: called per input batch
    def map_bundle(self, rows: list[Any]) -> list[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(rows)
        batch = {i: pa.array([r[i] for r in rows], type=arrow_type(self.columns[i][1])) for i in self.used}
        index = list(range(n))
        if self.condition is not None:
            mask = self.condition(batch)
            if isinstance(mask, pa.Scalar):
                mask = pa.array([mask.as_py()] * n, type=pa.bool_())
            mask = pc.fill_null(mask, False)
            index = pc.indices_nonzero(mask).to_pylist()
            if len(index) != n:
                take = pa.array(index, type=pa.int64())
                batch = {i: a.take(take) for i, a in batch.items()}
        kept = [rows[i] for i in index]
        cols: list[list[Any]] = []
        for passed, kernel in self.projections:
            if passed is not None:
                cols.append([r[passed] for r in kept])
                continue
            assert kernel is not None
            v = kernel(batch)
            cols.append([v.as_py()] * len(kept) if isinstance(v, pa.Scalar) else v.to_pylist())
        out: list[Any] = [None] * n
        names = self.names
        for i, r, values in zip(index, kept, zip(*cols, strict=True) if cols else [()] * len(kept), strict=True):
            out[i] = make_row(list(values), names, r.get_row_kind())
        return out


def compile_columnar(columns: Columns, projections: list[Expression], condition: Expression | None,
                     names: list[str]) -> ColumnarCalc | None:
    """The columnar form of a Calc, or None when one of its expressions has no kernel with Flink's semantics
    (or it computes nothing: a Calc of plain column references is left to the row path, a cheap copy)."""
    c = _Compiler(columns)
    cond: Kernel | None = None
    if condition is not None:
        compiled = c.compile(condition)
        if compiled is None:
            return None
        cond = compiled[0]
    projs: list[tuple[int | None, Kernel | None]] = []
    for p in projections:
        passed = _pass_through(p, columns)
        if passed is not None:
            projs.append((passed, None))
            continue
        compiled = c.compile(p)
        if compiled is None:
            return None
        projs.append((None, compiled[0]))
    if cond is None and all(k is None for _, k in projs):
        return None
    return ColumnarCalc(list(columns), projs, cond, sorted(c.used), names)


def columnar_bundle(config: Configuration) -> dict[str, int]:
    """The bundled-map operator's bounds: Flink's mini-batch size and latency when mini-batch is on and both are
    set, else each input batch alone (size 1 flushes every batch at once)."""
    size, latency = config.get(TABLE_MINI_BATCH_SIZE), config.get(TABLE_MINI_BATCH_LATENCY)
    if config.get(TABLE_MINI_BATCH_ENABLED) and size > 0 and latency > 0:
        return {"bundle_size": size, "bundle_time_ms": int(latency)}
    return {"bundle_size": 1, "bundle_time_ms": 0}
