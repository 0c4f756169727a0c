"""Keyed value state with a TTL: a running sum per key, printed as (key,sum)."""

from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import StateTtlConfig, ValueStateDescriptor

READINGS = [("sensor-1", 3), ("sensor-2", 5), ("sensor-1", 4), ("sensor-3", 1), ("sensor-2", 10), ("sensor-1", 2)]


class RunningSum(KeyedProcessFunction):
    def __init__(self):
        self.total = None

    def open(self, runtime_context: RuntimeContext):
        descriptor = ValueStateDescriptor("total", Types.LONG())
        ttl = (
            StateTtlConfig.new_builder(Time.minutes(10))
            .set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)
            .disable_cleanup_in_background()
            .build()
        )
        descriptor.enable_time_to_live(ttl)
        self.total = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx: KeyedProcessFunction.Context):
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        yield ctx.get_current_key(), total


def state_access():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    ds = env.from_collection(READINGS, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    ds.key_by(lambda r: r[0]).process(RunningSum(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()])).print()
    env.execute("state_access")


if __name__ == "__main__":
    state_access()
