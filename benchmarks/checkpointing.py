"""Cost of checkpointing: the engine-core keyed window pipeline with checkpoints every second
vs without, in one run (in-process executor, hashmap state, file:// storage).

    python -m benchmarks.checkpointing [--events 1000000] [--repeat 2] [--interval-ms 1000]

Prints events/s both ways, the overhead, and how many checkpoints completed (no assertions).
"""

from __future__ import annotations

import argparse
import tempfile
import time

from strom.common.configuration import Configuration
from strom.common.time import Time
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.executors import load_executor

from benchmarks.micro import WINDOW_MS, CountingSink, EventSource, key_fn, loop_b, sum_fn, ts_fn


def run(n: int, interval_ms: int) -> tuple[float, int, int]:
    from strom.datastream.window import TumblingEventTimeWindows

    CountingSink.count = 0
    with tempfile.TemporaryDirectory() as d:
        conf = Configuration({"state.checkpoints.dir": f"file://{d}"})
        env = StreamExecutionEnvironment.get_execution_environment(conf)
        if interval_ms:
            env.enable_checkpointing(interval_ms)
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ts_fn)
        ds = env.from_source(EventSource(n), strategy, "events")
        ds.key_by(key_fn).window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))).reduce(sum_fn).add_sink(
            CountingSink()
        )
        handle = load_executor().start_job(env.get_stream_graph("bench-checkpointing"))
        start = time.perf_counter()
        handle.wait()
        elapsed = time.perf_counter() - start
        job = handle._job
        coordinator = getattr(job, "checkpoint_coordinator", None)
        completed = len(coordinator.completed_ids) if coordinator is not None else 0
        return elapsed, CountingSink.count, completed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--interval-ms", type=int, default=1000)
    args = ap.parse_args(argv)
    expected = loop_b(args.events)
    results = {}
    for label, interval in (("off", 0), (f"every {args.interval_ms} ms", args.interval_ms)):
        runs = [run(args.events, interval) for _ in range(args.repeat)]
        for _, count, _ in runs:
            if count != expected:
                raise SystemExit(f"checkpointing {label}: {count} results, expected {expected}")
        best = min(runs)
        results[label] = best
    (off_t, _, _), (on_t, _, on_cp) = results.values()
    print(f"events={args.events}, best of {args.repeat}, keyed tumbling window pipeline, hashmap state")
    print(f"checkpointing off              {args.events / off_t:>12,.0f} events/s")
    print(f"checkpointing every {args.interval_ms} ms   {args.events / on_t:>12,.0f} events/s  ({on_cp} completed)")
    print(f"overhead: {100 * (on_t / off_t - 1):.1f}%")


if __name__ == "__main__":
    main()
