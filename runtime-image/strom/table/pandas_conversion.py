"""Conversions between tables and pandas DataFrames (PyFlink's `from_pandas` / `Table.to_pandas`).

Both go through Arrow as PyFlink does, so the types and NULLs come out the same: a DataFrame column's
Arrow type decides its SQL type (int64 -> BIGINT, float64 -> DOUBLE, object of str -> STRING, ...), a
NaN or None in a pandas column is NULL (Arrow's `from_pandas` semantics), and a table converts back
through `pyarrow.Table.to_pandas()` (an INT column with NULLs becomes float64, a DATE column holds
`datetime.date` objects). An updating table is materialized first: its changelog reduced to the final
rows, as PyFlink's `to_pandas` collects the final table.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from strom.common.row import RowKind
from strom.table.errors import ValidationException
from strom.table.types import DataType, DataTypes

# Flink type root -> Arrow type (built lazily: pyarrow is imported only when a conversion runs)
_ARROW_ROOTS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "BOOLEAN", "DATE")


def to_arrow_type(t: DataType) -> Any:
    """The Arrow type of a SQL type (TIMESTAMP in microseconds, LTZ in UTC), or None if none is defined."""
    import pyarrow as pa

    simple = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
              "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "STRING": pa.string(), "BOOLEAN": pa.bool_(),
              "DATE": pa.date32()}
    if t.root in simple:
        return simple[t.root]
    if t.root == "TIMESTAMP":
        return pa.timestamp("us")
    if t.root == "TIMESTAMP_LTZ":
        return pa.timestamp("us", tz="UTC")
    if t.root == "ROW":
        fields = [pa.field(n, to_arrow_type(ft), ft.nullable) for n, ft in t.fields]
        return None if any(f.type is None for f in fields) else pa.struct(fields)
    return None


def from_arrow_type(arrow_type: Any, nullable: bool, column: str) -> DataType:
    """PyFlink's from_arrow_type for the types Strom's runtime has."""
    import pyarrow as pa
    import pyarrow.types as pat

    checks = [(pat.is_int8, DataTypes.TINYINT), (pat.is_int16, DataTypes.SMALLINT), (pat.is_int32, DataTypes.INT),
              (pat.is_int64, DataTypes.BIGINT), (pat.is_float32, DataTypes.FLOAT), (pat.is_float64, DataTypes.DOUBLE),
              (pat.is_boolean, DataTypes.BOOLEAN), (pat.is_date32, DataTypes.DATE)]
    for check, factory in checks:
        if check(arrow_type):
            return factory(nullable)
    if pat.is_string(arrow_type) or pat.is_large_string(arrow_type):
        return DataTypes.STRING(nullable)
    if pat.is_timestamp(arrow_type):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[arrow_type.unit]
        if arrow_type.tz is not None:
            return DataTypes.TIMESTAMP_LTZ(precision, nullable)
        return DataTypes.TIMESTAMP(precision, nullable)
    if pat.is_struct(arrow_type):
        return DataTypes.ROW([DataTypes.FIELD(f.name, from_arrow_type(f.type, f.nullable, f"{column}.{f.name}"))
                              for f in arrow_type], nullable)
    if arrow_type == pa.null():  # an all-None object column: PyFlink cannot type it either
        raise ValidationException(f"from_pandas: column {column!r} holds only None, so it has no type; pass "
                                  "schema=[DataTypes...] or DataTypes.ROW([...])")
    raise ValidationException(f"from_pandas: column {column!r} has Arrow type {arrow_type}, which Strom has no SQL "
                              "type for; convert it (e.g. to str or float64) or pass a schema")


def dataframe_columns(pdf: Any, schema: Any) -> list[tuple[str, DataType]]:
    """The table's columns for a DataFrame and from_pandas' `schema` (None, a ROW type, names or types)."""
    import pandas as pd
    import pyarrow as pa

    if not isinstance(pdf, pd.DataFrame):
        raise TypeError(f"from_pandas: expected a pandas.DataFrame, got {type(pdf).__name__}")
    if isinstance(schema, DataType):
        if schema.root != "ROW":
            raise ValidationException(f"from_pandas: schema must be DataTypes.ROW([...]), got {schema}")
        columns = list(schema.fields)
    else:
        try:
            arrow_schema = pa.Schema.from_pandas(pdf, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ValidationException(f"from_pandas: the DataFrame's columns have no common Arrow type: {e}; "
                                      "pass a schema") from None
        inferred = [(str(f.name), f) for f in arrow_schema]
        if schema is None:
            columns = [(n, from_arrow_type(f.type, f.nullable, n)) for n, f in inferred]
        elif isinstance(schema, (list, tuple)) and schema and all(isinstance(s, str) for s in schema):
            columns = [(n, from_arrow_type(f.type, f.nullable, n)) for n, (_, f) in zip(schema, inferred, strict=False)]
        elif isinstance(schema, (list, tuple)) and schema and all(isinstance(s, DataType) for s in schema):
            columns = [(n, t) for (n, _), t in zip(inferred, schema, strict=False)]
        else:
            raise ValidationException(f"from_pandas: schema must be DataTypes.ROW([...]), a list of column names "
                                      f"or a list of DataTypes, got {schema!r}")
    if len(columns) != len(pdf.columns):
        raise ValidationException(f"from_pandas: the schema has {len(columns)} columns, the DataFrame "
                                  f"{len(pdf.columns)} ({', '.join(map(str, pdf.columns))})")
    return columns


def dataframe_rows(pdf: Any, columns: list[tuple[str, DataType]]) -> list[tuple[Any, ...]]:
    """The DataFrame's rows as Python values of the columns' SQL types (NaN/None -> NULL)."""
    import pyarrow as pa

    values: list[list[Any]] = []
    for i, (name, t) in enumerate(columns):
        target = to_arrow_type(t)
        if target is None:
            raise ValidationException(f"from_pandas: column {name!r} of type {t} cannot be read from a DataFrame")
        series = pdf.iloc[:, i]
        try:
            arr = pa.Array.from_pandas(series, type=target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise ValidationException(f"from_pandas: column {name!r} cannot be read as {t}: {e}") from None
        if not t.nullable and arr.null_count:
            raise ValidationException(f"from_pandas: column {name!r} is {t} but holds {arr.null_count} NULL/NaN values")
        py = arr.to_pylist()
        if t.root == "TIMESTAMP_LTZ":  # Strom's LTZ values are naive UTC datetimes, as its functions make them
            py = [None if v is None else v.replace(tzinfo=None) for v in py]
        values.append(py)
    return list(zip(*values, strict=True)) if values else []


def split_rows(rows: list[tuple[Any, ...]], splits_num: int) -> list[list[tuple[Any, ...]]]:
    """PyFlink's slicing of a DataFrame into `splits_num` consecutive parts of ceil(n / splits) rows."""
    if not isinstance(splits_num, int) or isinstance(splits_num, bool) or splits_num < 1:
        raise ValidationException(f"from_pandas: splits_num must be a positive integer, got {splits_num!r}")
    step = max(1, -(-len(rows) // splits_num))
    return [rows[s:s + step] for s in range(0, len(rows), step)]


def final_rows(changelog: Iterable[Any]) -> list[tuple[Any, ...]]:
    """Reduce a changelog (+I/+U add a row, -U/-D retract one equal row) to the final table, in arrival order
    of the surviving rows."""
    live: list[tuple[Any, ...] | None] = []
    positions: dict[tuple[Any, ...], list[int]] = {}
    for row in changelog:
        values = tuple(row)
        kind = row.get_row_kind() if hasattr(row, "get_row_kind") else RowKind.INSERT
        if kind is RowKind.UPDATE_BEFORE or kind is RowKind.DELETE:
            slots = positions.get(values)
            if not slots:
                raise ValidationException(f"to_pandas: the changelog retracts {values!r}, which was never added")
            live[slots.pop()] = None
        else:
            positions.setdefault(values, []).append(len(live))
            live.append(values)
    return [r for r in live if r is not None]


def to_dataframe(columns: list[tuple[str, DataType]], rows: list[tuple[Any, ...]]) -> Any:
    """A DataFrame of the rows, typed through Arrow as PyFlink's to_pandas types them."""
    import pandas as pd
    import pyarrow as pa

    names = [n for n, _ in columns]
    if not rows:
        return pd.DataFrame.from_records([], columns=names)
    arrays = []
    for i, (name, t) in enumerate(columns):
        data = [r[i] for r in rows]
        target = to_arrow_type(t)
        if t.root == "TIMESTAMP_LTZ":
            data = [None if v is None or v.tzinfo is not None else v.replace(tzinfo=datetime.UTC) for v in data]
        try:
            arrays.append(pa.array(data, type=target))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ValidationException(f"to_pandas: column {name!r} ({t}) cannot be converted: {e}") from None
    return pa.Table.from_arrays(arrays, names=names).to_pandas()
