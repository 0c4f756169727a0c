"""SQL `VALUES (..), (..)` as a table: constant rows become a Values source like from_elements'.

Each column takes the common type of its rows (numeric ones widen as in arithmetic; a NULL takes the
others' type and makes the column nullable), as Flink's validator derives a VALUES row type."""

from __future__ import annotations

from typing import Any

from strom.table import decimals
from strom.table.errors import ValidationException
from strom.table.expressions import Expression
from strom.table.planner.plan import SourceNode
from strom.table.planner.scalar import compile_scalar
from strom.table.types import DataType, DataTypes, wider_numeric

_NUMERIC = {"TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL", "FLOAT", "DOUBLE"}


def _column_type(name: str, types: list[DataType | None]) -> DataType:
    known = [t for t in types if t is not None]
    nullable = len(known) < len(types) or any(t.nullable for t in known)
    if not known:
        return DataTypes.STRING()  # every row NULL: Flink would ask for a CAST; a nullable STRING is harmless
    result = known[0]
    for t in known[1:]:
        if t.root in _NUMERIC and result.root in _NUMERIC:
            result = wider_numeric(result, t)
        elif t.base() != result.base():
            raise ValidationException(f"VALUES: column {name!r} mixes {result.base()} and {t.base()}; CAST to one type")
    return result if nullable == result.nullable else (result.nullable_() if nullable else result.not_null())


def _coerce(v: Any, t: DataType) -> Any:
    if v is not None and t.root in ("FLOAT", "DOUBLE"):
        return float(v)
    if v is not None and t.root == "DECIMAL":  # every row at the column's scale (1.5 in DECIMAL(3, 2): 1.50)
        return decimals.fitter(t)(v)
    return v


def values_node(rows: list[list[Expression]], names: list[str] | None, table_name: str) -> SourceNode:
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise ValidationException(f"VALUES: row {i + 1} has {len(r)} values, row 1 has {width}")
    if names is None:
        names = [f"EXPR${i}" for i in range(width)]  # Calcite's names for unaliased VALUES columns
    elif len(names) != width:
        raise ValidationException(f"VALUES: {len(names)} column names ({', '.join(names)}) for rows of {width} values")
    values: list[list[Any]] = []
    types: list[list[DataType | None]] = [[] for _ in range(width)]
    for r in rows:
        out = []
        for j, e in enumerate(r):
            if e.contains_aggregate() or _refers_to_column(e):
                raise ValidationException(f"VALUES: {e.sql()} is not a constant")
            fn, t = compile_scalar(e, [])
            v = fn(())
            out.append(v)
            types[j].append(None if e.op == "lit" and e.value is None and e.data_type is None else t)
        values.append(out)
    columns = [(n, _column_type(n, ts)) for n, ts in zip(names, types, strict=True)]
    elements = [tuple(_coerce(v, t) for v, (_, t) in zip(r, columns, strict=True)) for r in values]
    return SourceNode(columns, table_name=table_name, elements=elements)


def _refers_to_column(e: Expression) -> bool:
    return e.op == "col" or any(_refers_to_column(a) for a in e.args)
