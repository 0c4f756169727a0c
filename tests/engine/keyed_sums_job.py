"""A keyed job for cluster tests: `keyed_sums_job.py OUT_DIR COUNT [PARALLELISM]`.

Numbers 0..COUNT-1 from a parallel generator, keyed by `i % 13`, summed per key with reduce (one
running sum out per record), written by a FileSink as "key sum" lines under OUT_DIR. At parallelism 2
on two TaskManagers, about half the records cross from one TaskManager to the other at key_by.
"""

import sys

from strom.common import Encoder, WatermarkStrategy
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors import DataGeneratorSource
from strom.datastream.connectors.file_system import BucketAssigner, FileSink

out_dir, count = sys.argv[1], int(sys.argv[2])
parallelism = int(sys.argv[3]) if len(sys.argv) > 3 else 2

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(parallelism)
numbers = env.from_source(
    DataGeneratorSource(lambda i: (i % 13, i), count, None), WatermarkStrategy.no_watermarks(), "numbers"
)
sums = numbers.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
sink = (
    FileSink.for_row_format(out_dir, Encoder.simple_string_encoder())
    .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
    .build()
)
sums.map(lambda s: f"{s[0]} {s[1]}").sink_to(sink)
env.execute("keyed sums")
