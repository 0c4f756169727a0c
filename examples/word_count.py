"""Word count: the classic first streaming job, written exactly as in PyFlink.

    strom run examples/word_count.py [--input FILE] [--output DIR]

Without --input it counts the words of a built-in text and prints the running counts.
"""

import argparse
import sys

from strom.common import Types, WatermarkStrategy
from strom.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

WORDS = [
    "To be, or not to be,--that is the question:--",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune",
    "Or to take arms against a sea of troubles,",
    "And by opposing end them?--To die,--to sleep,--",
    "No more; and by a sleep to say we end",
    "The heartache, and the thousand natural shocks",
    "That flesh is heir to,--'tis a consummation",
    "Devoutly to be wish'd. To die,--to sleep;--",
    "To sleep! perchance to dream:--ay, there's the rub;",
]


def split(line: str):
    yield from line.lower().replace(",", " ").replace("-", " ").replace(";", " ").split()


def word_count(input_path: str | None, output_path: str | None) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)

    if input_path is not None:
        from strom.datastream.connectors.file_system import FileSource, StreamFormat

        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), input_path).build()
        ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "file_source")
    else:
        ds = env.from_collection(WORDS)

    counts = (
        ds.flat_map(split)
        .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda t: t[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )

    if output_path is not None:
        from strom.common import Encoder
        from strom.datastream.connectors.file_system import FileSink, OutputFileConfig

        counts.sink_to(
            FileSink.for_row_format(output_path, Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("counts").with_part_suffix(".txt").build())
            .build()
        )
    else:
        counts.print()

    env.execute("word_count")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", dest="input", required=False)
    parser.add_argument("--output", dest="output", required=False)
    args, _ = parser.parse_known_args(sys.argv[1:])
    word_count(args.input, args.output)
