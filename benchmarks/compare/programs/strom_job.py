"""Strom's side of the comparison: the engine-core pipelines of benchmarks/micro.py and the Nexmark queries
of benchmarks/nexmark/ as they are shipped, on the in-process engine at parallelism 1 with a counting sink.

    python -m benchmarks.compare.programs.strom_job --workload b --events 1000000
"""

from __future__ import annotations

from benchmarks import micro
from benchmarks.compare.programs import harness


def run(workload: str, n: int) -> int:
    if workload == "a":
        return micro.strom_a(n, 1)
    if workload == "b":
        return micro.strom_b(n, 1)
    from strom.connectors.nexmark import NexmarkConfig

    from benchmarks.nexmark.runner import run_timed

    return run_timed(workload, NexmarkConfig(events=n), parallelism=1).outputs


if __name__ == "__main__":
    harness.main("strom", run)
