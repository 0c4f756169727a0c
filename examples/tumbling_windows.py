"""Tumbling event-time windows: page views per user per 10 seconds.

    strom run examples/tumbling_windows.py
"""

from strom.common import Duration, Time, Types, WatermarkStrategy
from strom.common.watermark_strategy import TimestampAssigner
from strom.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from strom.datastream.window import TumblingEventTimeWindows

# (user, page, event time ms)
VIEWS = [
    ("ann", "/home", 1_000), ("bob", "/home", 2_000), ("ann", "/cart", 4_000),
    ("ann", "/pay", 9_500), ("bob", "/help", 12_000), ("ann", "/home", 13_000),
    ("cid", "/home", 14_000), ("bob", "/home", 8_000), ("ann", "/cart", 21_000),
    ("cid", "/cart", 25_000), ("bob", "/pay", 29_999), ("cid", "/pay", 30_000),
]
WINDOW_MS = 10_000


class ViewTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class CountViews(ProcessWindowFunction):
    """Receives the pre-aggregated (user, count) of a window and adds the window's bounds."""

    def process(self, key, context, elements):
        for _, n in elements:
            yield f"{key} [{context.window().start}, {context.window().end}): {n} views"


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)).with_timestamp_assigner(
        ViewTime()
    )
    (
        env.from_collection(VIEWS)
        .assign_timestamps_and_watermarks(strategy)
        .map(lambda v: (v[0], 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=CountViews())
        .print()
    )
    env.execute("tumbling windows")


if __name__ == "__main__":
    main()
