"""Distributed-runtime benchmark: the keyed window pipeline on a local cluster of real
processes, at 1 slot and at 2 slots (one process per slot), and the cost of a TCP channel.

    python -m benchmarks.cluster [--events 1000000] [--repeat 2]
    python -m benchmarks.cluster --network-namespaces [--events 200000] [--repeat 1]   # as root

Figures printed (no assertions): events/s per configuration and the ratios
2 slots / 1 slot (target >= 1.6 on a 2-core machine) and
TCP channel / chained (map -> filter with the filter in another slot vs chained).
The TaskManager is started before timing; each figure is the best of --repeat runs.

Also printed: the CPU time the TaskManager's processes spent per event (Linux /proc), which explains the
scaling: with c1 = CPU per event at 1 slot and c2 at 2 slots, two cores cannot do better than 2 * c1 / c2.
A second keyed pipeline parses a JSON line per event before key_by (the usual first step of a job fed
by a log), so that the keyed exchange's cost meets a realistic amount of work per record.

`--network-namespaces` (root; tests/netns.py) runs the two keyed pipelines at parallelism 2 as they
run on a cluster: JobManager in a network namespace of its own, jobs submitted over REST, first on
1 TaskManager x 2 slots in a second namespace (the keyed exchange stays on that host's loopback),
then on 2 TaskManagers x 1 slot in a third and fourth (the exchange crosses hosts over veth and a
bridge). Printed: events/s of both and the ratio 2 TaskManagers / 1 TaskManager.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
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
from benchmarks.progress import step


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


def descendant_cpu_seconds(roots: set[int] | None = None) -> float | None:
    """User + system CPU seconds of this process's descendants alive now (Linux /proc), or None;
    with `roots`, of those processes and their descendants instead. Slot processes live as long as
    their TaskManager, so differences over a run are that run's CPU."""
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
    if roots is not None:
        return sum(t for pid, t in cpu.items() if _under(pid, roots, parent, inclusive=True))
    return sum(t for pid, t in cpu.items() if _under(pid, {os.getpid()}, parent, inclusive=False))


def _under(pid: int, roots: set[int], parent: dict[int, int], *, inclusive: bool) -> bool:
    p: int | None = pid if inclusive else parent.get(pid)
    while p is not None and p > 1:
        if p in roots:
            return True
        p = parent.get(p)
    return False


def run(cluster: MiniCluster, build: Any, expected: int, repeat: int) -> tuple[float, float, float | None]:
    """Best end-to-end seconds (submission to end), best steady-state seconds and the least
    TaskManager CPU seconds of `repeat` runs."""
    best, best_steady, best_cpu = float("inf"), float("inf"), None
    for i in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            graph = build(d)
            cpu_before = descendant_cpu_seconds()
            start = time.perf_counter()
            with step(f"{graph.job_name}: run {i + 1} of {repeat}"):
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


# -- across network namespaces ----------------------------------------------------------------------
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NS_RPC_PORT, NS_REST_PORT = 6123, 8081


class NamespaceCluster:
    """A JobManager in a network namespace of its own, TaskManagers in others, driven over REST from
    this machine. The processes import this repository (the graphs pickle its functions by reference)."""

    def __init__(self) -> None:
        from tests.netns import TestNetwork

        self.net = TestNetwork.create()
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime-image")]))
        self.jm_host = self.net.add_host("jobmanager")
        self.taskmanagers: list[subprocess.Popen[bytes]] = []
        self.jm = self._start(self.jm_host, "jobmanager", "-D", "jobmanager.bind-host=0.0.0.0",
                              "-D", "rest.bind-address=0.0.0.0", "-D", f"rest.address={self.jm_host.ip}",
                              "-D", f"jobmanager.rpc.port={NS_RPC_PORT}", "-D", f"rest.port={NS_REST_PORT}",
                              "-D", "heartbeat.interval=500", "-D", "heartbeat.timeout=5000")
        from strom.client.rest_client import RestClient

        self.client = RestClient(self.jm_host.ip, NS_REST_PORT)

    def _start(self, host: Any, *args: str) -> subprocess.Popen[bytes]:
        argv = host.command([sys.executable, "-m", "strom.cli", *args, "--log-level", "WARNING"])
        # quiet: the figures are the output (a failure shows as a job that does not finish, named on exit)
        return subprocess.Popen(
            argv, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )

    def start_taskmanagers(self, count: int, slots: int) -> None:
        """`count` TaskManagers of `slots` slots, each in a new namespace; waits until they registered."""
        for _ in range(count):
            host = self.net.add_host(f"taskmanager-{len(self.net.hosts)}")
            jobmanager, slots_key = f"{self.jm_host.ip}:{NS_RPC_PORT}", f"taskmanager.numberOfTaskSlots={slots}"
            self.taskmanagers.append(self._start(host, "taskmanager", "--jobmanager", jobmanager, "-D", slots_key))
        self._wait(lambda: self._overview().get("taskmanagers") == count, f"{count} TaskManagers registered")

    def stop_taskmanagers(self) -> None:
        _terminate(self.taskmanagers)
        self.taskmanagers = []
        self._wait(lambda: self._overview().get("taskmanagers") == 0, "the TaskManagers' deregistration")

    def _overview(self) -> dict[str, Any]:
        try:
            return self.client.overview()
        except Exception:  # noqa: BLE001 - not serving yet
            return {}

    def _wait(self, condition: Any, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise SystemExit(f"{what}: not within {timeout:g} s")
            time.sleep(0.05)

    def execute(self, graph: Any) -> None:
        """Submit over REST and wait until the job finished."""
        from strom.common.job_payload import encode_job

        job_id = self.client.submit(encode_job(graph))
        while (state := self.client.job(job_id)["state"]) not in ("FINISHED", "FAILED", "CANCELED"):
            time.sleep(0.02)
        if state != "FINISHED":
            raise SystemExit(f"job {job_id} ended {state}")

    def cpu_seconds(self) -> float | None:
        return descendant_cpu_seconds({p.pid for p in self.taskmanagers})

    def close(self) -> None:
        _terminate([*self.taskmanagers, self.jm])
        self.net.close()


def _terminate(processes: list[subprocess.Popen[bytes]]) -> None:
    for p in processes:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in processes:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def run_remote(cluster: NamespaceCluster, build: Any, expected: int, repeat: int) -> tuple[float, float, float | None]:
    """As `run`, for jobs submitted to a NamespaceCluster."""
    best, best_steady, best_cpu = float("inf"), float("inf"), None
    for i in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            cpu_before = cluster.cpu_seconds()
            start = time.perf_counter()
            with step(f"run {i + 1} of {repeat} on the namespace cluster"):
                cluster.execute(build(d))
            best = min(best, time.perf_counter() - start)
            cpu_after = cluster.cpu_seconds()
            got = counted(d)
            if got != expected:
                raise SystemExit(f"expected {expected} records, got {got}")
            best_steady = min(best_steady, steady_seconds(d))
            if cpu_before is not None and cpu_after is not None:
                best_cpu = cpu_after - cpu_before if best_cpu is None else min(best_cpu, cpu_after - cpu_before)
    return best, best_steady, best_cpu


def namespaces_main(n: int, repeat: int) -> None:
    from tests.netns import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        raise SystemExit(f"--network-namespaces: {reason}")
    expected = loop_b(n)
    pipelines = (("key_by -> tumbling 1s -> sum", window_graph), ("parse JSON -> key_by -> tumbling 1s -> sum",
                                                                 json_window_graph))
    results: dict[tuple[str, str], tuple[float, float, float | None]] = {}
    layouts = (("1 TaskManager x 2 slots", 1, 2), ("2 TaskManagers x 1 slot", 2, 1))
    cluster = NamespaceCluster()
    try:
        for layout, count, slots in layouts:
            cluster.start_taskmanagers(count, slots)
            for name, graph in pipelines:
                results[(name, layout)] = run_remote(cluster, lambda d, g=graph: g(n, 2, d), expected, repeat)
            cluster.stop_taskmanagers()
    finally:
        cluster.close()
    print(f"events={n}, parallelism 2, JobManager and each TaskManager in a network namespace of its own, "
          f"best of {repeat}")
    print(f"{'pipeline, layout':<70}{'events/s':>12}{'steady events/s':>18}{'CPU us/event':>14}")
    for (name, layout), (total, steady, cpu) in results.items():
        cpu_text = f"{cpu / n * 1e6:.2f}" if cpu is not None else "n/a"
        print(f"{name + ', ' + layout:<70}{n / total:>12,.0f}{n / steady:>18,.0f}{cpu_text:>14}")
    for name, _ in pipelines:
        one, two = results[(name, layouts[0][0])], results[(name, layouts[1][0])]
        print(f"{name}: 2 TaskManagers x 1 slot / 1 TaskManager x 2 slots {one[0] / two[0]:.2f}x end to end, "
              f"{one[1] / two[1]:.2f}x steady state")
    print("(end to end: submission over REST to FINISHED; steady state: first to last record at the sinks)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--network-namespaces", action="store_true",
                    help="keyed pipelines on 1 TaskManager x 2 slots vs 2 x 1 slot in separate namespaces (root)")
    args = ap.parse_args(argv)
    if args.network_namespaces:
        namespaces_main(args.events, args.repeat)
        return
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
