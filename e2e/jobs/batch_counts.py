"""Per-key counts of a generated bounded input: the batch FlinkJob of the e2e batch scenario.

    batch_counts.py OUT_DIR [--records N] [--keys K] [--fail-on I]

A bounded data generator emits the records 0..N-1; record i has key `k<i % K>`; a keyed sum
counts the records per key and a FileSink writes one `key count` line per key into OUT_DIR. The
program does not pick its runtime mode: a batch FlinkJob runs it with `--runtime-mode batch`
(Spark), where a keyed rolling sum emits each key's final value, as Flink's BATCH mode does. The
output is checkable by a plain-Python reference: key `k<j>` counts the i < N with i % K == j.

`--fail-on I` makes the record I raise a ValueError inside the job (on a Spark executor, in the
map function), so a scenario sees a user's error travel to the FlinkJob's status.
"""

from __future__ import annotations

import argparse
import sys

from strom.common import Encoder, WatermarkStrategy
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors import FileSink
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.connectors.file_system import BucketAssigner

POISON_MESSAGE = "record {index} is poisoned (batch_counts.py --fail-on {index})"


class PoisonedRecord(ValueError):
    """Raised for the record named by --fail-on: the user's error of the failing scenario."""


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="batch_counts.py")
    p.add_argument("out")
    p.add_argument("--records", type=int, default=10_000)
    p.add_argument("--keys", type=int, default=7)
    p.add_argument("--fail-on", type=int, default=None)
    args = p.parse_args(argv)
    keys, fail_on = args.keys, args.fail_on

    def keyed(i: int) -> tuple[str, int]:
        if i == fail_on:
            raise PoisonedRecord(POISON_MESSAGE.format(index=i))
        return f"k{i % keys}", 1

    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = env.from_source(DataGeneratorSource(lambda i: i, args.records), WatermarkStrategy.no_watermarks(),
                              "numbers")
    counts = numbers.map(keyed).name("keyed").key_by(lambda r: r[0]).sum(1).name("counts")
    sink = (FileSink.for_row_format(args.out, Encoder.simple_string_encoder())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
    counts.map(lambda r: f"{r[0]} {r[1]}").sink_to(sink).name("sink")
    env.execute("batch counts")


if __name__ == "__main__":
    main(sys.argv[1:])
