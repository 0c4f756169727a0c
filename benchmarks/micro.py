"""Micro benchmark of the engine core against a plain-Python loop, in one run.

N events (key = i % 1000, event time = i ms, value = 1):
  (a) map -> filter (keeps 1/3) -> sink
  (b) key_by -> 1 s tumbling event-time window -> reduce (sum) -> sink
Each pipeline runs on Strom at parallelism 1 and as a plain-Python loop that makes one
function call per operator per record (the same user functions). The ratio
strom / loop is what to read: absolute figures vary with the machine's load.
(b) is the state-heavy one: `--state-backend rocksdb` runs it on RocksDB (the aligned-window
fast path over RocksDB's namespace cache); `--state-backend hashmap,rocksdb` runs it on each in
the same run and prints each backend's time relative to the first. BENCH_CPU=1 measures CPU
seconds of the process instead of wall-clock time (steadier on a loaded machine).

    python -m benchmarks.micro [--events 1000000] [--repeat 3] [--state-backend hashmap|rocksdb|hashmap,rocksdb]
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from typing import Any

from strom.common.configuration import Configuration
from strom.common.watermark_strategy import WatermarkStrategy
from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.functions import SinkFunction

from benchmarks.progress import step

WINDOW_MS = 1000


def make_event(i: int) -> tuple[int, int, int]:
    return (i % 1000, i, 1)


def map_fn(e: tuple[int, int, int]) -> tuple[int, int, int]:
    return (e[0], e[1], e[2] * 2)


def filter_fn(e: tuple[int, int, int]) -> bool:
    return e[1] % 3 == 0


def key_fn(e: tuple[int, int, int]) -> int:
    return e[0]


def ts_fn(e: tuple[int, int, int], _record_ts: int) -> int:
    return e[1]


def sum_fn(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return (a[0], a[1], a[2] + b[2])


class GeneratorReader(SourceReader):
    """make(i) for indexes lo, lo + step, ... below hi."""

    def __init__(self, lo: int, hi: int, step: int = 1, make: Any = make_event) -> None:
        self.next, self.hi, self.step, self.make = lo, hi, step, make

    def poll(self, max_records: int) -> list[Any] | None:
        if self.next >= self.hi:
            return None
        stop = min(self.next + max_records * self.step, self.hi)
        make = self.make
        batch = [make(i) for i in range(self.next, stop, self.step)]
        self.next = stop
        return batch


class EventSource(Source):
    """Calls make_event once per index, like Flink's DataGeneratorSource."""

    name = "Events"

    def __init__(self, n: int) -> None:
        self.n = n

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        # Subtask i of p reads indexes i, i + p, ...: parallel readers advance through event time
        # together, as partitions of a log do. Contiguous ranges would put subtask 1 n/2 ms of event
        # time ahead of subtask 0, and the keyed windows downstream would hold half the job's windows
        # until subtask 0 caught up (the watermark is the minimum of the inputs).
        p, i = context.parallelism, context.subtask_index
        return GeneratorReader(i, self.n, p)


class CountingSink(SinkFunction):
    """Counts per subtask, adds to the class total when the input ends. (Incrementing a class
    attribute per record would bump the class's version tag and cost more than the loop's counter.)"""

    count = 0
    _lock = threading.Lock()

    def open(self, runtime_context: Any) -> None:
        self.n = 0

    def invoke(self, value: Any, context: Any) -> None:
        self.n += 1

    def finish(self) -> None:
        with CountingSink._lock:
            CountingSink.count += self.n


# -- plain-Python references ------------------------------------------------------------------------
def loop_a(n: int) -> int:
    count = 0

    def sink(v: Any) -> None:
        nonlocal count
        count += 1

    for i in range(n):
        e = make_event(i)
        m = map_fn(e)
        if filter_fn(m):
            sink(m)
    return count


def loop_b(n: int) -> int:
    count = 0

    def sink(v: Any) -> None:
        nonlocal count
        count += 1

    windows: dict[int, dict[int, tuple[int, int, int]]] = {}
    fired_until = 0
    for i in range(n):
        e = make_event(i)
        ts = ts_fn(e, 0)
        k = key_fn(e)
        start = ts - ts % WINDOW_MS
        w = windows.get(start)
        if w is None:
            w = windows[start] = {}
        acc = w.get(k)
        w[k] = e if acc is None else sum_fn(acc, e)
        # watermark = ts - 1: fire every window whose end passed
        while fired_until + WINDOW_MS <= ts:
            for v in windows.pop(fired_until, {}).values():
                sink(v)
            fired_until += WINDOW_MS
    for start in sorted(windows):
        for v in windows[start].values():
            sink(v)
    return count


# -- strom --------------------------------------------------------------------------------------------
def _environment(state_backend: str) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment(Configuration({"state.backend.type": state_backend}))


def strom_a(n: int, parallelism: int, state_backend: str = "hashmap") -> int:
    CountingSink.count = 0
    env = _environment(state_backend)
    env.set_parallelism(parallelism)
    ds = env.from_source(EventSource(n), WatermarkStrategy.no_watermarks(), "events")
    ds.map(map_fn).filter(filter_fn).add_sink(CountingSink())
    env.execute("bench-a")
    return CountingSink.count


def strom_b(n: int, parallelism: int, state_backend: str = "hashmap") -> int:
    from strom.common.time import Time
    from strom.datastream.window import TumblingEventTimeWindows

    CountingSink.count = 0
    env = _environment(state_backend)
    env.set_parallelism(parallelism)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ts_fn)
    ds = env.from_source(EventSource(n), strategy, "events")
    ds.key_by(key_fn).window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))).reduce(sum_fn).add_sink(
        CountingSink()
    )
    env.execute("bench-b")
    return CountingSink.count


# BENCH_CPU=1: CPU seconds of the process (all its threads), less sensitive to other users of the machine
_CLOCK = time.process_time if os.environ.get("BENCH_CPU") == "1" else time.perf_counter


def timed(fn: Any, *args: Any) -> tuple[float, int]:
    start = _CLOCK()
    out = fn(*args)
    return _CLOCK() - start, out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs for each figure")
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--only", choices=["a", "b"], default=None)
    ap.add_argument("--state-backend", default="hashmap", help="state.backend.type of (b): hashmap, rocksdb, or "
                    "a comma-separated list to compare in one run")
    args = ap.parse_args(argv)
    backends = args.state_backend.split(",")
    for b in backends:
        if b not in ("hashmap", "rocksdb"):
            ap.error(f"invalid --state-backend {b!r}: expected hashmap, rocksdb or a comma-separated list of them")
    n = args.events
    clock = "CPU" if _CLOCK is time.process_time else "wall-clock"
    print(f"events={n} parallelism={args.parallelism} state.backend.type={args.state_backend} best of {args.repeat}, "
          f"{clock} time")
    print(f"{'pipeline':<44}{'loop ev/s':>14}{'strom ev/s':>14}{'strom/loop':>12}{'vs first':>10}")
    pipelines = {
        "a": ("(a) map -> filter", loop_a, strom_a),
        "b": ("(b) key_by -> tumbling 1s -> sum", loop_b, strom_b),
    }
    for key, (label, loop, strom) in pipelines.items():
        if args.only and key != args.only:
            continue
        best_loop = min(timed(loop, n)[0] for _ in range(args.repeat))
        expected = loop(n)
        first = None
        for backend in backends if key == "b" else backends[:1]:
            name = f"{label} [{backend}]" if key == "b" and len(backends) > 1 else label
            with step(f"{name}: strom, best of {args.repeat}"):
                runs = [timed(strom, n, args.parallelism, backend) for _ in range(args.repeat)]
            best_strom = min(t for t, _ in runs)
            if any(c != expected for _, c in runs):
                raise SystemExit(f"{name}: strom produced {[c for _, c in runs]} records, expected {expected}")
            first = first or best_strom
            print(f"{name:<44}{n / best_loop:>14,.0f}{n / best_strom:>14,.0f}{best_loop / best_strom:>12.2f}"
                  f"{best_strom / first:>9.2f}x")


if __name__ == "__main__":
    main()
