"""Event-time timers: alert when a sensor goes silent (PyFlink KeyedProcessFunction).

Each reading (re)arms a timer 5 s of event time after it; if no newer reading of the
same sensor arrives before the watermark passes the timer, the sensor is reported
silent. Watermarks allow 1 s of out-of-orderness and follow every reading (a
punctuated WatermarkGenerator), so the output does not depend on wall-clock timing.

    strom run examples/event_time_timers.py
"""

from strom.common import Types, WatermarkStrategy
from strom.common.watermark_strategy import TimestampAssigner, Watermark, WatermarkGenerator
from strom.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from strom.datastream.state import ValueStateDescriptor

SILENCE_MS = 5_000

# (sensor, event time ms, temperature)
READINGS = [
    ("s1", 1_000, 20.1), ("s2", 1_200, 18.0), ("s1", 2_500, 20.3), ("s3", 3_000, 25.0),
    ("s2", 2_900, 18.2), ("s1", 4_000, 20.2), ("s3", 9_000, 25.4), ("s1", 9_500, 20.0),
    ("s3", 12_000, 25.1), ("s1", 13_000, 19.8), ("s3", 16_500, 25.3), ("s1", 18_000, 19.9),
]


class ReadingTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class EveryReading(WatermarkGenerator):
    """Watermark = highest reading time - 1 s, emitted after each reading."""

    def __init__(self):
        self.max_ts = None

    def on_event(self, event, event_timestamp, output):
        if self.max_ts is None or event_timestamp > self.max_ts:
            self.max_ts = event_timestamp
            output.emit_watermark(Watermark(event_timestamp - 1_000 - 1))


class SilenceDetector(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.last_seen = runtime_context.get_state(ValueStateDescriptor("last_seen", Types.LONG()))

    def process_element(self, value, ctx):
        previous = self.last_seen.value()
        if previous is not None and value[1] <= previous:
            return  # an older reading that arrived late (out of order) changes nothing
        if previous is not None:
            ctx.timer_service().delete_event_time_timer(previous + SILENCE_MS)
        self.last_seen.update(value[1])
        ctx.timer_service().register_event_time_timer(value[1] + SILENCE_MS)

    def on_timer(self, timestamp, ctx):
        yield f"sensor {ctx.get_current_key()} silent since {self.last_seen.value()} ms (timer at {timestamp} ms)"


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_generator(lambda ctx: EveryReading()).with_timestamp_assigner(ReadingTimestamp())
    (
        env.from_collection(READINGS)
        .assign_timestamps_and_watermarks(strategy)
        .set_parallelism(1)
        .key_by(lambda r: r[0])
        .process(SilenceDetector(), output_type=Types.STRING())
        .print()
    )
    env.execute("silent sensors")


if __name__ == "__main__":
    main()
