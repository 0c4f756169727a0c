"""Distributed-runtime benchmark: the keyed window pipeline on a local cluster of real
processes, at 1 slot and at 2 slots (one process per slot), and the cost of a TCP channel.

    python -m benchmarks.cluster [--events 1000000] [--repeat 2]

Figures printed (no assertions): events/s per configuration and the ratios
2 slots / 1 slot (target >= 1.6 on a 2-core machine) and
TCP channel / chained (map -> filter with the filter in another slot vs chained).
The TaskManager is started before timing; each figure is the best of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

from strom.common.configuration import Configuration
from strom.common.time import Time
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import SinkFunction, StreamExecutionEnvironment
from strom.runtime.minicluster import MiniCluster

from benchmarks.micro import WINDOW_MS, EventSource, filter_fn, key_fn, loop_b, map_fn, sum_fn, ts_fn


class CountToFile(SinkFunction):
    """Counts records per subtask and writes the count when the input ends (the processes of
    the cluster share no memory with this one)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def open(self, runtime_context: Any) -> None:
        self.count = 0
        self.index = runtime_context.get_index_of_this_subtask()

    def invoke(self, value: Any, context: Any) -> None:
        self.count += 1

    def finish(self) -> None:
        with open(os.path.join(self.directory, f"count-{self.index}"), "w") as f:
            f.write(str(self.count))


def counted(directory: str) -> int:
    return sum(int(open(os.path.join(directory, f)).read()) for f in os.listdir(directory))


def window_graph(n: int, parallelism: int, directory: str) -> Any:
    from strom.datastream.window import TumblingEventTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ts_fn)
    ds = env.from_source(EventSource(n), strategy, "events")
    ds.key_by(key_fn).window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))).reduce(sum_fn).add_sink(
        CountToFile(directory)
    )
    return env.get_stream_graph("bench-window")


def map_filter_graph(n: int, directory: str, *, across_slots: bool) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_source(EventSource(n), WatermarkStrategy.no_watermarks(), "events").map(map_fn)
    filtered = ds.filter(filter_fn)
    if across_slots:
        filtered.slot_sharing_group("downstream")  # another slot = another process = a TCP channel
    filtered.add_sink(CountToFile(directory))
    return env.get_stream_graph("bench-map-filter")


def run(cluster: MiniCluster, build: Any, expected: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            graph = build(d)
            start = time.perf_counter()
            cluster.executor()(graph)
            best = min(best, time.perf_counter() - start)
            got = counted(d)
            if got != expected:
                raise SystemExit(f"expected {expected} records, got {got}")
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    n = args.events
    expected_windows = loop_b(n)
    expected_filtered = sum(1 for i in range(n) if filter_fn(map_fn((i % 1000, i, 1))))
    conf = Configuration({"taskmanager.numberOfTaskSlots": 2})
    with MiniCluster(conf, taskmanagers=1) as cluster:
        cluster.wait_for_taskmanagers(1)
        t1 = run(cluster, lambda d: window_graph(n, 1, d), expected_windows, args.repeat)
        t2 = run(cluster, lambda d: window_graph(n, 2, d), expected_windows, args.repeat)
        chained = run(cluster, lambda d: map_filter_graph(n, d, across_slots=False), expected_filtered, args.repeat)
        tcp = run(cluster, lambda d: map_filter_graph(n, d, across_slots=True), expected_filtered, args.repeat)
    print(f"events={n}, 1 TaskManager x 2 slots, best of {args.repeat}")
    print(f"{'configuration':<48}{'events/s':>14}")
    print(f"{'key_by -> tumbling 1s -> sum, 1 slot':<48}{n / t1:>14,.0f}")
    print(f"{'key_by -> tumbling 1s -> sum, 2 slots':<48}{n / t2:>14,.0f}")
    print(f"{'map -> filter chained (1 slot)':<48}{n / chained:>14,.0f}")
    print(f"{'map -> filter over a TCP channel (2 slots)':<48}{n / tcp:>14,.0f}")
    print(f"2 slots / 1 slot: {t1 / t2:.2f}x   TCP channel / chained: {chained / tcp:.2f}x")


if __name__ == "__main__":
    main()
