"""Independent references for the Table API tests: a changelog reduced to the table it describes, and
the same query computed by DuckDB over the same rows."""

from __future__ import annotations

from collections import Counter
from typing import Any

import duckdb
from strom.common.row import RowKind


def normalize(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Floats rounded (two engines sum in different orders)."""
    return tuple(round(v, 6) if isinstance(v, float) else v for v in values)


def reduce_changelog(rows: list[Any]) -> Counter:
    """Apply +I/+U (add) and -U/-D (remove) to a multiset; a removal of a row that is not there fails."""
    table: Counter = Counter()
    for row in rows:
        values = normalize(tuple(row))
        if row.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            table[values] += 1
        else:
            assert table[values] > 0, f"{row.get_row_kind()} of {values} that is not in the table"
            table[values] -= 1
            if not table[values]:
                del table[values]
    return table


def duckdb_table(tables: dict[str, tuple[list[tuple[str, str]], list[tuple[Any, ...]]]], sql: str) -> Counter:
    """Run `sql` in DuckDB over `tables`: name -> ([(column, duckdb type)], rows)."""
    con = duckdb.connect()
    try:
        for name, (columns, rows) in tables.items():
            con.execute(f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t in columns)})")
            if rows:
                con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in columns)})", rows)
        return Counter(normalize(tuple(r)) for r in con.execute(sql).fetchall())
    finally:
        con.close()
