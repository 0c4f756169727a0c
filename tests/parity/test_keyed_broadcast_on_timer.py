"""KeyedBroadcastProcessFunction.OnTimerContext (issue 18).

PyFlink: `KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT])`
with `OnTimerContext(ReadOnlyContext)`: "Information available in an invocation of on_timer" --
`time_domain()` "The TimeDomain of the firing timer", `get_current_key()` "the key of the firing
timer", plus read-only broadcast state.
"""

from __future__ import annotations

from typing import Any

from strom.common import Types, WatermarkStrategy
from strom.common.watermark_strategy import TimestampAssigner
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.functions import KeyedBroadcastProcessFunction, TimeDomain
from strom.datastream.state import MapStateDescriptor

LABELS = MapStateDescriptor("labels", Types.STRING(), Types.STRING())
EVENTS = [("a", 1), ("b", 5), ("a", 7)]


class LabelOnTimer(KeyedBroadcastProcessFunction[str, tuple, tuple, str]):
    def process_element(self, value: tuple, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext) -> None:
        ctx.timer_service().register_event_time_timer(value[1] + 100)

    def process_broadcast_element(self, value: tuple, ctx: Any) -> None:
        ctx.get_broadcast_state(LABELS).put(value[0], value[1])

    def on_timer(self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext) -> Any:
        label = ctx.get_broadcast_state(LABELS).get(ctx.get_current_key())
        yield f"{ctx.get_current_key()}@{timestamp}:{label}:{ctx.time_domain() == TimeDomain.EVENT_TIME}"


class Ts(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value[1]


def test_on_timer_context_gives_the_key_the_time_domain_and_broadcast_state() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    rules = env.from_collection([("a", "alpha"), ("b", "beta")]).broadcast(LABELS)
    events = env.from_collection(EVENTS).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts())
    )
    out = events.key_by(lambda e: e[0]).connect(rules).process(LabelOnTimer(), Types.STRING())
    expected = sorted(f"{k}@{t + 100}:{ {'a': 'alpha', 'b': 'beta'}[k]}:True" for k, t in EVENTS)
    assert sorted(out.execute_and_collect()) == expected
