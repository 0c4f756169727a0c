"""Heap vs RocksDB state in one run: every stateful Nexmark query (or --query) in-process, once on each backend,
alternating, each run in its own process; events per CPU-second and the ratio heap/RocksDB (issue 23's target:
every pipeline on RocksDB within 2x of the same pipeline on heap state, same run).

    python -m benchmarks.nexmark --heap-vs-rocksdb [--query q8] [--events 1000000] [--repeat 3]

RocksDB runs with Strom's defaults (Flink's: 8 MB block cache per subtask, no checkpoints here, as the heap run).
Stateless queries (q0-q2, q14, q21, q22) are skipped: their state backend is never touched.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

from benchmarks.progress import step

STATELESS = {"q0", "q1", "q2", "q14", "q21", "q22"}


def _run(query: str, backend: str, events: int) -> float | None:
    cmd = [sys.executable, "-m", "benchmarks.nexmark", "--query", query, "--events", str(events),
           "--state-backend", backend, "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"{query} on {backend} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return float(json.loads(done.stdout.strip().splitlines()[-1])["events_per_cpu_s"])


def run_heap_vs_rocksdb(queries: list[str], events: int, repeat: int) -> None:
    rows: list[tuple[str, list[float], list[float]]] = []
    for query in queries:
        if query in STATELESS:
            continue
        heap: list[float] = []
        rocks: list[float] = []
        for i in range(repeat):
            for backend, rates in (("hashmap", heap), ("rocksdb", rocks)):
                with step(f"{query} on {backend}, run {i + 1} of {repeat}"):
                    rate = _run(query, backend, events)
                if rate is not None:
                    rates.append(rate)
        if heap and rocks:
            rows.append((query, heap, rocks))
    print(f"events={events:,} per run, in-process engine, parallelism 1, no checkpoints; {repeat} run(s) per backend, "
          "alternating: median [min-max] events per CPU-second")
    print(f"{'query':<6}{'heap ev/CPU-s':>28}{'RocksDB ev/CPU-s':>28}{'heap/RocksDB':>14}")
    for query, heap, rocks in rows:
        h, r = statistics.median(heap), statistics.median(rocks)
        print(f"{query:<6}{_spread(heap):>28}{_spread(rocks):>28}{h / r:>14.2f}")


def _spread(rates: list[Any]) -> str:
    return f"{statistics.median(rates):,.0f} [{min(rates):,.0f}-{max(rates):,.0f}]"
