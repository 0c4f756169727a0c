"""Distributed-runtime benchmark: the keyed window pipeline on a local cluster of real
processes, at 1 slot and at 2 slots (one process per slot), and the cost of a TCP channel.

    python -m benchmarks.cluster [--events 1000000] [--repeat 2]

Figures printed (no assertions): events/s per configuration and the ratios
2 slots / 1 slot (target >= 1.6 on a 2-core machine) and
TCP channel / chained (map -> filter with the filter in another slot vs chained).
The TaskManager is started before timing; each figure is the best of --repeat runs.

Also printed: the CPU time the TaskManager's processes spent per event (Linux /proc), which explains the
scaling: with c1 = CPU per event at 1 slot and c2 at 2 slots, two cores cannot do better than 2 * c1 / c2.
A second keyed pipeline parses a JSON line per event before key_by (the usual first step of a job fed
by a log), so that the keyed exchange's cost meets a realistic amount of work per record.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any

from strom.common.configuration import Configuration
from strom.common.time import Time
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import SinkFunction, StreamExecutionEnvironment
from strom.runtime.minicluster import MiniCluster

from benchmarks.micro import (
    WINDOW_MS,
    EventSource,
    GeneratorReader,
    filter_fn,
    key_fn,
    loop_b,
    map_fn,
    sum_fn,
    ts_fn,
)


def json_line(i: int) -> str:
    return f'{{"key": {i % 1000}, "time": {i}, "value": 1, "note": "event {i}"}}'


class JsonLineSource(EventSource):
    """The events of EventSource as JSON lines (as a log or a message queue would carry them)."""

    def create_reader(self, context: Any) -> Any:
        p, i = context.parallelism, context.subtask_index
        return GeneratorReader(i, self.n, p, json_line)


def parse_fn(line: str) -> tuple[int, int, int]:
    d = json.loads(line)
    return (d["key"], d["time"], d["value"])


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


def json_window_graph(n: int, parallelism: int, directory: str) -> Any:
    from strom.datastream.window import TumblingEventTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ts_fn)
    ds = env.from_source(JsonLineSource(n), WatermarkStrategy.no_watermarks(), "json lines").map(parse_fn)
    ds = ds.assign_timestamps_and_watermarks(strategy)
    ds.key_by(key_fn).window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))).reduce(sum_fn).add_sink(
        CountToFile(directory)
    )
    return env.get_stream_graph("bench-json-window")


def map_filter_graph(n: int, directory: str, *, across_slots: bool) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_source(EventSource(n), WatermarkStrategy.no_watermarks(), "events").map(map_fn)
    filtered = ds.filter(filter_fn)
    if across_slots:
        filtered.slot_sharing_group("downstream")  # another slot = another process = a TCP channel
    filtered.add_sink(CountToFile(directory))
    return env.get_stream_graph("bench-map-filter")


def descendant_cpu_seconds() -> float | None:
    """User + system CPU seconds of this process's descendants alive now (Linux /proc), or None.
    Slot processes live as long as their TaskManager, so differences over a run are that run's CPU."""
    if not os.path.isdir("/proc/self/task"):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    me, total = os.getpid(), 0.0
    for pid in cpu:
        p = parent.get(pid)
        while p is not None and p != me and p > 1:
            p = parent.get(p)
        if p == me:
            total += cpu[pid]
    return total


def run(cluster: MiniCluster, build: Any, expected: int, repeat: int) -> tuple[float, float, float | None]:
    """Best end-to-end seconds (submission to end), best steady-state seconds and the least
    TaskManager CPU seconds of `repeat` runs."""
    best, best_steady, best_cpu = float("inf"), float("inf"), None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            graph = build(d)
            cpu_before = descendant_cpu_seconds()
            start = time.perf_counter()
            cluster.executor()(graph)
            best = min(best, time.perf_counter() - start)
            cpu_after = descendant_cpu_seconds()
            got = counted(d)
            if got != expected:
                raise SystemExit(f"expected {expected} records, got {got}")
            best_steady = min(best_steady, steady_seconds(d))
            if cpu_before is not None and cpu_after is not None:
                used = cpu_after - cpu_before
                best_cpu = used if best_cpu is None else min(best_cpu, used)
    return best, best_steady, best_cpu


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
        w1 = run(cluster, lambda d: window_graph(n, 1, d), expected_windows, args.repeat)
        w2 = run(cluster, lambda d: window_graph(n, 2, d), expected_windows, args.repeat)
        j1 = run(cluster, lambda d: json_window_graph(n, 1, d), expected_windows, args.repeat)
        j2 = run(cluster, lambda d: json_window_graph(n, 2, d), expected_windows, args.repeat)
        chained = run(cluster, lambda d: map_filter_graph(n, d, across_slots=False), expected_filtered, args.repeat)
        tcp = run(cluster, lambda d: map_filter_graph(n, d, across_slots=True), expected_filtered, args.repeat)
    print(f"events={n}, 1 TaskManager x 2 slots, best of {args.repeat}")
    print(f"{'configuration':<52}{'events/s':>12}{'steady events/s':>18}{'CPU us/event':>14}")
    rows = [
        ("key_by -> tumbling 1s -> sum, 1 slot", w1),
        ("key_by -> tumbling 1s -> sum, 2 slots", w2),
        ("parse JSON -> key_by -> tumbling 1s -> sum, 1 slot", j1),
        ("parse JSON -> key_by -> tumbling 1s -> sum, 2 slots", j2),
        ("map -> filter chained (1 slot)", chained),
        ("map -> filter over a TCP channel (2 slots)", tcp),
    ]
    for name, (total, steady, cpu) in rows:
        cpu_text = f"{cpu / n * 1e6:.2f}" if cpu is not None else "n/a"
        print(f"{name:<52}{n / total:>12,.0f}{n / steady:>18,.0f}{cpu_text:>14}")
    for what, one, two in (("keyed window", w1, w2), ("JSON + keyed window", j1, j2)):
        line = f"{what}: 2 slots / 1 slot {one[0] / two[0]:.2f}x end to end, {one[1] / two[1]:.2f}x steady state"
        if one[2] and two[2]:
            line += f"; CPU per event 2 slots / 1 slot {two[2] / one[2]:.2f} (so at most {2 * one[2] / two[2]:.2f}x)"
        print(line)
    print(f"TCP channel / chained: {chained[0] / tcp[0]:.2f}x end to end, {chained[1] / tcp[1]:.2f}x steady state")
    print("(steady state: from the first record a sink saw to the last, without deployment and start-up)")


if __name__ == "__main__":
    main()
