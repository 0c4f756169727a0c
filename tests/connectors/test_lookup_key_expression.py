"""A lookup join keyed by an expression over the probe side (Nexmark q13: `ON mod(B.auction, 10000) = S.key`):
Flink computes the expression before the lookup; the joined rows equal DuckDB's join of the same rows, and
the hidden key column does not show in the result."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.connectors.test_jdbc_sql import pg_execute, table_env, with_options
from tests.table.reference import duckdb_table, normalize

PROBES = [(1, 11, "a"), (2, 12, "b"), (3, 25, "c"), (4, None, "d"), (5, 7, "e"), (6, 31, "f"), (7, -3, "g")]
DIM = [(1, "one", 5), (2, "two", 20), (5, "five", 30), (7, "seven", 1)]


@pytest.mark.parametrize("kind", ["INNER", "LEFT"])
def test_lookup_key_computed_from_the_probe_row_equals_duckdb(postgres, table_name, kind):
    pg_execute(postgres, f"CREATE TABLE {table_name} (id INT PRIMARY KEY, label TEXT, weight INT)",
               f"INSERT INTO {table_name} VALUES (%s, %s, %s)", params=DIM)
    t_env = table_env()
    t_env.create_temporary_view("probes_v", t_env.from_elements(PROBES, ["seq", "k", "s"]))
    t_env.execute_sql(f"CREATE TABLE dim (id INT, label STRING, weight INT, PRIMARY KEY (id) NOT ENFORCED) "
                      f"WITH ({with_options(postgres, table_name)})")
    query = (f"SELECT B.seq, B.k, B.s, D.label FROM (SELECT *, PROCTIME() AS p FROM probes_v) B {kind} JOIN dim "
             "FOR SYSTEM_TIME AS OF B.p AS D ON MOD(B.k, 10) = D.id AND D.weight > 2")
    table = t_env.sql_query(query)
    assert table.get_schema().get_field_names() == ["seq", "k", "s", "label"]
    with table.execute().collect() as rows:
        got = Counter(normalize(tuple(r)) for r in rows)
    # DuckDB's % keeps the dividend's sign as Java's (Flink's MOD) does
    expected = duckdb_table({"probes": ([("seq", "BIGINT"), ("k", "BIGINT"), ("s", "VARCHAR")], PROBES),
                             "dim": ([("id", "INTEGER"), ("label", "VARCHAR"), ("weight", "INTEGER")], DIM)},
                            f"SELECT B.seq, B.k, B.s, D.label FROM probes B {kind} JOIN dim D "
                            "ON B.k % 10 = D.id AND D.weight > 2")
    assert got == expected
