"""Async I/O throughput next to a synchronous map calling the same slow service, in the same run.

    python -m benchmarks.async_io [--elements 2000] [--latency-ms 20] [--capacity 100]

The "service" answers after `--latency-ms` (asyncio.sleep in async_invoke; time.sleep in the map,
as a blocking client would). Prints elements/s for: a sync map, ordered_wait and unordered_wait at
`--capacity`, and unordered_wait on a zero-latency service (the operator's own overhead per element).
A benchmark, not a test: every run checks its output against the input, nothing is asserted on speed.

Figures (2-core VM shared with other engineers' work, parallelism 1, one run, 20 ms service latency):

    sync map                           250 elements   5.25 s       48 elements/s
    ordered_wait (capacity 100)       2000 elements   0.52 s    3,826 elements/s   (~80x the sync map)
    unordered_wait (capacity 100)     2000 elements   0.53 s    3,785 elements/s
    unordered_wait, 0 ms service     20000 elements   0.83 s   24,223 elements/s   (the operator's overhead)
"""

from __future__ import annotations

import argparse
import asyncio
import time

from strom.common import Types
from strom.datastream import AsyncDataStream, AsyncFunction, StreamExecutionEnvironment

from benchmarks.progress import step


class Service(AsyncFunction):
    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    async def async_invoke(self, value):
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return [value + 1]


def timed(build, elements: int) -> float:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    stream = build(env.from_collection(list(range(elements)), type_info=Types.LONG()))
    started = time.perf_counter()
    with stream.execute_and_collect() as results:
        out = sorted(results)
    elapsed = time.perf_counter() - started
    assert out == [v + 1 for v in range(elements)]
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=2_000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--capacity", type=int, default=100)
    args = parser.parse_args()
    latency = args.latency_ms / 1000.0
    n, cap = args.elements, args.capacity

    def sync_lookup(v: int) -> int:
        time.sleep(latency)
        return v + 1

    sync_n = max(50, min(n, int(5 / max(latency, 1e-3))))  # the sync map is slow: at most ~5 s of it
    runs = [
        ("sync map", sync_n, lambda s: s.map(sync_lookup, Types.LONG())),
        (f"ordered_wait (capacity {cap})", n,
         lambda s: AsyncDataStream.ordered_wait(s, Service(latency), 60_000, cap, Types.LONG())),
        (f"unordered_wait (capacity {cap})", n,
         lambda s: AsyncDataStream.unordered_wait(s, Service(latency), 60_000, cap, Types.LONG())),
        ("unordered_wait, 0 ms service", n * 10,
         lambda s: AsyncDataStream.unordered_wait(s, Service(0.0), 60_000, cap, Types.LONG())),
    ]
    print(f"service latency {args.latency_ms} ms")
    for name, elements, build in runs:
        with step(f"{name}: {elements:,} elements"):
            elapsed = timed(build, elements)
        print(f"  {name:34s} {elements:7d} elements {elapsed:7.2f} s  {elements / elapsed:10,.0f} elements/s")


if __name__ == "__main__":
    main()
