"""Nexmark under Flink's own benchmark conditions, next to the in-process heap run, in one run.

Flink's Nexmark setup (nexmark-flink/src/main/resources/conf/flink-conf.yaml): `state.backend: rocksdb`,
`state.backend.incremental: true`, `execution.checkpointing.interval: 180000`, `execution.checkpointing.mode:
EXACTLY_ONCE`, one slot per TaskManager. Here: the local cluster (JobManager in this process, TaskManager
processes each running its slot in a slot process of its own), `parallelism` TaskManagers x 1 slot, so keyed
exchanges cross process boundaries over the network stack (loopback TCP); RocksDB with incremental
checkpoints, exactly-once, every `interval_ms`.

CPU is that of every process involved: this process (the JobManager's thread; nothing else runs here during
a cluster run) plus every descendant (TaskManagers and their slot processes), read from /proc before and
after each job; the slot processes outlive the job, so the difference is the job's CPU. Events per
CPU-second is therefore comparable with Flink's published per-core figures (events/s divided by cores).

Flink's figures come from long runs, so these report the steady state: before a query's timed runs, `warm_up`
runs it twice on `WARMUP_EVENTS` events, untimed. The first loads the query's code into the slot processes
(imports, RocksDB's first open: a once-per-process cost, ~0.5 CPU-s, that a JVM pays as class loading); the
second measures what every job still pays (deployment, graph unpickling, operator and RocksDB start, end of
job), which stays inside each timed run and is printed as a share of it (below 5% at the default events).
"""

from __future__ import annotations

import dataclasses
import os
import resource
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from strom.common.configuration import Configuration
from strom.connectors.nexmark import NexmarkConfig
from strom.runtime.minicluster import MiniCluster

from benchmarks.cluster import CountToFile, counted, descendant_cpu_seconds
from benchmarks.nexmark.runner import query_stream

FLINK_CHECKPOINT_INTERVAL_MS = 180_000  # nexmark-flink's flink-conf.yaml
WARMUP_EVENTS = 1_000  # a warm-up job's events: its CPU is nearly all the fixed per-job cost


@dataclass(frozen=True, slots=True)
class ClusterFigures:
    query: str
    events: int
    seconds: float
    cpu_seconds: float  # this process + every TaskManager and slot process, over the job
    outputs: int
    checkpoints: int
    checkpoint_durations_ms: tuple[int, ...] = ()  # completed checkpoints (the last 10), oldest first
    checkpoint_sizes: tuple[int, ...] = ()  # bytes each wrote (incremental: new shared files + private state)

    @property
    def events_per_cpu_second(self) -> float:
        return self.events / self.cpu_seconds

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds


def _own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _all_cpu_seconds() -> float:
    descendants = descendant_cpu_seconds()
    if descendants is None:
        raise SystemExit("--conditions flink measures the CPU of the cluster's processes through /proc (Linux only)")
    return _own_cpu_seconds() + descendants


def start_cluster(parallelism: int) -> MiniCluster:
    """`parallelism` TaskManagers with one slot each (nexmark-flink's `taskmanager.numberOfTaskSlots: 1`)."""
    cluster = MiniCluster(Configuration({"taskmanager.numberOfTaskSlots": 1}), taskmanagers=parallelism).start()
    cluster.wait_for_taskmanagers(parallelism)
    return cluster


def flink_conf(checkpoint_dir: str, interval_ms: int) -> dict[str, Any]:
    return {
        "state.backend.type": "rocksdb",
        "state.backend.incremental": True,
        "state.checkpoints.dir": f"file://{checkpoint_dir}",
        "execution.checkpointing.interval": interval_ms,
        "execution.checkpointing.mode": "EXACTLY_ONCE",
    }


def run_on_cluster(
    cluster: MiniCluster, query: str, config: NexmarkConfig, *, parallelism: int, interval_ms: int
) -> ClusterFigures:
    with tempfile.TemporaryDirectory(prefix="nexmark-flink-") as directory:
        counts = f"{directory}/counts"
        os.mkdir(counts)
        stream = query_stream(query, config, parallelism=parallelism,
                              conf=flink_conf(f"{directory}/checkpoints", interval_ms))
        stream.add_sink(CountToFile(counts)).name("blackhole")
        graph = stream.get_execution_environment().get_stream_graph(f"nexmark-{query}-flink-conditions")
        cpu_before, start = _all_cpu_seconds(), time.perf_counter()
        client = cluster.executor().start_job(graph)
        client.wait()
        seconds, cpu = time.perf_counter() - start, _all_cpu_seconds() - cpu_before
        job = cluster.jm.jobs[client.get_job_id()]
        checkpointing = getattr(job, "checkpointing", None)
        if checkpointing is None:
            return ClusterFigures(query, config.events, seconds, cpu, counted(counts), 0)
        stats = checkpointing.coordinator.stats.snapshot()
        done = [c for c in reversed(stats.history) if c.status == "COMPLETED"]
        return ClusterFigures(query, config.events, seconds, cpu, counted(counts), stats.num_completed,
                              tuple(c.end_to_end_duration for c in done), tuple(c.state_size for c in done))


@dataclass(frozen=True, slots=True)
class WarmUp:
    first_job_cpu_seconds: float  # the first job of the query: imports in the slot processes, untimed
    job_cpu_seconds: float  # a later job of WARMUP_EVENTS events: the fixed cost each timed run also pays


def warm_up(cluster: MiniCluster, query: str, config: NexmarkConfig, *, parallelism: int, interval_ms: int) -> WarmUp:
    """Two untimed jobs of `query` on WARMUP_EVENTS events (same configuration otherwise): the first loads the
    query's code into the slot processes; the second's CPU is the fixed cost of a job."""
    small = dataclasses.replace(config, events=WARMUP_EVENTS)
    first = run_on_cluster(cluster, query, small, parallelism=parallelism, interval_ms=interval_ms)
    second = run_on_cluster(cluster, query, small, parallelism=parallelism, interval_ms=interval_ms)
    return WarmUp(first.cpu_seconds, second.cpu_seconds)
