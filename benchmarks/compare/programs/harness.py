"""The command line every engine's program shares: run one workload a few times in this process, print
one JSON line with the best time. The engines' programs only say how to run a workload.

    <python> <engine>_job.py --workload a --events 1000000 --repeat 2
    -> {"engine": "...", "workload": "a", "events": 1000000, "seconds": 1.23, "runs": [...], "outputs": 333334}

A run is timed from building the job to its end (job startup included); repeating in one process keeps
one-off costs (a JVM starting, imports) out of the best run, as they would be in a long-running job.
Then one run of a single event says what starting the job costs ("start_seconds").
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

WORKLOADS = ("a", "b", "q0", "q2", "q5")


def main(engine: str, run: Callable[[str, int], int], argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=f"one benchmark workload on {engine}")
    ap.add_argument("--workload", choices=WORKLOADS, required=True)
    ap.add_argument("--events", type=int, required=True)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    runs, outputs = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        outputs.append(run(args.workload, args.events))
        runs.append(time.perf_counter() - start)
    start = time.perf_counter()
    run(args.workload, 1)
    start_seconds = time.perf_counter() - start
    print(json.dumps({"engine": engine, "workload": args.workload, "events": args.events, "seconds": min(runs),
                      "runs": runs, "outputs": outputs[0], "outputs_agree": len(set(outputs)) == 1,
                      "start_seconds": start_seconds}), flush=True)
