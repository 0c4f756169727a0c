"""Event-time timers: what each key owes when its payments fall due, DELAY_MS after they were made."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment, TimeDomain
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import MapStateDescriptor

PAYMENTS = [
    (1_000, "alice", 20),
    (2_000, "bob", 5),
    (3_500, "alice", 7),
    (9_000, "carol", 12),
    (9_000, "carol", 8),
    (9_500, "bob", 1),
    (16_000, "alice", 3),
]
DELAY_MS = 5_000


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[0]


class DuePayments(KeyedProcessFunction):
    """A payment is due DELAY_MS after it was made; a timer per due time reports what the key owes then."""

    def open(self, runtime_context: RuntimeContext):
        self.due = runtime_context.get_map_state(MapStateDescriptor("due", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx: KeyedProcessFunction.Context):
        due_at = ctx.timestamp() + DELAY_MS
        self.due.put(due_at, (self.due.get(due_at) or 0) + value[2])
        ctx.timer_service().register_event_time_timer(due_at)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext):
        domain = "event time" if ctx.time_domain() == TimeDomain.EVENT_TIME else "processing time"
        yield f"{ctx.get_current_key()} owes {self.due.get(timestamp)} at {timestamp} ({domain})"
        self.due.remove(timestamp)


def event_time_timer():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    ds = env.from_collection(PAYMENTS, type_info=Types.TUPLE([Types.LONG(), Types.STRING(), Types.INT()]))
    strategy = (
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(EventTime())
    )
    (
        ds.assign_timestamps_and_watermarks(strategy)
        .key_by(lambda p: p[1], key_type=Types.STRING())
        .process(DuePayments(), output_type=Types.STRING())
        .print()
    )
    env.execute("event_time_timer")


if __name__ == "__main__":
    event_time_timer()
