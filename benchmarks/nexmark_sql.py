"""Nexmark SQL on Strom: the official queries q0-q22 (benchmarks/nexmark_sql_queries.py) over the nexmark
connector with the official DDL and views, each INSERTed into a blackhole table on the in-process engine;
events per CPU-second of the process, next to Flink's published per-core figures and, in the same run,
Strom's DataStream versions of the same queries (benchmarks/nexmark). A query Strom cannot plan is listed
with the planner's one-line reason.

    python -m benchmarks.nexmark_sql --events 100000 [--query q0,q5] [--parallelism 1] [--no-datastream] [--warmup N]

Figures are CPU time on a shared machine: read the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass

from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.udf import udf

from benchmarks.nexmark_sql_queries import QUERIES, SETUP

# Nexmark's published Flink figures (events/s/core), as benchmarks/nexmark lists them
try:
    from benchmarks.nexmark.__main__ import FLINK_PER_CORE
except SystemExit:  # numpy missing: benchmarks.nexmark refuses to import
    FLINK_PER_CORE = {}

DDL = """CREATE TABLE datagen (
    event_type int,
    person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR,
               dateTime TIMESTAMP(3), extra VARCHAR>,
    auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
                dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP(3),
            extra VARCHAR>,
    dateTime AS CASE WHEN event_type = 0 THEN person.dateTime WHEN event_type = 1 THEN auction.dateTime
                     ELSE bid.dateTime END,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'first-event.rate' = '10000', 'next-event.rate' = '10000',
        'events.num' = '{events}', 'person.proportion' = '1', 'auction.proportion' = '3', 'bid.proportion' = '46')"""

VIEWS = [
    "CREATE VIEW person AS SELECT person.id, person.name, person.emailAddress, person.creditCard, person.city, "
    "person.state, dateTime, person.extra FROM datagen WHERE event_type = 0",
    "CREATE VIEW auction AS SELECT auction.id, auction.itemName, auction.description, auction.initialBid, "
    "auction.reserve, dateTime, auction.expires, auction.seller, auction.category, auction.extra FROM datagen "
    "WHERE event_type = 1",
    "CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price, bid.channel, bid.url, dateTime, bid.extra "
    "FROM datagen WHERE event_type = 2",
]


@udf(result_type="BIGINT")
def count_char(s: str, c: str) -> int:
    """nexmark-flink's CountChar: occurrences of c in s."""
    return 0 if s is None else s.count(c)


@dataclass
class Result:
    query: str
    events_per_cpu_s: float | None
    reason: str = ""


def cpu_seconds() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def run_sql(query: str, events: int, parallelism: int, side_input: str, warmup: int = 0) -> Result:
    """Events per CPU-second of the whole INSERT job (planning, deployment, run), after a `warmup`-event run of
    the same query in this process (so the first query does not pay the engine's imports for the others)."""
    if warmup:
        run_sql(query, warmup, parallelism, side_input)
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    try:
        t_env.execute_sql(DDL.format(events=events))
        for view in VIEWS:
            t_env.execute_sql(view)
        for stmt in SETUP.get(query, []):
            t_env.execute_sql(stmt.format(side_input=side_input))
        table = t_env.sql_query(QUERIES[query])
        schema = table.get_schema()
        columns = ", ".join(f"`{n}` {t.base()}" for n, t in zip(schema.get_field_names(),
                                                                  schema.get_field_data_types(), strict=True))
        t_env.execute_sql(f"CREATE TABLE nexmark_{query} ({columns}) WITH ('connector' = 'blackhole')")
        start = cpu_seconds()
        table.execute_insert(f"nexmark_{query}").wait()
        return Result(query, events / (cpu_seconds() - start))
    except Exception as e:  # the planner's (or the run's) one-line reason
        return Result(query, None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:150])


def run_datastream(query: str, events: int, parallelism: int) -> float | None:
    try:
        from strom.connectors.nexmark import NexmarkConfig

        from benchmarks.nexmark.queries import QUERIES as DATASTREAM_QUERIES
        from benchmarks.nexmark.runner import run_timed
    except (ImportError, SystemExit):
        return None
    if query not in DATASTREAM_QUERIES:
        return None
    return run_timed(query, NexmarkConfig(events=events), parallelism=parallelism).events_per_cpu_second


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--query", default=",".join(QUERIES), help="comma-separated, e.g. q0,q5")
    parser.add_argument("--no-datastream", action="store_true", help="skip the DataStream versions")
    parser.add_argument("--warmup", type=int, default=5_000,
                        help="events of an untimed run of each query first (imports, first-run costs); 0: none")
    args = parser.parse_args(argv)
    queries = [q.strip() for q in args.query.split(",") if q.strip()]
    unknown = [q for q in queries if q not in QUERIES]
    if unknown:
        sys.exit(f"unknown query {unknown[0]!r}; known: {', '.join(QUERIES)}")
    with tempfile.TemporaryDirectory(prefix="nexmark-sql-") as tmp:
        side_input = os.path.join(tmp, "side_input.csv")
        with open(side_input, "w") as f:  # nexmark-flink's side input: keys 0..9999
            f.writelines(f"{i},{i}\n" for i in range(10_000))
        print(f"Nexmark SQL: {args.events:,} events, parallelism {args.parallelism}, in-process engine; "
              "ev/CPU-s = events per CPU-second of this process over the whole INSERT job (planning, deployment, "
              f"run), each query after an untimed {args.warmup:,}-event run of it (--warmup)", flush=True)
        print(f"{'query':<6}{'SQL ev/CPU-s':>14}{'DataStream':>12}{'Flink/core':>12}{'SQL/Flink':>11}  note")
        for query in queries:
            began = time.perf_counter()
            r = run_sql(query, args.events, args.parallelism, side_input, args.warmup)
            ds = None if args.no_datastream or r.events_per_cpu_s is None else run_datastream(
                query, args.events, args.parallelism)
            flink = FLINK_PER_CORE.get(query)
            sql_text = f"{r.events_per_cpu_s:,.0f}" if r.events_per_cpu_s else "-"
            ds_text = f"{ds:,.0f}" if ds else "-"
            flink_text = f"{flink:,}" if flink else "-"
            ratio = f"{r.events_per_cpu_s / flink:.2f}" if r.events_per_cpu_s and flink else "-"
            note = r.reason or f"{time.perf_counter() - began:.1f} s wall"
            print(f"{query:<6}{sql_text:>14}{ds_text:>12}{flink_text:>12}{ratio:>11}  {note}", flush=True)


if __name__ == "__main__":
    main()
