"""The statements of a SQL JDBC table (`'connector' = 'jdbc'`) in PostgreSQL's terms: pure text, no I/O.

Identifiers are double-quoted (a `schema.table` name quoted part by part), so column names keep the
case the CREATE TABLE gave them, as Flink's PostgreSQL dialect does. Parameters are psycopg's `%s`.
"""

from __future__ import annotations

from collections.abc import Sequence


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_table(table_name: str) -> str:
    """'public.orders' -> "public"."orders" (Flink's 'table-name' may carry the schema)."""
    return ".".join(quote_identifier(part) for part in table_name.split("."))


def _columns(columns: Sequence[str]) -> str:
    return ", ".join(quote_identifier(c) for c in columns)


def select_statement(table_name: str, columns: Sequence[str], where: str = "") -> str:
    return f"SELECT {_columns(columns)} FROM {quote_table(table_name)}{' WHERE ' + where if where else ''}"


def lookup_statement(table_name: str, columns: Sequence[str], keys: Sequence[str]) -> str:
    """The rows whose `keys` equal the parameters (Flink's JdbcRowDataLookupFunction query)."""
    return select_statement(table_name, columns, " AND ".join(f"{quote_identifier(k)} = %s" for k in keys))


def insert_statement(table_name: str, columns: Sequence[str]) -> str:
    params = ", ".join("%s" for _ in columns)
    return f"INSERT INTO {quote_table(table_name)} ({_columns(columns)}) VALUES ({params})"


def upsert_statement(table_name: str, columns: Sequence[str], keys: Sequence[str]) -> str:
    """INSERT .. ON CONFLICT (keys) DO UPDATE (Flink's PostgresDialect.getUpsertStatement); a table whose
    every column is a key does nothing on conflict."""
    rest = [c for c in columns if c not in keys]
    action = ("DO UPDATE SET " + ", ".join(f"{quote_identifier(c)} = EXCLUDED.{quote_identifier(c)}" for c in rest)
              if rest else "DO NOTHING")
    return f"{insert_statement(table_name, columns)} ON CONFLICT ({_columns(keys)}) {action}"


def delete_statement(table_name: str, keys: Sequence[str]) -> str:
    return f"DELETE FROM {quote_table(table_name)} WHERE " + " AND ".join(f"{quote_identifier(k)} = %s" for k in keys)


def partition_ranges(lower: int, upper: int, num: int) -> list[tuple[int, int]]:
    """`scan.partition.lower-bound` .. `upper-bound` cut into `num` inclusive ranges of nearly equal size,
    as Flink's JdbcNumericBetweenParametersProvider (the first ranges one longer when it does not divide)."""
    if num < 1 or upper < lower:
        raise ValueError(f"cannot cut [{lower}, {upper}] into {num} partitions")
    count = upper - lower + 1
    num = min(num, count)
    size, bigger = divmod(count, num)
    out = []
    start = lower
    for i in range(num):
        end = start + size - 1 + (1 if i < bigger else 0)
        out.append((start, end))
        start = end + 1
    return out


def partition_where(column: str, index: int, ranges: list[tuple[int, int]]) -> str:
    """The WHERE of partition `index`: its range, the first also NULLs and values below the lower bound,
    the last values above the upper bound, so that every row is read exactly once."""
    lo, hi = ranges[index]
    c = quote_identifier(column)
    parts = [f"{c} BETWEEN {lo} AND {hi}"]
    if index == 0:
        parts += [f"{c} < {lo}", f"{c} IS NULL"]
    if index == len(ranges) - 1:
        parts.append(f"{c} > {hi}")
    return "(" + " OR ".join(parts) + ")"
