"""Cost of checkpointing: the engine-core keyed window pipeline with checkpoints every second
vs without, in one run (in-process executor, file:// storage), on the hashmap and on the RocksDB
state backend (incremental checkpoints).

    python -m benchmarks.checkpointing [--events 1000000] [--rocksdb-events 100000] [--repeat 2] [--interval-ms 1000]

RocksDB runs take fewer events (`--rocksdb-events`): its windows take the generic window path
(the aligned-window fast path works on the heap's dicts only), tens of times slower; rates compare.

Prints events/s of each configuration, the overheads against checkpointing off on the same backend
and against the hashmap backend, how many checkpoints completed, and the bytes uploaded by a first
and a second incremental RocksDB checkpoint of a few MB of state of which 1% changed (no assertions).
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
from benchmarks.progress import step


def run(n: int, interval_ms: int, backend: str = "hashmap") -> tuple[float, int, int]:
    from strom.datastream.window import TumblingEventTimeWindows

    CountingSink.count = 0
    with tempfile.TemporaryDirectory() as d:
        conf = Configuration(
            {"state.checkpoints.dir": f"file://{d}", "state.backend.type": backend, "state.backend.incremental": True}
        )
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


def incremental_upload_bytes(values: int = 4000, value_bytes: int = 1000) -> tuple[int, int]:
    """Bytes uploaded by the first incremental RocksDB checkpoint of `values` random values, and by
    the second one after 1% of them changed (the backend driven directly, storage file://)."""
    import random

    from strom.common.key_groups import KeyGroupRange
    from strom.datastream.state import ValueStateDescriptor
    from strom.runtime.checkpoint.storage import checkpoint_storage_for
    from strom.runtime.checkpoint.task_snapshots import SharedFileUploader
    from strom.runtime.state.backends import create_keyed_state_backend
    from strom.runtime.state.rocksdb.snapshots import materialize, snapshot_rocksdb

    with tempfile.TemporaryDirectory() as d:
        uploader = SharedFileUploader(checkpoint_storage_for(f"file://{d}"), "bench")
        conf = Configuration({"state.backend.type": "rocksdb", "state.backend.incremental": True})
        be = create_keyed_state_backend(conf, max_parallelism=128, key_group_range=KeyGroupRange(0, 127))
        try:
            state = be.get_state(ValueStateDescriptor("v"))
            rnd = random.Random(1)
            for i in range(values):
                be.set_current_key(i)
                state.update(rnd.randbytes(value_bytes))
            first = materialize(snapshot_rocksdb(be, None, operator_uid="bench"), uploader)
            for i in range(0, values, 100):
                be.set_current_key(i)
                state.update(b"changed")
            second = materialize(snapshot_rocksdb(be, None, operator_uid="bench"), uploader)
        finally:
            be.close()
        return first.uploaded_bytes, second.uploaded_bytes


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rocksdb-events", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--interval-ms", type=int, default=1000)
    args = ap.parse_args(argv)
    every = f"every {args.interval_ms} ms"
    configs = [
        ("hashmap", "off", 0),
        ("hashmap", every, args.interval_ms),
        ("rocksdb", "off", 0),
        ("rocksdb", every, args.interval_ms),
    ]
    results: dict[tuple[str, str], tuple[float, int, int]] = {}
    events = {"hashmap": args.events, "rocksdb": min(args.events, args.rocksdb_events)}
    for backend, label, interval in configs:
        with step(f"{label}: {args.repeat} runs"):
            runs = [run(events[backend], interval, backend) for _ in range(args.repeat)]
        expected = loop_b(events[backend])
        for _, count, _ in runs:
            if count != expected:
                raise SystemExit(f"{backend}, checkpointing {label}: {count} results, expected {expected}")
        results[(backend, label)] = min(runs)
    off_rate = args.events / results[("hashmap", "off")][0]
    print(
        f"events: hashmap {events['hashmap']}, rocksdb {events['rocksdb']} (incremental); best of {args.repeat}; "
        "keyed tumbling window pipeline, file:// checkpoints"
    )
    print(f"{'state backend':<14}{'checkpointing':<22}{'events/s':>12}  {'vs off, same backend':>22}  "
          f"{'vs hashmap off':>14}  completed")
    for backend, label, _ in configs:
        t, _, completed = results[(backend, label)]
        same_off = results[(backend, "off")][0]
        rate = events[backend] / t
        print(
            f"{backend:<14}{label:<22}{rate:>12,.0f}  {100 * (t / same_off - 1):>+21.1f}%  "
            f"{rate / off_rate:>13.3f}x  {completed if label != 'off' else '-'}"
        )
    first, second = incremental_upload_bytes()
    print(
        f"RocksDB incremental: first checkpoint uploaded {first:,} bytes, the second after a 1% state change "
        f"{second:,} bytes ({second / first:.4f} of the first)"
    )


if __name__ == "__main__":
    main()
