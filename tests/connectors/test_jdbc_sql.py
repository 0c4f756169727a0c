"""`'connector' = 'jdbc'` in SQL against a real PostgreSQL server: an upsert table fed by GROUP BY equals
DuckDB's answer, an append table read back by a partitioned scan, lookup joins with each cache mode equal a
plain-Python join over the table's rows (cache counters read from the job's metrics), freshness after a
cache expiry or reload, and the one-line errors of bad options and an unreachable database."""

from __future__ import annotations

import random
import socket
import time
from collections import Counter
from typing import Any

import pytest
import strom.table.connectors.jdbc  # noqa: F401  (registers the connector until the package imports it)
from strom.connectors.jdbc.lookup import JdbcLookupSource
from strom.connectors.jdbc.options import JdbcConnectionOptions
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.errors import ValidationException
from strom.table.planner.lookup_cache import CacheMetrics, LookupOptions, make_cache

from tests.table.reference import duckdb_table, normalize


def table_env(parallelism: int = 1) -> Any:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    return t_env


def with_options(server: Any, table: str, **extra: str) -> str:
    options = {"connector": "jdbc", "url": server.jdbc_url, "table-name": table, "username": server.user,
               **({"password": server.password} if server.password else {}), **extra}
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def pg_rows(server: Any, sql: str) -> list[tuple]:
    with server.connect() as c:
        return c.execute(sql).fetchall()


def pg_execute(server: Any, *statements: str, params: list[tuple] | None = None) -> None:
    with server.connect() as c:
        for s in statements:
            if params is not None and "%s" in s:
                c.cursor().executemany(s, params)
            else:
                c.execute(s)


def test_group_by_into_a_jdbc_upsert_table_equals_duckdb(postgres, table_name):
    rng = random.Random(7)
    events = [(rng.randrange(40), rng.choice("abc"), rng.randrange(1000)) for _ in range(3_000)]
    pg_execute(postgres, f"CREATE TABLE {table_name} (k INT PRIMARY KEY, cnt BIGINT, total BIGINT, top TEXT)")
    t_env = table_env(parallelism=2)
    t_env.create_temporary_view("events", t_env.from_elements(events, ["k", "tag", "v"]))
    t_env.execute_sql(f"""CREATE TABLE sums (k INT, cnt BIGINT, total BIGINT, top STRING,
        PRIMARY KEY (k) NOT ENFORCED) WITH ({with_options(postgres, table_name, **{
        'sink.buffer-flush.max-rows': '37', 'sink.buffer-flush.interval': '100 ms'})})""")
    t_env.execute_sql("INSERT INTO sums SELECT k, COUNT(*), SUM(v), MAX(tag) FROM events GROUP BY k").wait(120_000)
    expected = duckdb_table({"events": ([("k", "INT"), ("tag", "VARCHAR"), ("v", "BIGINT")], events)},
                            "SELECT k, COUNT(*), SUM(v), MAX(tag) FROM events GROUP BY k")
    assert Counter(normalize(r) for r in pg_rows(postgres, f"SELECT * FROM {table_name}")) == expected


def test_append_table_is_read_back_by_a_partitioned_scan(postgres, table_name):
    rows = [(i, f"name-{i % 7}", i * 1.5) for i in range(-5, 500)] + [(None, "no id", 0.0)]
    pg_execute(postgres, f"CREATE TABLE {table_name} (id INT, name TEXT, score DOUBLE PRECISION)")
    t_env = table_env(parallelism=2)
    t_env.create_temporary_view("src", t_env.from_elements(rows, ["id", "name", "score"]))
    t_env.execute_sql(f"CREATE TABLE people (id INT, name STRING, score DOUBLE) "
                      f"WITH ({with_options(postgres, table_name)})")
    t_env.execute_sql("INSERT INTO people SELECT * FROM src").wait(120_000)
    assert Counter(pg_rows(postgres, f"SELECT * FROM {table_name}")) == Counter(rows)
    t_env.execute_sql(f"""CREATE TABLE people_scan (id INT, name STRING, score DOUBLE) WITH ({with_options(
        postgres, table_name, **{'scan.partition.column': 'id', 'scan.partition.num': '3',
                                 'scan.partition.lower-bound': '0', 'scan.partition.upper-bound': '400'})})""")
    with t_env.execute_sql("SELECT id, name, score FROM people_scan").collect() as it:
        read = Counter(tuple(r) for r in it)
    assert read == Counter(rows)  # rows outside the bounds and NULL ids read once too


# -- lookup joins ----------------------------------------------------------------------------------------------------

def _dimension(server: Any, name: str, rows: list[tuple]) -> None:
    pg_execute(server, f"CREATE TABLE {name} (id INT PRIMARY KEY, label TEXT, weight INT)",
               f"INSERT INTO {name} VALUES (%s, %s, %s)", params=rows)


def _orders(n: int, keys: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    return [(i, rng.choice([None, *range(keys + 5)]), rng.randrange(100)) for i in range(n)]


def _python_lookup_join(orders: list[tuple], dim: list[tuple], left: bool) -> Counter:
    by_id = {d[0]: d for d in dim}
    out: Counter = Counter()
    for oid, k, amount in orders:
        d = by_id.get(k) if k is not None else None
        if d is not None and d[2] > 10:  # the residual condition of the query
            out[(oid, k, amount, d[1], d[2])] += 1
        elif left:
            out[(oid, k, amount, None, None)] += 1
    return out


def _cache_metrics(result: Any) -> dict[str, float]:
    job = result.get_job_client()._client._job
    totals: Counter = Counter()
    for s in job.metrics_snapshot().subtasks:
        for m in s.user:
            if m.name in ("hitCount", "missCount", "loadCount", "numCachedRecords"):
                totals[m.name] += m.value
    return dict(totals)


CACHES = {
    "NONE": {},
    "PARTIAL": {"lookup.cache": "PARTIAL", "lookup.partial-cache.max-rows": "1000",
                "lookup.partial-cache.expire-after-write": "1 h"},
    "FULL": {"lookup.cache": "FULL", "lookup.full-cache.periodic-reload.interval": "1 h"},
}


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("cache", list(CACHES))
@pytest.mark.parametrize("kind", ["INNER", "LEFT"])
def test_lookup_join_equals_a_python_join_and_counts_cache_hits(postgres, table_name, cache, kind, is_async):
    dim = [(i, f"label-{i}", (i * 7) % 30) for i in range(40)]
    orders = _orders(600, keys=40, seed=len(cache) + len(kind))
    _dimension(postgres, table_name, dim)
    t_env = table_env()
    t_env.create_temporary_view("orders_v", t_env.from_elements(orders, ["oid", "k", "amount"]))
    t_env.execute_sql("CREATE VIEW orders AS SELECT oid, k, amount, PROCTIME() AS proc_time FROM orders_v")
    options = {**CACHES[cache], "lookup.async": str(is_async).lower()}
    t_env.execute_sql(f"CREATE TABLE dim (id INT, label STRING, weight INT, PRIMARY KEY (id) NOT ENFORCED) "
                      f"WITH ({with_options(postgres, table_name, **options)})")
    out = f"{table_name}_out"
    pg_execute(postgres, f"CREATE TABLE {out} (oid INT, k INT, amount INT, label TEXT, weight INT)")
    t_env.execute_sql(f"CREATE TABLE joined (oid INT, k INT, amount INT, label STRING, weight INT) "
                      f"WITH ({with_options(postgres, out)})")
    result = t_env.execute_sql(f"""INSERT INTO joined SELECT o.oid, o.k, o.amount, d.label, d.weight FROM orders AS o
        {kind} JOIN dim FOR SYSTEM_TIME AS OF o.proc_time AS d ON o.k = d.id AND d.weight > 10""")
    result.wait(120_000)
    assert Counter(pg_rows(postgres, f"SELECT * FROM {out}")) == _python_lookup_join(orders, dim, left=kind == "LEFT")
    probes = sum(1 for _, k, _ in orders if k is not None)
    distinct = len({k for _, k, _ in orders if k is not None})
    metrics = _cache_metrics(result)
    expected = {
        "NONE": {"hitCount": 0, "missCount": probes, "loadCount": probes, "numCachedRecords": 0},
        "PARTIAL": {"hitCount": probes - distinct, "missCount": distinct, "loadCount": distinct,
                    "numCachedRecords": len({k for _, k, _ in orders if k is not None and k < 40})},
        "FULL": {"hitCount": probes, "missCount": 0, "loadCount": 1, "numCachedRecords": len(dim)},
    }[cache]
    if is_async and cache == "PARTIAL":
        # concurrent probes of a key not yet cached each miss (Flink's async lookup behaves the same)
        assert metrics["hitCount"] + metrics["missCount"] == probes and metrics["missCount"] >= distinct
        assert metrics["loadCount"] == metrics["missCount"]
    else:
        assert metrics == expected
    print(f"lookup cache {cache} {kind} {'async' if is_async else 'sync'}: hit ratio "
          f"{metrics['hitCount'] / probes:.2f} ({metrics})")


def _source(server: Any, table: str) -> JdbcLookupSource:
    return JdbcLookupSource(JdbcConnectionOptions(url=server.jdbc_url, user_name=server.user,
                                                  password=server.password or None),
                            table, ["id", "label", "weight"], ["id"])


class Clock:
    now = 0

    def __call__(self) -> int:
        return self.now


def test_an_updated_row_is_seen_after_the_partial_cache_entry_expires_not_before(postgres, table_name):
    _dimension(postgres, table_name, [(1, "old", 5)])
    source, clock, metrics = _source(postgres, table_name), Clock(), CacheMetrics()
    options = LookupOptions.parse("dim", {"lookup.cache": "PARTIAL",
                                          "lookup.partial-cache.expire-after-write": "10 s"})
    cache = make_cache(options, metrics, None, clock)
    try:
        assert cache.get((1,), source.lookup) == [(1, "old", 5)]
        pg_execute(postgres, f"UPDATE {table_name} SET label = 'new' WHERE id = 1")
        clock.now = 9_999
        assert cache.get((1,), source.lookup) == [(1, "old", 5)]  # cached: the update is not seen yet
        clock.now = 10_000
        assert cache.get((1,), source.lookup) == [(1, "new", 5)]
        assert (metrics.hits, metrics.misses) == (1, 2)
    finally:
        source.close()


def test_an_updated_row_is_seen_after_the_full_cache_reloads_not_before(postgres, table_name):
    _dimension(postgres, table_name, [(1, "old", 5), (2, "two", 6)])
    source, clock, metrics = _source(postgres, table_name), Clock(), CacheMetrics()
    options = LookupOptions.parse("dim", {"lookup.cache": "FULL",
                                          "lookup.full-cache.periodic-reload.interval": "1 min"})
    cache = make_cache(options, metrics, lambda: [((r[0],), r) for r in source.scan()], clock)
    cache.open()
    try:
        pg_execute(postgres, f"UPDATE {table_name} SET label = 'new' WHERE id = 1",
                   f"INSERT INTO {table_name} VALUES (3, 'three', 7)")
        assert cache.get((1,), source.lookup) == [(1, "old", 5)]
        assert cache.get((3,), source.lookup) == []
        clock.now = 60_000
        cache.get((1,), source.lookup)  # due: the reload runs in the background
        deadline = time.monotonic() + 30
        while metrics.loads < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cache.get((1,), source.lookup) == [(1, "new", 5)]
        assert cache.get((3,), source.lookup) == [(3, "three", 7)]
        assert metrics.loads == 2 and metrics.cached_records() == 3
    finally:
        cache.close()
        source.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_database_fails_the_lookup_join_naming_address_and_option():
    port = _closed_port()
    t_env = table_env()
    t_env.create_temporary_view("orders_v", t_env.from_elements([(1, 1)], ["oid", "k"]))
    t_env.execute_sql("CREATE VIEW orders AS SELECT oid, k, PROCTIME() AS pt FROM orders_v")
    t_env.execute_sql(f"CREATE TABLE dim (id INT, label STRING) WITH ('connector' = 'jdbc', "
                      f"'url' = 'jdbc:postgresql://127.0.0.1:{port}/nowhere', 'table-name' = 'd', "
                      "'lookup.max-retries' = '0')")
    with pytest.raises(Exception) as e:
        with t_env.execute_sql("SELECT o.oid, d.label FROM orders AS o JOIN dim FOR SYSTEM_TIME AS OF o.pt AS d "
                               "ON o.k = d.id").collect() as it:
            list(it)
    text = str(e.value)
    assert f"127.0.0.1:{port}/nowhere" in text and "'url'" in text, text


@pytest.mark.parametrize(("options", "message"), [
    ({"url": "jdbc:mysql://h/db"}, "option 'url'"),
    ({"scan.partition.column": "id"}, "'scan.partition.num'"),
    ({"lookup.cache": "PARTIAL"}, "eviction policy"),
    ({"sink.buffer-flush.interval": "often"}, "'sink.buffer-flush.interval'"),
    ({"no.such": "x"}, "unsupported option 'no.such'"),
])
def test_bad_jdbc_options_are_refused_at_create_table(options, message):
    t_env = table_env()
    opts = {"connector": "jdbc", "url": "jdbc:postgresql://localhost/db", "table-name": "t", **options}
    with pytest.raises(ValidationException, match="table 'bad'") as e:
        t_env.execute_sql(f"CREATE TABLE bad (id INT, label STRING) WITH "
                          f"({', '.join(f'{k!r} = {v!r}' for k, v in opts.items())})")
    assert message in str(e.value)
