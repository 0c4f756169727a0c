"""Sliding event-time windows: average temperature per sensor over 10 s, every 5 s.

An AggregateFunction keeps (sum, count) per window incrementally.

    strom run examples/sliding_windows.py
"""

from strom.common import Duration, Time, WatermarkStrategy
from strom.datastream import AggregateFunction, ProcessWindowFunction, StreamExecutionEnvironment
from strom.datastream.window import SlidingEventTimeWindows

# (sensor, event time ms, temperature)
READINGS = [
    ("s1", 1_000, 20.0), ("s2", 1_500, 15.0), ("s1", 6_000, 22.0), ("s2", 7_000, 17.0),
    ("s1", 11_000, 24.0), ("s1", 14_000, 26.0), ("s2", 16_000, 19.0), ("s1", 19_000, 21.0),
]
SIZE_MS, SLIDE_MS = 10_000, 5_000


class Average(AggregateFunction):
    def create_accumulator(self):
        return (0.0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value[2], accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a, acc_b):
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


class WithWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        for avg in elements:
            yield f"{key} [{context.window().start}, {context.window().end}): avg {avg:.2f}"


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2)).with_timestamp_assigner(
        lambda r, ts: r[1]
    )
    (
        env.from_collection(READINGS)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda r: r[0])
        .window(SlidingEventTimeWindows.of(Time.milliseconds(SIZE_MS), Time.milliseconds(SLIDE_MS)))
        .aggregate(Average(), window_function=WithWindow())
        .print()
    )
    env.execute("sliding windows")


if __name__ == "__main__":
    main()
