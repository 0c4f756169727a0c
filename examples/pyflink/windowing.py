"""Tumbling event-time windows counted by a typed ProcessWindowFunction, as Flink's windowing examples write it."""

from collections.abc import Iterable

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import TimeWindow, TumblingEventTimeWindows

EVENTS = [("hi", 1), ("hi", 2), ("hello", 3), ("hi", 4), ("hi", 5), ("hello", 8), ("hi", 9), ("hi", 15)]
WINDOW_MS = 5


class FirstFieldTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return int(value[1])


class CountPerWindow(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        window = context.window()
        return [(key, window.start, window.end, len([e for e in elements]))]


def windowing():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    ds = env.from_collection(EVENTS, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(FirstFieldTimestamp())
    (
        ds.assign_timestamps_and_watermarks(strategy)
        .key_by(lambda e: e[0], key_type=Types.STRING())
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .process(CountPerWindow(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]))
        .print()
    )
    env.execute("windowing")


if __name__ == "__main__":
    windowing()
