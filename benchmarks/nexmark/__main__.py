"""Nexmark on Strom (in-process engine; hashmap state, or --state-backend rocksdb): events/s, output rows and
peak RSS per query, with same-run baselines: the generator alone, and the query's plain-Python reference loop.

    python -m benchmarks.nexmark --query q5 --events 2000000 --parallelism 1 [--checkpoint-interval 10s]
    python -m benchmarks.nexmark --all --events 1000000
    python -m benchmarks.nexmark --query q5 --events 200000 --state-backend rocksdb
    python -m benchmarks.nexmark --conditions flink [--query q5] [--events 1000000 | --full] [--repeat 3]
    python -m benchmarks.nexmark --heap-vs-rocksdb [--query q8] [--events 1000000] [--repeat 3]

With --checkpoint-interval the query runs twice, without and with checkpoints (file://), and the
overhead is printed. `--conditions flink` runs every query (or --query) on the local cluster as Flink's
Nexmark does (see flink_conditions.py) and, in the same run, in-process on heap state, next to Flink's
published per-core figures; events per CPU-second of every process involved. --all runs each query in its
own process (so peak RSS is per query) and prints a table. Figures are wall-clock on a shared machine: read
the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Any

try:  # the generator is numpy-vectorised; numpy is the [nexmark] extra, not a core dependency
    import numpy  # noqa: F401
except ImportError:
    sys.exit("python -m benchmarks.nexmark needs numpy, which the [nexmark] extra installs: "
             "pip install -e '.[nexmark]'")

from strom.connectors.base import SourceReaderContext  # noqa: E402 - after the extra's check
from strom.connectors.nexmark import NexmarkConfig, NexmarkSource  # noqa: E402

from benchmarks.nexmark.queries import QUERIES  # noqa: E402
from benchmarks.nexmark.reference import REFERENCES  # noqa: E402
from benchmarks.nexmark.runner import RunFigures, run_timed  # noqa: E402
from benchmarks.progress import step

CONDITIONS_EVENTS = 1_000_000  # --conditions' default: a job's fixed cost is < 5% of every query's run
FIXED_SHARE_LIMIT = 0.05  # above this share of a run's CPU, the fixed per-job cost is flagged
FULL_EVENTS = 10_000_000
REFERENCE_EVENTS_MAX = 200_000  # the reference holds its input in memory; its rate is measured on a prefix
FLINK_PER_CORE = {  # Nexmark's published Flink 1.13 figures (RocksDB, exactly-once checkpoints), events/s/core
    "q0": 155_000, "q1": 158_000, "q2": 175_000, "q3": 152_000, "q4": 34_000, "q5": 22_000, "q7": 12_000,
    "q8": 146_000, "q11": 40_000, "q12": 76_000,
}


def parse_interval_ms(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|min)?\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"invalid interval {text!r}: expected e.g. '10s', '500ms' or '2min'")
    return int(m.group(1)) * {"ms": 1, "s": 1000, "min": 60_000, None: 1}[m.group(2)]


def generate(config: NexmarkConfig) -> tuple[list[Any], float]:
    """All events of one subtask at parallelism 1, and the generator's standalone rate (events/s)."""
    reader = NexmarkSource(config).create_reader(SourceReaderContext(0, 1))
    out: list[Any] = []
    start = time.process_time()
    while (batch := reader.poll(1024)) is not None:
        out += batch
    return out, len(out) / (time.process_time() - start)


def reference_rate(query: str, events: list[Any]) -> float | None:
    reference = REFERENCES.get(query)
    if reference is None:
        return None
    start = time.process_time()
    reference(events)
    return len(events) / (time.process_time() - start)


def measure(args: argparse.Namespace, query: str) -> dict[str, Any]:
    config = NexmarkConfig(events=args.events, rate=args.rate, event_rate=args.event_rate)
    with step(f"{query}: {args.events:,} events"):
        runs: list[RunFigures] = [run_timed(query, config, parallelism=args.parallelism,
                                            state_backend=args.state_backend)]
    if args.checkpoint_interval:
        with step(f"{query}: {args.events:,} events, checkpoints every {args.checkpoint_interval} ms"):
            runs.append(run_timed(query, config, parallelism=args.parallelism,
                                  checkpoint_interval_ms=args.checkpoint_interval, state_backend=args.state_backend,
                                  incremental=args.incremental))
    rss = runs[-1].peak_rss_mb  # before the baselines allocate their event lists
    prefix, generator_rate = generate(NexmarkConfig(events=min(args.events, REFERENCE_EVENTS_MAX),
                                                    event_rate=args.event_rate))
    return {
        "query": query,
        "events": args.events,
        "parallelism": args.parallelism,
        "state_backend": args.state_backend,
        "events_per_s": runs[0].events_per_second,
        "events_per_cpu_s": runs[0].events_per_cpu_second,
        "outputs": runs[0].outputs,
        "peak_rss_mb": rss,
        "checkpointed_events_per_s": runs[1].events_per_second if len(runs) > 1 else None,
        "checkpointed_events_per_cpu_s": runs[1].events_per_cpu_second if len(runs) > 1 else None,
        "checkpoints": runs[1].checkpoints if len(runs) > 1 else None,
        "generator_events_per_s": generator_rate,
        "reference_events_per_s": reference_rate(query, prefix),
    }


def print_one(r: dict[str, Any], interval_ms: int) -> None:
    print(f"{r['query']}: {r['events']:,} events, parallelism {r['parallelism']}, {r['state_backend']} state")
    print(f"  strom                  {r['events_per_s']:>10,.0f} events/s wall, {r['events_per_cpu_s']:>10,.0f} per "
          f"CPU-second   {r['outputs']:,} output rows   peak RSS {r['peak_rss_mb']:,.0f} MB")
    if r["checkpointed_events_per_s"]:
        overhead = 100 * (r["events_per_cpu_s"] / r["checkpointed_events_per_cpu_s"] - 1)
        print(f"  checkpoints every {interval_ms} ms {r['checkpointed_events_per_s']:>8,.0f} events/s wall, "
              f"{r['checkpointed_events_per_cpu_s']:>10,.0f} per CPU-second   ({r['checkpoints']} completed, "
              f"CPU overhead {overhead:.1f}%)")
    print(f"  generator alone        {r['generator_events_per_s']:>10,.0f} events per CPU-second")
    if r["reference_events_per_s"]:
        print(f"  plain-Python reference {r['reference_events_per_s']:>10,.0f} events per CPU-second (events in a "
              f"list)   strom/reference {r['events_per_cpu_s'] / r['reference_events_per_s']:.2f}")


def run_all(args: argparse.Namespace) -> None:
    rows = []
    for query in QUERIES:
        cmd = [sys.executable, "-m", "benchmarks.nexmark", "--query", query, "--events", str(args.events),
               "--parallelism", str(args.parallelism), "--state-backend", args.state_backend, "--json"]
        if args.event_rate:
            cmd += ["--event-rate", str(args.event_rate)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{query}: failed\n{done.stderr}", file=sys.stderr)
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"  {query} done: {rows[-1]['events_per_cpu_s']:,.0f} events/CPU-s", file=sys.stderr, flush=True)
    print(f"events={args.events:,} parallelism={args.parallelism} (in-process engine, {args.state_backend} state); "
          "ev/CPU-s = events per CPU-second of the process (per core); ref, gen: per CPU-second as well")
    print(f"{'query':<6}{'ev/s wall':>11}{'ev/CPU-s':>11}{'outputs':>11}{'RSS MB':>8}{'ref ev/s':>12}{'strom/ref':>10}"
          f"{'gen ev/s':>12}{'Flink/core':>12}")
    for r in rows:
        ref = r["reference_events_per_s"]
        flink = FLINK_PER_CORE.get(r["query"])
        ref_text = f"{ref:,.0f}" if ref else "-"
        ratio_text = f"{r['events_per_cpu_s'] / ref:.2f}" if ref else "-"
        flink_text = f"{flink:,}" if flink else "-"
        print(f"{r['query']:<6}{r['events_per_s']:>11,.0f}{r['events_per_cpu_s']:>11,.0f}{r['outputs']:>11,}"
              f"{r['peak_rss_mb']:>8,.0f}"
              f"{ref_text:>12}{ratio_text:>10}{r['generator_events_per_s']:>12,.0f}{flink_text:>12}")


def run_flink_conditions(args: argparse.Namespace) -> None:
    """Every query (or --query) under Flink's conditions on one cluster, and in-process on heap state."""
    from benchmarks.nexmark.flink_conditions import (
        FLINK_CHECKPOINT_INTERVAL_MS,
        WARMUP_EVENTS,
        run_on_cluster,
        start_cluster,
        warm_up,
    )

    interval = args.checkpoint_interval or FLINK_CHECKPOINT_INTERVAL_MS
    events = FULL_EVENTS if args.full else args.events
    queries = [args.query] if args.query else list(QUERIES)
    config = NexmarkConfig(events=events, rate=args.rate, event_rate=args.event_rate)
    rows = []
    load_before = _load_average()
    speed_before = cpu_speed()
    cluster = start_cluster(args.parallelism)
    try:
        for query in queries:
            with step(f"{query}: warm-up, 2 untimed jobs of {WARMUP_EVENTS:,} events"):
                warm = warm_up(cluster, query, config, parallelism=args.parallelism, interval_ms=interval)
            cluster_rates, cluster_cpu, heap_rates, checkpoints, outputs = [], [], [], [], set()
            for i in range(args.repeat):
                with step(f"{query}: cluster p{args.parallelism}, rocksdb, checkpoints {interval} ms, "
                          f"run {i + 1} of {args.repeat}"):
                    figures = run_on_cluster(cluster, query, config, parallelism=args.parallelism,
                                             interval_ms=interval)
                cluster_rates.append(figures.events_per_cpu_second)
                cluster_cpu.append(figures.cpu_seconds)
                checkpoints.append(figures.checkpoints)
                if figures.checkpoint_durations_ms:
                    print(f"  {query} run {i + 1}: {figures.seconds:,.0f} s wall, checkpoints completed "
                          f"{figures.checkpoints}: durations {list(figures.checkpoint_durations_ms)} ms, sizes "
                          f"{[round(b / 1024) for b in figures.checkpoint_sizes]} KiB", flush=True)
                outputs.add(figures.outputs)
                with step(f"{query}: in-process p1, heap, run {i + 1} of {args.repeat}"):
                    heap = run_timed(query, config, parallelism=1, state_backend="hashmap")
                heap_rates.append(heap.events_per_cpu_second)
                outputs.add(heap.outputs)
            fixed_share = warm.job_cpu_seconds / statistics.median(cluster_cpu)
            rows.append((query, cluster_rates, heap_rates, checkpoints, outputs, warm, fixed_share))
            print(f"  {query} done: {max(cluster_rates):,.0f} events/CPU-s on the cluster", file=sys.stderr, flush=True)
    finally:
        cluster.close()
    print(f"events={events:,}; cluster: {args.parallelism} TaskManagers x 1 slot (slot processes, keyed exchanges over "
          f"loopback TCP), RocksDB, incremental exactly-once checkpoints every {interval:,} ms; in-process: "
          f"parallelism 1, heap state, no checkpoints. ev/CPU-s = events per CPU-second of all processes involved "
          f"(JobManager, TaskManagers, slot processes); {args.repeat} run(s): median [min-max]. Steady state: each "
          f"query first ran twice untimed on {WARMUP_EVENTS:,} events (the first loads its code into the slot "
          f"processes: 'warm-up s'); 'fixed' = the second's CPU (what every job pays: deployment, start, end) as a "
          f"share of a timed run's CPU, which includes it. Load average (1/5/15 min) before {load_before}, after "
          f"{_load_average()} on {os.cpu_count()} CPUs: other processes competing for the cores inflate CPU time. "
          f"CPU speed check (a fixed pure-Python loop, M iterations per CPU-second) before {speed_before:.1f}, after "
          f"{cpu_speed():.1f}: a shared host's speed moves by 2x and more over an hour, and every figure with it")
    print(f"{'query':<6}{'cluster ev/CPU-s':>26}{'Flink/core':>12}{'cluster/Flink':>15}{'heap in-process ev/CPU-s':>32}"
          f"{'heap/cluster':>14}{'warm-up s':>11}{'fixed':>8}{'checkpoints':>13}  outputs")
    for query, cluster_rates, heap_rates, checkpoints, outputs, warm, fixed_share in rows:
        flink = FLINK_PER_CORE.get(query)
        c, h = statistics.median(cluster_rates), statistics.median(heap_rates)
        flag = "!" if fixed_share > FIXED_SHARE_LIMIT else " "
        print(f"{query:<6}{_spread(cluster_rates):>26}{f'{flink:,}' if flink else '-':>12}"
              f"{f'{c / flink:.2f}' if flink else '-':>15}{_spread(heap_rates):>32}{h / c:>14.2f}"
              f"{warm.first_job_cpu_seconds:>11.2f}{100 * fixed_share:>7.1f}%{flag}"
              f"{'/'.join(map(str, checkpoints)):>12}  {'/'.join(f'{o:,}' for o in sorted(outputs))}")
    if any(row[-1] > FIXED_SHARE_LIMIT for row in rows):
        print(f"! the fixed per-job cost is over {FIXED_SHARE_LIMIT:.0%} of that query's run: more --events for its "
              "steady state")


def cpu_speed(iterations: int = 3_000_000) -> float:
    """Millions of iterations per CPU-second of a fixed pure-Python loop (sum of ints), best of three: this
    machine's speed right now, printed with the figures (on a shared virtual machine it moves with the host's
    load even when this machine's load average is low)."""
    best = 0.0
    for _ in range(3):
        start = time.process_time()
        total = 0
        for i in range(iterations):
            total += i
        best = max(best, iterations / (time.process_time() - start) / 1e6)
    return best


def _load_average() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def _spread(rates: list[float]) -> str:
    return f"{statistics.median(rates):,.0f} [{min(rates):,.0f}-{max(rates):,.0f}]"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--query", choices=sorted(QUERIES, key=lambda q: int(q[1:])))
    which.add_argument("--all", action="store_true", help="every query, one process each, as a table")
    ap.add_argument("--conditions", choices=["flink"], help="flink: the cluster, parallelism 2, RocksDB, incremental "
                    "exactly-once checkpoints every 3 min (or --checkpoint-interval), every query or --query; "
                    "next to in-process heap figures and Flink's per-core figures")
    ap.add_argument("--heap-vs-rocksdb", action="store_true", help="every stateful query (or --query) in-process "
                    "on heap and on RocksDB state, alternating, and the ratio (see benchmarks/nexmark/backends.py)")
    ap.add_argument("--full", action="store_true", help=f"with --conditions: {FULL_EVENTS:,} events")
    ap.add_argument("--repeat", type=int, default=1, help="with --conditions (default 1) or "
                    "--heap-vs-rocksdb (default 3): runs per query (median and spread)")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--rate", type=float, default=0, help="emitted events/s over all subtasks (0: unthrottled)")
    ap.add_argument("--event-rate", type=float, default=None, help="events per second of event time")
    ap.add_argument("--checkpoint-interval", type=parse_interval_ms, default=0, help="e.g. 10s: also run with "
                    "checkpoints and print the overhead")
    ap.add_argument("--state-backend", choices=["hashmap", "rocksdb"], default="hashmap", help="state.backend.type")
    ap.add_argument("--incremental", action="store_true", help="state.backend.incremental: true (RocksDB)")
    ap.add_argument("--json", action="store_true", help="print one JSON line (used by --all)")
    args = ap.parse_args(argv)
    if args.conditions == "flink":
        if args.parallelism == 1 and "--parallelism" not in (argv if argv is not None else sys.argv):
            args.parallelism = 2  # Flink's conditions: records cross processes
        if "--events" not in (argv if argv is not None else sys.argv):
            args.events = CONDITIONS_EVENTS
        run_flink_conditions(args)
        return
    if args.heap_vs_rocksdb:
        from benchmarks.nexmark.backends import run_heap_vs_rocksdb

        if args.repeat == 1 and "--repeat" not in (argv if argv is not None else sys.argv):
            args.repeat = 3
        run_heap_vs_rocksdb([args.query] if args.query else list(QUERIES), args.events, args.repeat)
        return
    if not (args.all or args.query):
        ap.error("one of --query, --all or --conditions is required")
    if args.all:
        run_all(args)
        return
    result = measure(args, args.query)
    if args.json:
        print(json.dumps(result))
    else:
        print_one(result, args.checkpoint_interval)


if __name__ == "__main__":
    main()
