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
        self.first = 0.0
        self.index = runtime_context.get_index_of_this_subtask()

    def invoke(self, value: Any, context: Any) -> None:
        if not self.count:
            self.first = time.time()
        self.count += 1

    def finish(self) -> None:
        with open(os.path.join(self.directory, f"count-{self.index}"), "w") as f:
            f.write(f"{self.count} {self.first} {time.time()}")


def _sink_reports(directory: str) -> list[tuple[int, float, float]]:
    out = []
    for name in os.listdir(directory):
        count, first, last = open(os.path.join(directory, name)).read().split()
        out.append((int(count), float(first), float(last)))
    return out


def counted(directory: str) -> int:
    return sum(c for c, _, _ in _sink_reports(directory))


def steady_seconds(directory: str) -> float:
    """From the first record any sink saw to the last: the job's running time without deployment
    and start-up (wall clocks of processes on one machine)."""
    reports = [r for r in _sink_reports(directory) if r[0]]
    return max(r[2] for r in reports) - min(r[1] for r in reports)


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


def run(cluster: MiniCluster, build: Any, expected: int, repeat: int) -> tuple[float, float]:
    """Best end-to-end seconds (submission to end) and best steady-state seconds of `repeat` runs."""
    best, best_steady = float("inf"), float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            graph = build(d)
            start = time.perf_counter()
            cluster.executor()(graph)
            best = min(best, time.perf_counter() - start)
            got = counted(d)
            if got != expected:
                raise SystemExit(f"expected {expected} records, got {got}")
            best_steady = min(best_steady, steady_seconds(d))
    return best, best_steady


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
        t1, s1 = run(cluster, lambda d: window_graph(n, 1, d), expected_windows, args.repeat)
        t2, s2 = run(cluster, lambda d: window_graph(n, 2, d), expected_windows, args.repeat)
        chained, chained_s = run(
            cluster, lambda d: map_filter_graph(n, d, across_slots=False), expected_filtered, args.repeat
        )
        tcp, tcp_s = run(cluster, lambda d: map_filter_graph(n, d, across_slots=True), expected_filtered, args.repeat)
    print(f"events={n}, 1 TaskManager x 2 slots, best of {args.repeat}")
    print(f"{'configuration':<48}{'events/s':>14}{'steady events/s':>18}")
    rows = [
        ("key_by -> tumbling 1s -> sum, 1 slot", t1, s1),
        ("key_by -> tumbling 1s -> sum, 2 slots", t2, s2),
        ("map -> filter chained (1 slot)", chained, chained_s),
        ("map -> filter over a TCP channel (2 slots)", tcp, tcp_s),
    ]
    for name, total, steady in rows:
        print(f"{name:<48}{n / total:>14,.0f}{n / steady:>18,.0f}")
    print(f"2 slots / 1 slot: {t1 / t2:.2f}x end to end, {s1 / s2:.2f}x steady state")
    print(f"TCP channel / chained: {chained / tcp:.2f}x end to end, {chained_s / tcp_s:.2f}x steady state")
    print("(steady state: from the first record a sink saw to the last, without deployment and start-up)")


if __name__ == "__main__":
    main()
