"""Keyed running sums over an endless, rate-limited generated stream: the job of flinkjob-autoscaled.yaml.

    strom run examples/k8s/keyed_sums.py [--rate RECORDS_PER_S] [--work-us MICROSECONDS]

Each record costs `--work-us` of CPU in the `work` step, so raising `--rate` past what one subtask
handles makes that vertex busy and back-pressures the source: what the autoscaler scales up.
"""

import argparse
import time

from strom.common import WatermarkStrategy
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors import DataGeneratorSource

KEYS = 64


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=2000.0, help="records per second the source emits")
    parser.add_argument("--work-us", type=int, default=500, help="CPU microseconds each record costs")
    args = parser.parse_args()
    work_s = args.work_us / 1e6

    def work(record: tuple[int, int]) -> tuple[int, int]:
        deadline = time.perf_counter() + work_s
        while time.perf_counter() < deadline:  # stands for real per-record computation
            pass
        return record

    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = env.from_source(DataGeneratorSource(lambda i: (i % KEYS, i), None, args.rate),
                              WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
    sums = (numbers.key_by(lambda r: r[0]).map(work).uid("work")
            .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("sums"))
    sums.print().uid("print")
    env.execute("keyed-sums")


if __name__ == "__main__":
    main()
