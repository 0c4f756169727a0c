"""Lookup joins into a filesystem table (Flink's FileSystemLookupFunction, Nexmark q13's side input): the
joined rows equal DuckDB's join of the same rows; the table is read once and read again only after
`lookup.join.cache.ttl`; a bad ttl is refused naming the option."""

from __future__ import annotations

from collections import Counter

import pytest
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.connectors import TableContext, factory_for
from strom.table.errors import ValidationException
from strom.table.types import DataTypes

from tests.table.reference import duckdb_table, normalize

PROBES = [(1, 11, "a"), (2, 12, "b"), (3, 25, "c"), (4, None, "d"), (5, 7, "e"), (6, 31, "f"), (7, -3, "g")]
DIM = [(1, "one", 5), (2, "two", 20), (2, "deux", 3), (5, "five", 30), (7, "seven", 1), (None, "none", 9)]


def _write_dim(path, rows) -> None:
    path.write_text("".join(",".join("" if v is None else str(v) for v in r) + "\n" for r in rows))


@pytest.mark.parametrize("kind", ["INNER", "LEFT"])
def test_lookup_join_into_a_csv_table_equals_duckdb(tmp_path, kind):
    dim = tmp_path / "dim.csv"
    _write_dim(dim, DIM)
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.create_temporary_view("probes_v", t_env.from_elements(PROBES, ["seq", "k", "s"]))
    t_env.execute_sql(f"CREATE TABLE dim (id BIGINT, label STRING, weight INT) WITH ('connector' = 'filesystem', "
                      f"'path' = '{dim}', 'format' = 'csv')")
    query = (f"SELECT B.seq, B.k, B.s, D.label FROM (SELECT *, PROCTIME() AS p FROM probes_v) B {kind} JOIN dim "
             "FOR SYSTEM_TIME AS OF B.p AS D ON MOD(B.k, 10) = D.id AND D.weight > 2")
    with t_env.sql_query(query).execute().collect() as rows:
        got = Counter(normalize(tuple(r)) for r in rows)
    expected = duckdb_table({"probes": ([("seq", "BIGINT"), ("k", "BIGINT"), ("s", "VARCHAR")], PROBES),
                             "dim": ([("id", "BIGINT"), ("label", "VARCHAR"), ("weight", "INTEGER")], DIM)},
                            f"SELECT B.seq, B.k, B.s, D.label FROM probes B {kind} JOIN dim D "
                            "ON B.k % 10 = D.id AND D.weight > 2")
    assert got == expected


def _source(path, ttl: str | None, clock):
    options = {"connector": "filesystem", "path": str(path), "format": "csv"}
    if ttl is not None:
        options["lookup.join.cache.ttl"] = ttl
    ctx = TableContext(name="dim", columns=[("id", DataTypes.BIGINT()), ("label", DataTypes.STRING()),
                                            ("weight", DataTypes.INT())], options=options)
    factory = factory_for("dim", options)
    factory.validate(ctx)
    source = factory.lookup_function(ctx, ["id"])
    source.clock = clock
    return source


def test_the_table_is_read_again_only_after_the_cache_ttl(tmp_path):
    dim = tmp_path / "dim.csv"
    _write_dim(dim, [(1, "one", 5)])
    now = [0]
    source = _source(dim, "10 s", lambda: now[0])
    source.open()
    assert [tuple(r) for r in source.lookup((1,))] == [(1, "one", 5)]
    _write_dim(dim, [(1, "uno", 5), (2, "dos", 6)])
    now[0] = 9_999  # within the ttl: the copy read first still answers
    assert [tuple(r) for r in source.lookup((1,))] == [(1, "one", 5)]
    assert source.lookup((2,)) == []
    now[0] = 10_000  # the ttl has passed: read again
    assert [tuple(r) for r in source.lookup((1,))] == [(1, "uno", 5)]
    assert [tuple(r) for r in source.lookup((2,))] == [(2, "dos", 6)]
    assert source.loads == 2
    assert sorted(tuple(r) for r in source.scan()) == [(1, "uno", 5), (2, "dos", 6)]


def test_a_cache_ttl_that_is_not_a_duration_is_refused(tmp_path):
    dim = tmp_path / "dim.csv"
    _write_dim(dim, [(1, "one", 5)])
    with pytest.raises(ValidationException, match="lookup.join.cache.ttl"):
        _source(dim, "soon", lambda: 0)
