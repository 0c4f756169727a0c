"""Side-by-side throughput of Strom, PyFlink, Bytewax and the plain-Python loop on the same workloads.

    python -m benchmarks.compare --setup                      # once: virtualenvs for PyFlink and Bytewax
    python -m benchmarks.compare --events 1000000 [--nexmark-events 500000] [--cap pyflink:b=20000]

Workloads: the engine-core pipelines of benchmarks/micro.py ((a) map -> filter, (b) key_by -> 1 s tumbling
event-time window -> reduce) and Nexmark q0, q2, q5, each at parallelism 1 with a counting sink. Every
engine runs each workload in a subprocess of its own environment (`--repeat` times, best taken) and prints
a JSON line; this script prints one table. `--cap ENGINE[:WORKLOAD]=N` runs an engine (on a workload) on at most N
events (PyFlink's keyed windows run a few hundred events/s here). Output row counts are checked against the plain-Python
loop at the same number of events. Not run in CI; nothing in tests imports the foreign engines.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from benchmarks.compare import environments, report
from benchmarks.compare.programs.workloads import MICRO, WORKLOADS, micro_outputs
from benchmarks.compare.report import Result


def run_one(cache: Path, engine: str, workload: str, events: int, repeat: int) -> Result | None:
    cmd = environments.command(cache, engine, workload, events, repeat)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=environments.REPO_ROOT,
                          env=environments.environment(engine))
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        print(f"{engine} {workload}: failed (exit {done.returncode})\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    out = json.loads(lines[-1])
    if not out["outputs_agree"]:
        print(f"{engine} {workload}: runs disagree on the output count", file=sys.stderr)
    return Result(engine, workload, events, out["seconds"], out["outputs"], out.get("start_seconds"))


def expected_outputs(cache: Path, workload: str, events: int, known: dict[tuple[str, int], int]) -> int | None:
    """The plain-Python loop's output count at `events` (worked out for the engine-core pipelines)."""
    if workload in MICRO:
        return micro_outputs(workload, events)
    if (workload, events) not in known:
        r = run_one(cache, "python", workload, events, 1)
        if r is None:
            return None
        known[(workload, events)] = r.outputs
    return known[(workload, events)]


def parse_caps(items: list[str]) -> dict[str, int]:
    """`pyflink=100000` caps every workload of an engine, `pyflink:b=20000` one workload (that wins)."""
    caps = {}
    for item in items:
        target, _, n = item.partition("=")
        engine, _, workload = target.partition(":")
        if engine not in environments.ENGINES or (workload and workload not in WORKLOADS) or not n.isdigit():
            raise SystemExit(f"invalid --cap {item!r}: expected ENGINE[:WORKLOAD]=EVENTS with ENGINE one of "
                             f"{', '.join(environments.ENGINES)}, e.g. pyflink=100000 or pyflink:b=20000")
        caps[target] = int(n)
    return caps


def events_for(caps: dict[str, int], engine: str, workload: str, base: int) -> int:
    return min(base, caps.get(f"{engine}:{workload}", caps.get(engine, base)))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="events of the engine-core pipelines")
    ap.add_argument("--nexmark-events", type=int, default=None, help="events of the Nexmark queries "
                    "(default: --events)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per engine and workload, best taken")
    ap.add_argument("--engines", default=",".join(environments.ENGINES))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--cap", action="append", default=[], metavar="ENGINE[:WORKLOAD]=N",
                    help="at most N events for ENGINE (on WORKLOAD)")
    ap.add_argument("--cache-dir", type=Path, default=environments.DEFAULT_CACHE)
    ap.add_argument("--setup", action="store_true", help="create the PyFlink/Bytewax virtualenvs first")
    args = ap.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    workloads = [w for w in args.workloads.split(",") if w]
    for name, allowed in (("engine", environments.ENGINES), ("workload", WORKLOADS)):
        for x in engines if name == "engine" else workloads:
            if x not in allowed:
                raise SystemExit(f"unknown {name} {x!r}: expected one of {', '.join(allowed)}")
    caps = parse_caps(args.cap)
    if args.setup:
        environments.setup(args.cache_dir, engines)
    results: dict[tuple[str, str], Result] = {}
    loop_outputs: dict[tuple[str, int], int] = {}
    for w in workloads:
        base = args.events if w in MICRO else (args.nexmark_events or args.events)
        for engine in engines:
            n = events_for(caps, engine, w, base)
            r = run_one(args.cache_dir, engine, w, n, args.repeat)
            if r is None:
                continue
            results[(engine, w)] = r
            if engine == "python":
                loop_outputs[(w, n)] = r.outputs
            print(f"  {w} {engine}: {r.events_per_second:,.0f} events/s ({n:,} events, best of {args.repeat})",
                  file=sys.stderr, flush=True)
            expected = expected_outputs(args.cache_dir, w, n, loop_outputs)
            if expected is not None and expected != r.outputs:
                print(f"MISMATCH {engine} {w}: {r.outputs} output rows, the plain-Python loop {expected}",
                      file=sys.stderr)
    print(f"events: engine-core {args.events:,}, nexmark {args.nexmark_events or args.events:,}"
          + "".join(f", {target} capped at {n:,}" for target, n in caps.items())
          + f"; parallelism 1; best of {args.repeat}; wall clock, job start included")
    print(report.table(results, engines, workloads))
    print()
    print(report.details(results, engines, workloads))
    print()
    print(report.targets(results))


if __name__ == "__main__":
    main()
