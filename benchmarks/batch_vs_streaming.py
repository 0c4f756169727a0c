"""BATCH mode on local Spark vs the streaming engine, on the same generated input file.

    python -m benchmarks.batch_vs_streaming [--size 50MB] [--parallelism 2] [--spark-master local[*]]

Generates `--size` of CSV lines `key,value,timestamp` (default 50 MB; `--size 1GB` for the full
run), then runs one program twice: file source -> parse -> key_by -> tumbling 60 s event-time
windows -> count and sum per key and window -> file sink. STREAMING runs in-process on the engine
(threads), BATCH on Spark (`local[*]` unless --spark-master). Prints each runtime (Spark's startup
counted apart), the ratio, and whether both wrote the same results. A benchmark, not a test.

Figures (2-core VM shared with other engineers' work, parallelism 2, `local[*]`, one run each, both modes
in the same run; every run wrote identical results in both modes):

    --size 100MB (5,959,054 lines; 991,236 rows)       STREAMING  BATCH    BATCH/STREAMING
      per-record shuffle (c4c8206), quiet machine        24.4 s     42.5 s   1.74
      chunked shuffle (400828d), quiet machine           25.7 s     19.6 s   0.76
      per-record shuffle (c4c8206), others' tests busy   31.4 s    114.0 s   3.63
      chunked shuffle (d768ac0), others' tests busy      29.9 s     28.4 s   0.95
    --size 1GB (57,757,021 lines; 9,603,080 rows)
      chunked shuffle (400828d)                         258.1 s    153.4 s   0.59  (+ 6.9 s Spark startup)
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import shutil
import tempfile
import time

from strom.common.configuration import Configuration
from strom.common.time import Duration
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import AggregateFunction, RuntimeExecutionMode, SinkFunction, StreamExecutionEnvironment
from strom.datastream.connectors.file_system import FileSource, StreamFormat
from strom.datastream.window import TumblingEventTimeWindows

from benchmarks.progress import step

KEYS = 1000
WINDOW_MS = 60_000


def parse_size(text: str) -> int:
    units = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
    t = text.strip().upper()
    for unit, factor in units.items():
        if t.endswith(unit):
            return int(float(t[: -len(unit)]) * factor)
    return int(t)


def generate(directory: str, size: int, files: int) -> int:
    """CSV files totalling about `size` bytes; timestamps ascend with jitter. Returns the line count."""
    rng = random.Random(42)
    per_file = size // files
    lines = 0
    ts = 0
    for f in range(files):
        written = 0
        with open(os.path.join(directory, f"part-{f}.csv"), "w") as out:
            chunk = []
            while written < per_file:
                ts += rng.randint(0, 20)
                line = f"k{rng.randrange(KEYS)},{rng.randint(1, 1000)},{ts}\n"
                chunk.append(line)
                written += len(line)
                if len(chunk) >= 10_000:
                    out.write("".join(chunk))
                    lines += len(chunk)
                    chunk = []
            out.write("".join(chunk))
            lines += len(chunk)
    return lines


def parse(line: str) -> tuple[str, int, int]:
    k, v, t = line.split(",")
    return (k, int(v), int(t))


class CountAndSum(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + 1, acc[1] + value[1])

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class LinesToDirectory(SinkFunction):
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def open(self, runtime_context) -> None:
        i = runtime_context.get_index_of_this_subtask()
        self.file = open(os.path.join(self.directory, f"out-{i}-{os.getpid()}-{id(self)}.txt"), "w")  # noqa: SIM115

    def invoke(self, value, context) -> None:
        self.file.write(f"{value}\n")

    def close(self) -> None:
        self.file.close()


def run(mode: RuntimeExecutionMode, input_dir: str, output_dir: str, parallelism: int, conf: Configuration) -> float:
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_runtime_mode(mode)
    env.set_parallelism(parallelism)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)).with_timestamp_assigner(
        lambda e, _ts: e[2]
    )
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), input_dir).build()
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "csv")
        .map(parse)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(WINDOW_MS)))
        .aggregate(CountAndSum(), window_function=_WithKeyAndWindow())
        .add_sink(LinesToDirectory(output_dir))
    )
    start = time.perf_counter()
    env.execute(f"batch_vs_streaming {mode.name}")
    return time.perf_counter() - start


from strom.datastream.window import ProcessWindowFunction  # noqa: E402


class _WithKeyAndWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        for count, total in elements:
            yield (key, context.window().start, count, total)


def results(directory: str) -> list[str]:
    out: list[str] = []
    for path in glob.glob(os.path.join(directory, "*.txt")):
        with open(path) as f:
            out += f.read().splitlines()
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="50MB", help="input size, e.g. 50MB, 1GB (default 50MB)")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--spark-master", default="local[*]")
    args = parser.parse_args()
    size = parse_size(args.size)
    work = tempfile.mkdtemp(prefix="strom-bench-")
    try:
        input_dir = os.path.join(work, "input")
        os.makedirs(input_dir)
        t0 = time.perf_counter()
        lines = generate(input_dir, size, args.files)
        print(f"input: {size / (1 << 20):.0f} MB, {lines} lines in {args.files} files "
              f"(generated in {time.perf_counter() - t0:.1f} s); parallelism {args.parallelism}")

        conf = Configuration({"spark.master": args.spark_master, "spark.ui.enabled": "false"})
        t0 = time.perf_counter()
        from strom.batch.spark_session import spark_session

        spark_session(conf, "batch_vs_streaming").sparkContext.setLogLevel("ERROR")
        startup = time.perf_counter() - t0

        outputs = {}
        times = {}
        for mode in (RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH):
            out = os.path.join(work, mode.name.lower())
            os.makedirs(out)
            with step(f"{mode.name}: {lines:,} records"):
                times[mode.name] = run(mode, input_dir, out, args.parallelism, conf)
            outputs[mode.name] = results(out)
        s, b = times["STREAMING"], times["BATCH"]
        print(f"STREAMING (engine, in-process):  {s:8.1f} s  {lines / s:10.0f} records/s")
        print(f"BATCH (Spark {args.spark_master}): {b:8.1f} s  {lines / b:10.0f} records/s  "
              f"(+ {startup:.1f} s Spark startup, paid once per process)")
        print(f"BATCH / STREAMING runtime ratio: {b / s:.2f}")
        same = outputs["STREAMING"] == outputs["BATCH"]
        print(f"results: {len(outputs['BATCH'])} (key, window) rows; identical in both modes: {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
