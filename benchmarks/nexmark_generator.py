"""The Nexmark event generator alone: events per CPU-second of drawing events from NexmarkReader.

Each run is a fresh process (so the string pools, imports and the collector's state start alike) that
builds the readers of `--parallelism` subtasks, then polls every event in slices of `--poll` as the
source task does, and reports events / CPU-seconds of the polling only. With `--against DIR` the same
runs alternate with the strom of another tree (e.g. an older commit: `git archive <commit> | tar -x -C DIR`),
so that both see the same load on a shared machine; medians are printed.

    python -m benchmarks.nexmark_generator [--events 1000000] [--parallelism 1] [--repeat 3] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.progress import step


def measure(events: int, parallelism: int, poll: int) -> float:
    """Events per CPU-second of polling every event of `parallelism` subtasks, in this process."""
    from strom.connectors.nexmark import NexmarkConfig, NexmarkReader

    config = NexmarkConfig(events=events)
    readers = [NexmarkReader(config, subtask=i, parallelism=parallelism) for i in range(parallelism)]
    drawn = 0
    start = time.process_time()
    for reader in readers:
        while (got := reader.poll(poll)) is not None:
            drawn += len(got)
    seconds = time.process_time() - start
    if drawn != events:
        raise SystemExit(f"nexmark_generator: drew {drawn} events, expected {events}")
    return drawn / seconds


def run_in(tree: Path | None, args: argparse.Namespace) -> float:
    """One measurement in a fresh process importing strom from `tree` (None: this checkout)."""
    # this module always comes from this checkout; only `strom` differs between the trees
    here = Path(__file__).resolve().parent.parent
    paths = ([str(tree / "runtime-image")] if tree is not None else []) + [str(here)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    code = (f"import json, benchmarks.nexmark_generator as b, strom; "
            f"print(json.dumps([b.measure({args.events}, {args.parallelism}, {args.poll}), strom.__file__]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    rate, strom_file = json.loads(out.stdout.strip().splitlines()[-1])
    if tree is not None and not strom_file.startswith(str(tree)):
        raise SystemExit(f"--against {tree}: strom was imported from {strom_file}, not from that tree")
    return float(rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--parallelism", type=int, default=1, help="subtasks, drawn one after the other")
    parser.add_argument("--poll", type=int, default=1000, help="events per poll, as a source task asks")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", type=Path, help="a tree (with runtime-image/) to compare with, alternating")
    args = parser.parse_args()
    trees: list[tuple[str, Path | None]] = [("this", None)]
    if args.against is not None:
        if not (args.against / "runtime-image" / "strom").is_dir():
            raise SystemExit(f"--against {args.against}: no runtime-image/strom there; give a tree of this repository")
        trees.append((str(args.against), args.against.resolve()))
    rates: dict[str, list[float]] = {name: [] for name, _ in trees}
    for run in range(args.repeat):
        for name, tree in trees:
            with step(f"generator of {name}, run {run + 1} of {args.repeat}"):
                rates[name].append(run_in(tree, args))
    print(f"events={args.events:,} parallelism={args.parallelism} poll={args.poll}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    first = statistics.median(rates["this"])
    for name, values in rates.items():
        median = statistics.median(values)
        runs = ", ".join(f"{v:,.0f}" for v in values)
        print(f"{name:>24}: {median:>12,.0f} events/CPU-s (median of {runs}) x{median / first:.2f}")


if __name__ == "__main__":
    main()
