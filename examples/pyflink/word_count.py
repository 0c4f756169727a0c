"""Word count: running counts per word, printed as PyFlink prints Types.TUPLE records, e.g. (flink,2)."""

from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

TEXT = [
    "to stream or to batch",
    "that is the question stream",
    "whether tis nobler to stream",
]


def split(line):
    yield from line.split()


def word_count():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(1)
    ds = env.from_collection(TEXT)
    ds = (
        ds.flat_map(split)
        .map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    ds.print()
    env.execute("word_count")


if __name__ == "__main__":
    word_count()
