"""`INSERT INTO t (a, c) SELECT ..`: the query's columns go to the listed sink columns in order; every
other sink column gets NULL (Flink's rule), which a NOT NULL column refuses."""

from __future__ import annotations

from strom.table.errors import ValidationException
from strom.table.expressions import Expression, col, lit
from strom.table.planner import builder
from strom.table.planner.plan import PlanNode
from strom.table.types import DataType


def fit_column_list(node: PlanNode, table: str, sink: list[tuple[str, DataType]], columns: list[str]) -> PlanNode:
    names = [n for n, _ in sink]
    for c in columns:
        if c not in names:
            raise ValidationException(f"INSERT INTO {table} ({', '.join(columns)}): unknown target column {c!r}; "
                                      f"the table's columns: {', '.join(names)}")
    duplicates = sorted({c for c in columns if columns.count(c) > 1})
    if duplicates:
        raise ValidationException(f"INSERT INTO {table}: target column {duplicates[0]!r} is listed twice")
    if len(columns) != len(node.columns):
        raise ValidationException(f"INSERT INTO {table} ({', '.join(columns)}): the query has {len(node.columns)} "
                                  f"columns, the column list {len(columns)}")
    source = {c: node.columns[i][0] for i, c in enumerate(columns)}
    if len({n for n, _ in node.columns}) != len(node.columns):  # same-named query columns: name them apart
        node = builder.select(node, [col(n).alias(f"EXPR${i}") for i, (n, _) in enumerate(node.columns)])
        source = {c: f"EXPR${i}" for i, c in enumerate(columns)}
    projection: list[Expression] = []
    for name, t in sink:
        if name in source:
            projection.append(col(source[name]).alias(name))
        elif not t.nullable:
            raise ValidationException(f"INSERT INTO {table} ({', '.join(columns)}): column {name!r} is NOT NULL and "
                                      "not in the column list (only nullable columns are filled with NULL)")
        else:
            projection.append(lit(None).cast(t.plain()).alias(name))
    return builder.select(node, projection)


def fill_static_partition(node: PlanNode, table: str, sink: list[tuple[str, DataType]], partition_keys: tuple[str, ...],
                          static: list[tuple[str, Expression]]) -> PlanNode:
    """`INSERT .. t PARTITION (k = 'v') SELECT ..`: the query gives the sink's other columns in order, each
    static partition column its constant (cast to the column's type), as Flink's static partition insert."""
    names = [n for n, _ in sink]
    for k, _ in static:
        if k not in partition_keys:
            raise ValidationException(f"INSERT INTO {table} PARTITION ({k} = ..): {k!r} is not a partition column of "
                                      f"{table} (partition columns: {', '.join(partition_keys) or 'none'})")
    values = dict(static)
    if len(values) != len(static):
        raise ValidationException(f"INSERT INTO {table} PARTITION (..): a partition column is given twice")
    rest = [n for n in names if n not in values]
    if len(rest) != len(node.columns):
        raise ValidationException(f"INSERT INTO {table} PARTITION ({', '.join(values)}): the query has "
                                  f"{len(node.columns)} columns, the table's other columns are {len(rest)} "
                                  f"({', '.join(rest)})")
    query_names = [n for n, _ in node.columns]
    if len(set(query_names)) != len(query_names):  # same-named query columns: name them apart
        node = builder.select(node, [col(n).alias(f"EXPR${i}") for i, n in enumerate(query_names)])
        query_names = [f"EXPR${i}" for i in range(len(query_names))]
    source = dict(zip(rest, query_names, strict=True))
    projection = [col(source[n]).alias(n) if n not in values else values[n].cast(t.plain()).alias(n)
                  for n, t in sink]
    return builder.select(node, projection)
