"""Cost growth with the number of keys: a keyed rolling reduce and keyed 1 s tumbling windows over 1k, 100k and
1M keys (10M with --huge), on heap and on RocksDB state, with incremental checkpoints.

    python -m benchmarks.key_growth [--events 1000000] [--keys 1000,100000,1000000] [--huge] [--repeat 1]

Each configuration runs in a process of its own (in-process engine, parallelism 1), so its peak RSS is its own.
Event i has key `(i * 2654435761 mod 2^32) mod keys` (every key touched in a scrambled order, as a hash would
spread them), value 1 and event time `i * 4000 // events` ms: every run is 4 one-second windows whatever the
event count, so a window holds about min(keys, events / 4) keys. RocksDB keeps Flink's defaults: an 8 MB block
cache per subtask (`state.backend.rocksdb.block.cache-size`), below the state size from 100k keys on. Its
in-memory namespace cache holds at most `--namespace-cache-entries` entries (default: the engine's 1,000,000);
set it below the key count to measure state that lives in RocksDB proper.

Printed per configuration: events per CPU-second (the process's CPU over the job), checkpoints completed, the
median checkpoint duration (trigger to completion), the sizes of the first and the last checkpoint (incremental:
bytes written, i.e. new SST files and the changed state), peak RSS. No assertions: figures only.
"""

from __future__ import annotations

import argparse
import json
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

from benchmarks.micro import CountingSink, GeneratorReader
from benchmarks.progress import step

GOLDEN = 2654435761  # Knuth's multiplicative hash: a scrambled visiting order of the keys
WINDOWS = 4


def reduce_fn(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return (a[0], b[1], a[2] + b[2])


def key_fn(e: tuple[int, int, int]) -> int:
    return e[0]


def ts_fn(e: tuple[int, int, int], _record_ts: int) -> int:
    return e[1]


class KeyedEvents(Source):
    """`events` events over `keys` keys (see the module docstring)."""

    name = "keyed events"

    def __init__(self, events: int, keys: int) -> None:
        self.events, self.keys = events, keys

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        events, keys = self.events, self.keys
        span = WINDOWS * 1000

        def make(i: int) -> tuple[int, int, int]:
            return ((i * GOLDEN & 0xFFFFFFFF) % keys, i * span // events, 1)

        return GeneratorReader(context.subtask_index, events, context.parallelism, make)


def run_one(pipeline: str, backend: str, keys: int, events: int, interval_ms: int, cache_entries: int | None) -> dict:
    from strom.datastream.window import TumblingEventTimeWindows

    CountingSink.count = 0
    with tempfile.TemporaryDirectory(prefix="key-growth-") as directory:
        conf: dict[str, Any] = {
            "state.backend.type": backend,
            "state.backend.incremental": True,
            "state.checkpoints.dir": f"file://{directory}",
        }
        if cache_entries is not None:
            conf["state.backend.rocksdb.namespace-cache.max-entries"] = cache_entries
        env = StreamExecutionEnvironment.get_execution_environment(Configuration(conf))
        env.set_parallelism(1)
        if interval_ms:
            env.enable_checkpointing(interval_ms)
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ts_fn)
        keyed = env.from_source(KeyedEvents(events, keys), strategy, "events").key_by(key_fn)
        if pipeline == "reduce":
            out = keyed.reduce(reduce_fn)
        else:
            out = keyed.window(TumblingEventTimeWindows.of(Time.seconds(1))).reduce(reduce_fn)
        out.add_sink(CountingSink())
        handle = load_executor().start_job(env.get_stream_graph(f"key-growth-{pipeline}"))
        cpu_start, start = time.process_time(), time.perf_counter()
        handle.wait()
        cpu, seconds = time.process_time() - cpu_start, time.perf_counter() - start
        coordinator = getattr(handle._job, "checkpoint_coordinator", None)
        stats = coordinator.stats.snapshot() if coordinator is not None else None
    history = stats.history if stats is not None else ()
    completed = sorted((c for c in history if c.status == "COMPLETED"), key=lambda c: c.checkpoint_id)
    return {
        "pipeline": pipeline, "backend": backend, "keys": keys, "events": events,
        "events_per_cpu_s": events / cpu, "events_per_s": events / seconds, "outputs": CountingSink.count,
        "checkpoints": stats.num_completed if stats is not None else 0,
        "checkpoint_ms": statistics.median(c.end_to_end_duration for c in completed) if completed else None,
        "first_size": completed[0].state_size if completed else None,
        "last_size": completed[-1].state_size if completed else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _mb(size: int | None) -> str:
    return "-" if size is None else f"{size / 1e6:,.1f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", default="1000,100000,1000000", help="comma-separated key counts")
    ap.add_argument("--huge", action="store_true", help="also 10,000,000 keys (several GB of RSS on heap)")
    ap.add_argument("--backends", default="hashmap,rocksdb")
    ap.add_argument("--pipelines", default="reduce,window")
    ap.add_argument("--interval-ms", type=int, default=1000, help="checkpoint interval (0: no checkpoints)")
    ap.add_argument("--namespace-cache-entries", type=int, default=None,
                    help="state.backend.rocksdb.namespace-cache.max-entries (default: the engine's)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # pipeline,backend,keys: run one configuration, print JSON
    args = ap.parse_args(argv)
    if args.one:
        pipeline, backend, keys = args.one.split(",")
        print(json.dumps(run_one(pipeline, backend, int(keys), args.events, args.interval_ms,
                                 args.namespace_cache_entries)))
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
                    if args.namespace_cache_entries is not None:
                        cmd += ["--namespace-cache-entries", str(args.namespace_cache_entries)]
                    with step(f"{pipeline} {backend} {keys:,} keys, run {i + 1} of {args.repeat}"):
                        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                    if done.returncode != 0:
                        print(f"{pipeline} {backend} {keys:,} keys failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                        break
                    last = json.loads(done.stdout.strip().splitlines()[-1])
                    rates.append(last["events_per_cpu_s"])
                if last is not None:
                    rows.append((last, rates))
    cache = args.namespace_cache_entries if args.namespace_cache_entries is not None else "engine default"
    print(f"events={args.events:,}, parallelism 1, checkpoints every {args.interval_ms} ms (incremental on RocksDB), "
          f"RocksDB block cache 8 MB, namespace cache max entries: {cache}; {args.repeat} run(s): median [min-max]")
    print(f"{'pipeline':<8}{'backend':<9}{'keys':>11}{'ev/CPU-s':>26}{'vs fewest keys':>16}{'outputs':>11}"
          f"{'chk':>5}{'chk ms':>8}{'first MB':>10}{'last MB':>9}{'RSS MB':>8}")
    base: dict[tuple[str, str], float] = {}
    for r, rates in rows:
        rate = statistics.median(rates)
        ratio = rate / base.setdefault((r["pipeline"], r["backend"]), rate)
        spread = f"{rate:,.0f} [{min(rates):,.0f}-{max(rates):,.0f}]"
        chk_ms = "-" if r["checkpoint_ms"] is None else f"{r['checkpoint_ms']:,.0f}"
        print(f"{r['pipeline']:<8}{r['backend']:<9}{r['keys']:>11,}{spread:>26}{ratio:>16.2f}{r['outputs']:>11,}"
              f"{r['checkpoints']:>5}{chk_ms:>8}{_mb(r['first_size']):>10}{_mb(r['last_size']):>9}"
              f"{r['peak_rss_mb']:>8,.0f}")


if __name__ == "__main__":
    main()
