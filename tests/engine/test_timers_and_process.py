"""Process functions, timers, side outputs, watermarks and failures."""

import pytest
from strom.common.time import MAX_WATERMARK
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import (
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
    TimeDomain,
)
from strom.runtime.local_executor import JobExecutionError
from strom.testing import collect, punctuated_watermarks

# (key, timestamp)
EVENTS = [("a", 1), ("b", 3), ("a", 7), ("c", 4), ("b", 15), ("a", 12), ("c", 30), ("a", 31), ("b", 33)]


class TimeoutAfter(KeyedProcessFunction):
    """Registers an event-time timer 10 ms after each element (twice, to test de-duplication)."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + 10)
        ctx.timer_service().register_event_time_timer(value[1] + 10)
        return None

    def on_timer(self, timestamp, ctx):
        assert ctx.time_domain() == TimeDomain.EVENT_TIME
        yield (ctx.get_current_key(), timestamp, ctx.timestamp(), ctx.timer_service().current_watermark())


def timer_reference(events, bound):
    """Simulate: after each event the watermark is max_ts - bound - 1; timers fire in order."""
    pending = set()
    fired = []
    max_ts = None
    for key, ts in events:
        pending.add((key, ts + 10))
        if max_ts is None or ts > max_ts:
            max_ts = ts
            wm = ts - bound - 1
            for k, t in sorted((p for p in pending if p[1] <= wm), key=lambda p: p[1]):
                fired.append((k, t, wm))
                pending.discard((k, t))
    for k, t in sorted(pending, key=lambda p: p[1]):
        fired.append((k, t, MAX_WATERMARK))
    return fired


@pytest.mark.parametrize("parallelism", [1, 2])
def test_event_time_timers_fire_when_watermark_passes_with_key_and_dedup(parallelism):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    ds = env.from_collection(EVENTS).assign_timestamps_and_watermarks(punctuated_watermarks(2, lambda e: e[1]))
    ds = ds.set_parallelism(1)  # one watermark generator sees the collection's order
    out = collect(ds.key_by(lambda e: e[0]).process(TimeoutAfter()))
    expected = timer_reference(EVENTS, 2)
    # output timestamp of an event-time timer is the timer's timestamp; the watermark seen in on_timer is
    # the one that fired it
    assert sorted((k, t, wm) for k, t, ts, wm in out) == sorted(expected)
    assert all(ts == t for _, t, ts, _ in out)


def test_timer_fires_before_watermark_is_forwarded():
    """Downstream sees the timer output before the watermark that caused it."""

    class Emit(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(value[1])

        def on_timer(self, timestamp, ctx):
            yield timestamp

    class CheckOrder(ProcessFunction):
        def process_element(self, value, ctx):
            # the watermark that fired the timer for `value` must not have reached us yet
            assert ctx.timer_service().current_watermark() < value
            yield value

    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection([("k", t) for t in (5, 10, 20)]).assign_timestamps_and_watermarks(
        punctuated_watermarks(0, lambda e: e[1])
    )
    out = collect(ds.key_by(lambda e: e[0]).process(Emit()).disable_chaining().process(CheckOrder()))
    assert out == [5, 10, 20]


def test_deleted_timer_does_not_fire():
    class DeleteSome(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ts = ctx.timer_service()
            ts.register_event_time_timer(100)
            if value[1] % 2:
                ts.delete_event_time_timer(100)

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key()

    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection([("a", 1), ("b", 2), ("c", 4), ("c", 5)]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, t: e[1])
    )
    out = collect(ds.key_by(lambda e: e[0]).process(DeleteSome()))
    assert sorted(out) == ["b"]  # "a" deleted its timer; "c" registered then deleted (last element odd)


def test_processing_time_timer_fires():
    class Later(KeyedProcessFunction):
        def process_element(self, value, ctx):
            now = ctx.timer_service().current_processing_time()
            ctx.timer_service().register_processing_time_timer(now + 20)

        def on_timer(self, timestamp, ctx):
            assert ctx.time_domain() == TimeDomain.PROCESSING_TIME
            assert ctx.timestamp() is None
            yield ctx.get_current_key()

    # a source that stays open long enough for the timers to fire
    from strom.connectors.base import Boundedness, Source, SourceReader

    class SlowReader(SourceReader):
        def __init__(self):
            self.sent = False
            import time

            self.deadline = time.monotonic() + 0.3

        def poll(self, n):
            import time

            if not self.sent:
                self.sent = True
                return ["x", "y"]
            if time.monotonic() >= self.deadline:
                return None
            time.sleep(0.01)
            return []

    class SlowSource(Source):
        def get_boundedness(self):
            return Boundedness.BOUNDED

        def create_reader(self, ctx):
            return SlowReader()

    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_source(SlowSource(), WatermarkStrategy.no_watermarks(), "slow")
    assert sorted(collect(ds.key_by(lambda v: v).process(Later()))) == ["x", "y"]


def test_side_outputs_split_a_stream():
    odd = OutputTag("odd")

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            if value % 2:
                ctx.output(odd, value * 10)
            else:
                yield value

    env = StreamExecutionEnvironment.get_execution_environment()
    main = env.from_collection(list(range(20))).process(Split())
    side = main.get_side_output(odd)
    env.set_parallelism(1)
    with side.map(lambda v: ("side", v)).execute_and_collect() as it:
        got_side = list(it)
    assert sorted(v for _, v in got_side) == [v * 10 for v in range(20) if v % 2]


def test_side_output_and_main_output_in_one_job():
    late = OutputTag("late")
    seen = []

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            if value < 0:
                ctx.output(late, value)
            else:
                yield value

    from strom.datastream.functions import SinkFunction

    class Keep(SinkFunction):
        def invoke(self, value, context):
            seen.append(value)

    env = StreamExecutionEnvironment.get_execution_environment()
    main = env.from_collection([1, -1, 2, -2, 3]).process(Split())
    main.get_side_output(late).add_sink(Keep())
    main.map(lambda v: v * 100).add_sink(Keep())
    env.execute()
    assert sorted(seen) == [-2, -1, 100, 200, 300]


def test_user_function_error_fails_job_with_user_traceback():
    def explode(v):
        if v == 3:
            raise ValueError("bad record 3")
        return v

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3, 4]).map(explode).print()
    with pytest.raises(JobExecutionError) as info:
        env.execute("boom")
    msg = str(info.value)
    assert "bad record 3" in msg and "in explode" in msg and "Map" in msg


def test_watermark_of_union_is_min_of_inputs():
    class Report(ProcessFunction):
        def process_element(self, value, ctx):
            yield (value, ctx.timer_service().current_watermark())

    env = StreamExecutionEnvironment.get_execution_environment()
    fast = env.from_collection([("f", 100), ("f", 200)]).assign_timestamps_and_watermarks(
        punctuated_watermarks(0, lambda e: e[1])
    )
    slow = env.from_collection([("s", 5)]).assign_timestamps_and_watermarks(punctuated_watermarks(0, lambda e: e[1]))
    out = collect(fast.union(slow).process(Report()))
    # the union's event time never exceeds the slow input's watermark (4) until that input ends
    for (_, _ts), wm in out:
        assert wm <= 199
    assert max(wm for _, wm in out) <= 199


def test_idle_input_does_not_hold_back_watermarks():
    from strom.common.time import Duration

    class Fire(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(value[1])

        def on_timer(self, timestamp, ctx):
            yield timestamp

    # a source with two parallel readers, one of which has no data for a while: idleness lets the
    # other reader's watermark advance, so the timers fire before the (slow) end of input
    import time

    from strom.connectors.base import Boundedness, Source, SourceReader

    fired_at_end = []

    class Reader(SourceReader):
        def __init__(self, idx):
            self.idx = idx
            self.step = 0
            self.deadline = time.monotonic() + 5

        def poll(self, n):
            if self.idx == 1:  # idle reader: nothing until the other side's timers fired
                if fired_at_end or time.monotonic() > self.deadline:
                    return None
                time.sleep(0.01)
                return []
            self.step += 1
            if self.step == 1:
                return [("k", 10), ("k", 20)]
            if fired_at_end or time.monotonic() > self.deadline:
                return None
            time.sleep(0.01)
            return [("k", 100)] if self.step == 2 else []

        def close(self):
            pass

    class Src(Source):
        def get_boundedness(self):
            return Boundedness.BOUNDED

        def create_reader(self, ctx):
            return Reader(ctx.subtask_index)

    from strom.datastream.functions import SinkFunction

    class Mark(SinkFunction):
        def invoke(self, value, context):
            fired_at_end.append(value)

    env = StreamExecutionEnvironment.get_execution_environment()
    env.get_config().set_auto_watermark_interval(20)
    strategy = (
        WatermarkStrategy.for_monotonous_timestamps()
        .with_timestamp_assigner(lambda e, t: e[1])
        .with_idleness(Duration.of_millis(50))
    )
    ds = env.from_source(Src(), strategy, "two-readers").set_parallelism(2)
    ds.key_by(lambda e: e[0]).process(Fire()).set_parallelism(1).add_sink(Mark())
    start = time.monotonic()
    env.execute()
    assert time.monotonic() - start < 4, "idle reader held the watermark back until its deadline"
    assert 10 in fired_at_end and 20 in fired_at_end


def test_pyflink_style_yield_tag_value_goes_to_side_output():
    small = OutputTag("small")

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            if value < 5:
                yield small, value
            else:
                yield value

    env = StreamExecutionEnvironment.get_execution_environment()
    main = env.from_collection(list(range(10))).process(Split())
    side_out = []
    from strom.datastream.functions import SinkFunction

    class Keep(SinkFunction):
        def invoke(self, value, context):
            side_out.append(value)

    main.get_side_output(small).add_sink(Keep())
    assert sorted(collect(main)) == [5, 6, 7, 8, 9]
    assert sorted(side_out) == [0, 1, 2, 3, 4]
