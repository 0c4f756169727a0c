"""SQL lookup join throughput against PostgreSQL with each `lookup.cache` mode, next to a bare psycopg query
loop, in the same run on the same server.

    python -m benchmarks.lookup_join [--rows 50000] [--keys 2000] [--dsn postgresql://...]

Starts a private PostgreSQL server (tests/connectors/postgres_server.py) unless --dsn is given, fills a
dimension table of `--keys` rows, then probes it `--rows` times with keys drawn uniformly from it and prints
probes/s:
  bare psycopg      one SELECT .. WHERE id = %s per probe on one connection (the per-query ceiling)
  no join           datagen -> blackhole, the same SQL pipeline without the join (the pipeline ceiling)
  NONE / PARTIAL / FULL (sync), NONE / PARTIAL (async)
                    INSERT INTO blackhole SELECT .. FROM orders JOIN dim FOR SYSTEM_TIME AS OF o.pt ..,
                    a local job at parallelism 1, job start included
A benchmark, not a test: nothing is asserted on speed.

Figures (2-core VM shared with other engineers' work, private PostgreSQL 15 with fsync off, one run, 50,000
probes of a 2,000-row table; PARTIAL and FULL load each key once, so they hit 96% and 100%):

    bare psycopg query loop     7.33 s    6,823 probes/s
    no join (pipeline only)     2.61 s   19,191 probes/s   (datagen -> Calc -> blackhole)
    lookup join NONE           14.27 s    3,503 probes/s   (0.51x bare: one query per probe plus the pipeline)
    lookup join PARTIAL         3.61 s   13,838 probes/s   (2.03x)
    lookup join FULL            2.93 s   17,090 probes/s   (2.50x; close to the pipeline alone)
    lookup join NONE async      9.43 s    5,301 probes/s   (0.78x; queries overlap on worker threads)
    lookup join PARTIAL async   6.28 s    7,965 probes/s   (1.17x; the async operator's per-row cost shows once
                                                           queries are rare)
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from collections.abc import Callable

import psycopg
from strom.table import EnvironmentSettings, TableEnvironment

from tests.connectors.postgres_server import LocalPostgres, PostgresServer, find_bin_dir

CACHES: dict[str, dict[str, str]] = {
    "NONE": {},
    "PARTIAL": {"lookup.cache": "PARTIAL", "lookup.partial-cache.max-rows": "100000",
                "lookup.partial-cache.expire-after-write": "1 h"},
    "FULL": {"lookup.cache": "FULL", "lookup.full-cache.periodic-reload.interval": "1 h"},
}


def dimension(server: PostgresServer, keys: int) -> str:
    name = f"dim_{uuid.uuid4().hex[:10]}"
    with server.connect() as c:
        c.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, label TEXT, weight INT)")
        c.cursor().executemany(f"INSERT INTO {name} VALUES (%s, %s, %s)",
                               [(i, f"label-{i}", i % 100) for i in range(keys)])
    return name


def bare_psycopg(server: PostgresServer, table: str, rows: int, keys: int) -> float:
    rng = random.Random(1)
    probes = [rng.randrange(keys) for _ in range(rows)]
    started = time.perf_counter()
    with psycopg.connect(server.dsn, autocommit=True) as conn, conn.cursor() as cur:
        sql = f'SELECT "id", "label", "weight" FROM "{table}" WHERE "id" = %s'
        found = 0
        for k in probes:
            cur.execute(sql, (k,))
            found += len(cur.fetchall())
    elapsed = time.perf_counter() - started
    assert found == rows
    return elapsed


def sql_job(server: PostgresServer, table: str, rows: int, keys: int, cache: str | None, is_async: bool) -> float:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql(f"""CREATE TABLE orders (oid BIGINT, k INT, pt AS PROCTIME()) WITH ('connector' = 'datagen',
        'number-of-rows' = '{rows}', 'fields.oid.kind' = 'sequence', 'fields.oid.start' = '1',
        'fields.oid.end' = '{rows}', 'fields.k.min' = '0', 'fields.k.max' = '{keys - 1}')""")
    t_env.execute_sql("CREATE TABLE out (oid BIGINT, label STRING, weight INT) WITH ('connector' = 'blackhole')")
    if cache is None:
        query = "INSERT INTO out SELECT oid, CAST(NULL AS STRING), k FROM orders"
    else:
        options = {"connector": "jdbc", "url": server.jdbc_url, "table-name": table, "username": server.user,
                   **({"password": server.password} if server.password else {}), **CACHES[cache],
                   "lookup.async": str(is_async).lower()}
        with_ = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
        t_env.execute_sql(f"CREATE TABLE dim (id INT, label STRING, weight INT) WITH ({with_})")
        query = ("INSERT INTO out SELECT o.oid, d.label, d.weight FROM orders AS o "
                 "JOIN dim FOR SYSTEM_TIME AS OF o.pt AS d ON o.k = d.id")
    started = time.perf_counter()
    t_env.execute_sql(query).wait()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--keys", type=int, default=2_000)
    parser.add_argument("--dsn", help="an existing server instead of a private one")
    args = parser.parse_args()
    local = None
    if args.dsn:
        server = PostgresServer.from_dsn(args.dsn)
    else:
        bin_dir = find_bin_dir()
        if bin_dir is None:
            raise SystemExit("no PostgreSQL binaries: install Debian's postgresql package or pass --dsn")
        local = LocalPostgres(bin_dir)
        server = local.start()
    try:
        table = dimension(server, args.keys)
        runs: list[tuple[str, Callable[[], float]]] = [
            ("bare psycopg query loop", lambda: bare_psycopg(server, table, args.rows, args.keys)),
            ("no join (pipeline only)", lambda: sql_job(server, table, args.rows, args.keys, None, False)),
        ]
        for cache in ("NONE", "PARTIAL", "FULL"):
            runs.append((f"lookup join {cache}", lambda c=cache: sql_job(server, table, args.rows, args.keys, c,
                                                                         False)))
        for cache in ("NONE", "PARTIAL"):
            runs.append((f"lookup join {cache} async", lambda c=cache: sql_job(server, table, args.rows, args.keys,
                                                                               c, True)))
        sql_job(server, table, min(args.rows, 2_000), args.keys, None, False)  # warm-up: imports, first job
        print(f"{args.rows} probes of a {args.keys}-row dimension table")
        base = None
        for name, run in runs:
            elapsed = run()
            rate = args.rows / elapsed
            base = base or rate
            print(f"  {name:28s} {elapsed:7.2f} s  {rate:10,.0f} probes/s  ({rate / base:.2f}x bare psycopg)")
    finally:
        if local is not None:
            local.stop()


if __name__ == "__main__":
    main()
