"""Cost growth with the number of keys: a keyed rolling reduce and keyed 1 s tumbling windows over 1k, 100k and
1M keys (10M with --huge), on heap and on RocksDB state, with and without incremental checkpoints.

    python -m benchmarks.key_growth [--events 1000000] [--keys 1000,100000,1000000] [--huge] [--interval-ms 1000]

Design (what a Flink user running a long job with K keys would measure): the per-event cost in the steady state,
when the state already holds every key. So the rolling reduce runs in two phases over a key space of K keys:
  * warm-up: every key once, in a scrambled order (`i * 2654435761 mod K`, a permutation: the multiplier is
    prime), so the state holds K entries; with checkpoints, the source then waits for a checkpoint taken after
    the warm-up (so the warm-up's inserts are not the measured phase's first snapshot); its rate is printed
    too (inserts, CPU up to that point), but it is not the figure;
  * measured: `--events` events (default 1M, the same at every K), each key drawn uniformly at random from the
    key space (seeded), so every event updates an existing key and the share of reads that hit a cache is what
    a cache of that size would see on uniform keys (no ordering a cache could exploit).
Events per key therefore differ (1000 at 1k keys, 0.1 at 10M), but every measured event does the same work:
read one existing key's value, reduce, write it back. A fixed number of events per key instead would make the
10M-key run 10x longer than the 1M one for the same figure, and a fixed event count without warm-up (the old
design) measured first inserts at large K and updates at small K.
The windows pipeline has no warm-up (a window's state starts empty): `--events` events with uniform keys over
4 one-second windows of event time, so a window holds about min(K, events / 4) panes.

Each configuration runs in a process of its own (in-process engine, parallelism 1), so its peak RSS is its own.
RocksDB keeps Flink's defaults: an 8 MB block cache per subtask (`state.backend.rocksdb.block.cache-size`),
below the state size from 100k keys on (about 40 bytes per key on disk, about 150 in memory).

With --floor, each rolling-reduce configuration is followed by its floor (`benchmarks.key_growth_floor`): the same
events through a plain dict loop (heap) or straight rocksdict read-modify-writes (RocksDB), no engine; printed as
`floor` and `engine/floor`, so what the key count costs any Python program here is told apart from the engine's.

Printed per configuration: events per CPU-second of the measured phase (the process's CPU from the moment the
source starts the measured phase to the job's end: source, operator and sink together), the warm-up's insert
rate, checkpoints completed in the measured phase, their median duration (trigger to completion) and median size
(incremental: the bytes the checkpoint wrote, i.e. new SST files), peak RSS. No assertions: figures only.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from strom.common.configuration import Configuration
from strom.common.time import Time
from strom.common.watermark_strategy import WatermarkStrategy
from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.executors import load_executor
from strom.datastream.functions import CheckpointListener, SinkFunction

from benchmarks.progress import step

GOLDEN = 2654435761  # a prime: i * GOLDEN mod K visits every key of 0..K-1 once, in a scrambled order
WINDOWS = 4
SEED = 23


def reduce_fn(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return (a[0], b[1], a[2] + b[2])


def key_fn(e: tuple[int, int, int]) -> int:
    return e[0]


def ts_fn(e: tuple[int, int, int], _record_ts: int) -> int:
    return e[1]


class Phases:
    """When the measured phase began (set by the source reader, read after the job: same process), and how
    many records the sink has seen (the reader starts the measured phase once the warm-up is all through)."""

    cpu: float | None = None
    wall: float | None = None
    seen = [0]
    completed = [0]  # checkpoints completed so far
    drained_at: int | None = None  # `completed` when the warm-up had gone through


class PhaseSink(SinkFunction, CheckpointListener):
    """Counts what arrives, live, and the completed checkpoints (the source waits on both after the warm-up)."""

    def open(self, runtime_context: Any) -> None:
        self.seen = Phases.seen

    def invoke(self, value: Any, context: Any) -> None:
        self.seen[0] += 1

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        Phases.completed[0] += 1


class KeyedEventsReader(SourceReader):
    def __init__(self, keys: int, warmup: int, events: int, checkpointing: bool) -> None:
        self.keys, self.warmup, self.events, self.checkpointing = keys, warmup, events, checkpointing
        self.next = 0
        self.random = random.Random(SEED).random
        self.span = WINDOWS * 1000

    def poll(self, max_records: int) -> list[Any] | None:
        i, warmup, keys = self.next, self.warmup, self.keys
        if i < warmup:
            stop = min(i + max_records, warmup)
            batch = [((j * GOLDEN) % keys, 0, 1) for j in range(i, stop)]
        else:
            if i >= warmup + self.events:
                return None
            if Phases.cpu is None and warmup:
                # idle until the warm-up has gone through (the rolling reduce emits one record per input) and, with
                # checkpoints, until two more have completed: the second was triggered after the first completed,
                # so after the warm-up, and its snapshot wrote the warm-up's inserts (the steady state starts there)
                if Phases.drained_at is None and Phases.seen[0] >= warmup:
                    Phases.drained_at = Phases.completed[0]
                if Phases.drained_at is None or (
                    self.checkpointing and Phases.completed[0] < Phases.drained_at + 2
                ):
                    time.sleep(0.002)  # a condition, polled
                    return []
            if Phases.cpu is None:
                Phases.cpu, Phases.wall = time.process_time(), time.time()
            stop = min(i + max_records, warmup + self.events)
            rnd, span, events = self.random, self.span, self.events
            batch = [(int(rnd() * keys), (j - warmup) * span // events, 1) for j in range(i, stop)]
        self.next = stop
        return batch


class KeyedEvents(Source):
    """The warm-up and the measured events (see the module docstring)."""

    name = "keyed events"

    def __init__(self, keys: int, warmup: int, events: int, checkpointing: bool) -> None:
        self.keys, self.warmup, self.events, self.checkpointing = keys, warmup, events, checkpointing

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        return KeyedEventsReader(self.keys, self.warmup, self.events, self.checkpointing)


def run_one(pipeline: str, backend: str, keys: int, events: int, interval_ms: int, conf_extra: dict[str, Any]) -> dict:
    from strom.datastream.window import TumblingEventTimeWindows

    Phases.seen[0] = Phases.completed[0] = 0
    warmup = keys if pipeline == "reduce" else 0
    with tempfile.TemporaryDirectory(prefix="key-growth-") as directory:
        conf: dict[str, Any] = {
            "state.backend.type": backend,
            "state.backend.incremental": True,
            "state.checkpoints.dir": f"file://{directory}",
            **conf_extra,
        }
        env = StreamExecutionEnvironment.get_execution_environment(Configuration(conf))
        env.set_parallelism(1)
        if interval_ms:
            env.enable_checkpointing(interval_ms)
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ts_fn)
        keyed = env.from_source(KeyedEvents(keys, warmup, events, interval_ms > 0), strategy, "events").key_by(key_fn)
        if pipeline == "reduce":
            out = keyed.reduce(reduce_fn)
        else:
            out = keyed.window(TumblingEventTimeWindows.of(Time.seconds(1))).reduce(reduce_fn)
        out.add_sink(PhaseSink())
        handle = load_executor().start_job(env.get_stream_graph(f"key-growth-{pipeline}"))
        cpu_start = time.process_time()
        handle.wait()
        cpu_end = time.process_time()
        coordinator = getattr(handle._job, "checkpoint_coordinator", None)
        stats = coordinator.stats.snapshot() if coordinator is not None else None
    measured_cpu = cpu_end - (Phases.cpu if Phases.cpu is not None else cpu_start)
    warmup_cpu = (Phases.cpu - cpu_start) if Phases.cpu is not None else 0.0
    boundary_ms = (Phases.wall or 0.0) * 1000
    history = stats.history if stats is not None else ()
    completed = sorted(
        (c for c in history if c.status == "COMPLETED" and c.trigger_timestamp >= boundary_ms),
        key=lambda c: c.checkpoint_id,
    )
    return {
        "pipeline": pipeline, "backend": backend, "keys": keys, "events": events, "warmup": warmup,
        "events_per_cpu_s": events / measured_cpu,
        "warmup_per_cpu_s": warmup / warmup_cpu if warmup and warmup_cpu > 0 else None,
        "outputs": Phases.seen[0],
        "checkpoints": len(completed),
        "checkpoint_ms": statistics.median(c.end_to_end_duration for c in completed) if completed else None,
        "checkpoint_bytes": statistics.median(c.state_size for c in completed) if completed else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _mb(size: float | None) -> str:
    return "-" if size is None else f"{size / 1e6:,.1f}"


def _append(path: str | None, row: dict) -> None:
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def _run_floor(backend: str, keys: int, events: int, timeout: float) -> float | None:
    cmd = [sys.executable, "-m", "benchmarks.key_growth", "--one-floor", f"{backend},{keys}", "--events", str(events)]
    try:
        with step(f"floor {backend} {keys:,} keys"):
            done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"floor {backend} {keys:,} keys: cut after {timeout:.0f} s", file=sys.stderr)
        return None
    if done.returncode != 0:
        print(f"floor {backend} {keys:,} keys failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return float(json.loads(done.stdout.strip().splitlines()[-1])["floor_per_cpu_s"])


def _floor_cells(r: dict, rate: float, floor_base: dict[str, float]) -> str:
    got = r.get("floor_per_cpu_s")
    if got is None:
        return ""
    ratio = got / floor_base.setdefault(r["backend"], got)
    return f"{got:>12,.0f}{ratio:>8.2f}{rate / got:>13.2f}"


def _conf_pairs(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"-D expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="measured events per configuration")
    ap.add_argument("--keys", default="1000,100000,1000000", help="comma-separated key counts")
    ap.add_argument("--huge", action="store_true",
                    help="also 10,000,000 keys (the reduce's warm-up then inserts 10M keys: minutes per run, "
                         "several GB of RSS on heap)")
    ap.add_argument("--backends", default="hashmap,rocksdb")
    ap.add_argument("--pipelines", default="reduce,window")
    ap.add_argument("--interval-ms", type=int, default=1000, help="checkpoint interval (0: no checkpoints)")
    ap.add_argument("-D", dest="conf", action="append", default=[], help="extra configuration key=value")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run; a run cut by it is reported")
    ap.add_argument("--jsonl", help="also append each run's figures to this file as they come (JSON lines)")
    ap.add_argument("--floor", action="store_true",
                    help="after each rolling-reduce configuration, the same events with no engine (plain dict loop / "
                         "raw rocksdict read-modify-writes): see benchmarks/key_growth_floor.py")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # pipeline,backend,keys: run one configuration, print JSON
    ap.add_argument("--one-floor", help=argparse.SUPPRESS)  # backend,keys: the floor of one configuration, print it
    args = ap.parse_args(argv)
    conf_extra = _conf_pairs(args.conf)
    if args.one_floor:
        from benchmarks.key_growth_floor import floor

        backend, keys = args.one_floor.split(",")
        print(json.dumps({"floor_per_cpu_s": floor(backend, int(keys), args.events)}))
        return
    if args.one:
        pipeline, backend, keys = args.one.split(",")
        print(json.dumps(run_one(pipeline, backend, int(keys), args.events, args.interval_ms, conf_extra)))
        return
    key_counts = [int(k) for k in args.keys.split(",")] + ([10_000_000] if args.huge else [])
    rows: list[tuple[dict, list[float]]] = []
    for pipeline in args.pipelines.split(","):
        for backend in args.backends.split(","):
            for keys in key_counts:
                rates, last = [], None
                for i in range(args.repeat):
                    cmd = [sys.executable, "-m", "benchmarks.key_growth", "--one", f"{pipeline},{backend},{keys}",
                           "--events", str(args.events), "--interval-ms", str(args.interval_ms)]
                    for item in args.conf:
                        cmd += ["-D", item]
                    try:
                        with step(f"{pipeline} {backend} {keys:,} keys, run {i + 1} of {args.repeat}"):
                            done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                                  timeout=args.timeout)
                    except subprocess.TimeoutExpired:
                        print(f"{pipeline} {backend} {keys:,} keys: cut after {args.timeout:.0f} s", file=sys.stderr)
                        _append(args.jsonl, {"pipeline": pipeline, "backend": backend, "keys": keys,
                                             "interval_ms": args.interval_ms, "timeout_s": args.timeout})
                        break
                    if done.returncode != 0:
                        print(f"{pipeline} {backend} {keys:,} keys failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                        break
                    last = json.loads(done.stdout.strip().splitlines()[-1])
                    _append(args.jsonl, {**last, "interval_ms": args.interval_ms})
                    rates.append(last["events_per_cpu_s"])
                if last is not None and args.floor and pipeline == "reduce":
                    last["floor_per_cpu_s"] = _run_floor(backend, keys, args.events, args.timeout)
                    _append(args.jsonl, {"pipeline": "floor", "backend": backend, "keys": keys,
                                         "events": args.events, "floor_per_cpu_s": last["floor_per_cpu_s"]})
                if last is not None:
                    rows.append((last, rates))
    extra = ", ".join(args.conf) or "defaults (RocksDB block cache 8 MB)"
    print(f"measured events={args.events:,} (uniform keys; the reduce after a warm-up inserting every key), "
          f"parallelism 1, checkpoints every {args.interval_ms} ms (incremental on RocksDB), {extra}; "
          f"{args.repeat} run(s): median [min-max]")
    print(f"{'pipeline':<8}{'backend':<9}{'keys':>11} {'ev/CPU-s':>29}{'vs 1st':>8}{'warm-up/CPU-s':>14}"
          f"{'outputs':>11}{'chk':>5}{'chk ms':>8}{'chk MB':>8}{'RSS MB':>8}"
          +  (f"{'floor':>12}{'vs 1st':>8}{'engine/floor':>13}" if args.floor else ""))
    floor_base: dict[str, float] = {}
    base: dict[tuple[str, str], float] = {}
    for r, rates in rows:
        rate = statistics.median(rates)
        ratio = rate / base.setdefault((r["pipeline"], r["backend"]), rate)
        spread = f"{rate:,.0f} [{min(rates):,.0f}-{max(rates):,.0f}]"
        chk_ms = "-" if r["checkpoint_ms"] is None else f"{r['checkpoint_ms']:,.0f}"
        warm = "-" if r["warmup_per_cpu_s"] is None else f"{r['warmup_per_cpu_s']:,.0f}"
        print(f"{r['pipeline']:<8}{r['backend']:<9}{r['keys']:>11,} {spread:>29}{ratio:>8.2f}{warm:>14}"
              f"{r['outputs']:>11,}{r['checkpoints']:>5}{chk_ms:>8}{_mb(r['checkpoint_bytes']):>8}"
              f"{r['peak_rss_mb']:>8,.0f}" + _floor_cells(r, rate, floor_base))


if __name__ == "__main__":
    main()
