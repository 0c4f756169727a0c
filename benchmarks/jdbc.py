"""JdbcSink throughput next to a bare psycopg executemany loop, in the same run on the same server.

    python -m benchmarks.jdbc [--rows 200000] [--batch-size 5000] [--dsn postgresql://...]

Starts a private PostgreSQL server (tests/connectors/postgres_server.py) unless --dsn is given, then
writes `--rows` rows (id, name, amount) four ways into fresh tables and prints rows/s:
  bare psycopg    executemany of `--batch-size` rows + commit per batch, one connection (the ceiling)
  JdbcSink.sink   a local job (parallelism 1): generator -> JdbcSink.sink (at-least-once batches)
  exactly-once    the same job through JdbcSink.exactly_once_sink, checkpoints every 500 ms
  upsert          JdbcSink.sink with INSERT ... ON CONFLICT (id) DO UPDATE on a keyed table
Each table is checked to hold `--rows` rows. A benchmark, not a test: nothing is asserted on speed.

Figures (2-core VM shared with other engineers' work, private PostgreSQL 15 with fsync off, one run,
200,000 rows, batches of 5,000):

    bare psycopg executemany     4.02 s   49,782 rows/s
    JdbcSink.sink                4.62 s   43,245 rows/s   (0.87 of bare psycopg, job start included)
    JdbcSink.exactly_once_sink   5.14 s   38,930 rows/s   (0.78; PREPARE/COMMIT PREPARED every 500 ms)
    JdbcSink.sink upsert         7.02 s   28,502 rows/s   (ON CONFLICT DO UPDATE on a primary key)
"""

from __future__ import annotations

import argparse
import time
import uuid

import psycopg
from strom.common import Types, WatermarkStrategy
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.connectors.jdbc import JdbcConnectionOptions, JdbcExecutionOptions, JdbcSink

from tests.connectors.postgres_server import LocalPostgres, PostgresServer, find_bin_dir

ROW = Types.ROW([Types.INT(), Types.STRING(), Types.LONG()])


def row(i: int) -> tuple[int, str, int]:
    return (i, f"name-{i % 97}", i * 3)


def fresh_table(server: PostgresServer, key: bool = False) -> str:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    with server.connect() as c:
        c.execute(f"CREATE TABLE {name} (id INT {'PRIMARY KEY' if key else ''}, name TEXT, amount BIGINT)")
    return name


def count(server: PostgresServer, table: str) -> int:
    with server.connect() as c:
        return c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def bare_psycopg(server: PostgresServer, rows: int, batch: int) -> float:
    table = fresh_table(server)
    started = time.perf_counter()
    with psycopg.connect(server.dsn) as conn:
        sql = f"INSERT INTO {table} (id, name, amount) VALUES (%s, %s, %s)"
        for start in range(0, rows, batch):
            with conn.cursor() as cur:
                cur.executemany(sql, [row(i) for i in range(start, min(rows, start + batch))])
            conn.commit()
    elapsed = time.perf_counter() - started
    assert count(server, table) == rows
    return elapsed


def strom_job(server: PostgresServer, rows: int, batch: int, *, exactly_once: bool, upsert: bool) -> float:
    table = fresh_table(server, key=upsert)
    sql = f"INSERT INTO {table} (id, name, amount) VALUES (?, ?, ?)"
    if upsert:
        sql += " ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, amount = EXCLUDED.amount"
    connection = (JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(server.jdbc_url)
                  .with_user_name(server.user).with_password(server.password).build())
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    if exactly_once:
        env.enable_checkpointing(500)
    stream = env.from_source(DataGeneratorSource(row, rows, type_info=ROW), WatermarkStrategy.no_watermarks(), "gen")
    if exactly_once:
        options = JdbcExecutionOptions.builder().with_batch_size(batch).with_max_retries(0).build()
        sink = JdbcSink.exactly_once_sink(sql, ROW, connection, options)
    else:
        sink = JdbcSink.sink(sql, ROW, connection, JdbcExecutionOptions.builder().with_batch_size(batch).build())
    stream.add_sink(sink)
    started = time.perf_counter()
    env.execute("jdbc benchmark")
    elapsed = time.perf_counter() - started
    assert count(server, table) == rows
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch-size", type=int, default=5_000)
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
        runs = [
            ("bare psycopg executemany", lambda: bare_psycopg(server, args.rows, args.batch_size)),
            ("JdbcSink.sink", lambda: strom_job(server, args.rows, args.batch_size, exactly_once=False, upsert=False)),
            ("JdbcSink.exactly_once_sink",
             lambda: strom_job(server, args.rows, args.batch_size, exactly_once=True, upsert=False)),
            ("JdbcSink.sink upsert", lambda: strom_job(server, args.rows, args.batch_size, exactly_once=False,
                                                        upsert=True)),
        ]
        print(f"{args.rows} rows, batches of {args.batch_size}")
        for name, run in runs:
            elapsed = run()
            print(f"  {name:28s} {elapsed:7.2f} s  {args.rows / elapsed:10,.0f} rows/s")
    finally:
        if local is not None:
            local.stop()


if __name__ == "__main__":
    main()
