"""Session windows: a user's clicks separated by less than 3 s form one session.

    strom run examples/session_windows.py
"""

from strom.common import Time, WatermarkStrategy
from strom.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from strom.datastream.window import EventTimeSessionWindows

# (user, event time ms)
CLICKS = [
    ("ann", 1_000), ("ann", 2_500), ("bob", 3_000), ("ann", 4_000), ("bob", 4_500),
    ("ann", 9_000), ("ann", 10_000), ("bob", 12_000), ("ann", 8_000), ("bob", 14_900),
]
GAP_MS = 3_000


class Session(ProcessWindowFunction):
    def process(self, key, context, elements):
        clicks = list(elements)
        yield f"{key} session [{context.window().start}, {context.window().end}): {len(clicks)} clicks"


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda c, ts: c[1])
    (
        env.from_collection(CLICKS)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda c: c[0])
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(GAP_MS)))
        .process(Session())
        .print()
    )
    env.execute("session windows")


if __name__ == "__main__":
    main()
