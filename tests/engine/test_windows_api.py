"""Window API: assigner arithmetic, validation and misuse errors, and the aggregate fast path."""

import pytest
from strom.common import Duration, Time
from strom.datastream import AggregateFunction, StreamExecutionEnvironment, WindowedStream
from strom.datastream.window import (
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    SlidingEventTimeWindows,
    TimeWindow,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from strom.testing import collect, punctuated_watermarks


def test_tumbling_and_sliding_assign_flinks_windows():
    assert TumblingEventTimeWindows.of(Time.seconds(5)).assign_windows(None, 7_300, None) == [TimeWindow(5_000, 10_000)]
    assert TumblingEventTimeWindows.of(Duration.of_seconds(5), Duration.of_seconds(1)).assign_windows(
        None, 500, None
    ) == [TimeWindow(-4_000, 1_000)]
    # latest start first, every window with start > ts - size
    assert SlidingEventTimeWindows.of(10, 4).assign_windows(None, 13, None) == [
        TimeWindow(12, 22), TimeWindow(8, 18), TimeWindow(4, 14)
    ]
    assert EventTimeSessionWindows.with_gap(3).assign_windows(None, 8, None) == [TimeWindow(8, 11)]


def test_invalid_window_parameters_are_rejected():
    with pytest.raises(ValueError, match="abs\\(offset\\) < size"):
        TumblingEventTimeWindows.of(10, 10)
    with pytest.raises(ValueError, match="size must be positive"):
        TumblingProcessingTimeWindows.of(0)
    with pytest.raises(ValueError, match="session gap must be positive"):
        EventTimeSessionWindows.with_gap(Duration.of_millis(0))
    with pytest.raises(TypeError, match="expected Duration"):
        SlidingEventTimeWindows.of("5 s", 1)


def test_windowed_stream_misuse_errors():
    class NoMerge(Trigger):
        def on_element(self, element, timestamp, window, ctx):
            return TriggerResult.CONTINUE

        def on_event_time(self, time, window, ctx):
            return TriggerResult.CONTINUE

        def on_processing_time(self, time, window, ctx):
            return TriggerResult.CONTINUE

        def clear(self, window, ctx):
            pass

    env = StreamExecutionEnvironment.get_execution_environment()
    keyed = env.from_collection([("a", 1)]).key_by(lambda e: e[0])
    windowed = keyed.window(EventTimeSessionWindows.with_gap(5))
    assert isinstance(windowed, WindowedStream)
    with pytest.raises(TypeError, match="does not support merging"):
        windowed.trigger(NoMerge())
    windowed.trigger(CountTrigger.of(2))
    with pytest.raises(ValueError, match="cannot be negative"):
        windowed.allowed_lateness(-1)
    with pytest.raises(TypeError, match="expects a WindowAssigner"):
        keyed.window(10)
    with pytest.raises(TypeError, match="ProcessWindowFunction"):
        keyed.window(GlobalWindows.create()).process(lambda k, c, e: e)
    all_windowed = env.from_collection([1]).window_all(TumblingEventTimeWindows.of(10)).reduce(lambda a, b: a + b)
    with pytest.raises(ValueError, match="non-parallel"):
        all_windowed.set_parallelism(2)


def test_window_transformation_is_named_like_flink():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = env.from_collection([("a", 1)]).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(5000)).reduce(
        lambda a, b: a
    )
    assert out.get_name() == "Window(TumblingEventTimeWindows(5000), EventTimeTrigger, LambdaReduceFunction)"


def test_tumbling_and_sliding_aggregate_without_window_function():
    class Mean(AggregateFunction):
        def create_accumulator(self):
            return [0, 0]

        def add(self, value, acc):
            acc[0] += value[1]
            acc[1] += 1
            return acc

        def get_result(self, acc):
            return acc[0] / acc[1]

    events = [("a", 1, 4), ("a", 3, 8), ("b", 2, 5), ("a", 12, 1), ("b", 17, 7), ("b", 14, 3), ("a", 6, 3)]
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection([(k, v, t) for k, t, v in events]).assign_timestamps_and_watermarks(
        punctuated_watermarks(10, lambda e: e[2])
    )
    tumbling = ds.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10)).aggregate(Mean())
    sliding = ds.key_by(lambda e: e[0]).window(SlidingEventTimeWindows.of(10, 5)).aggregate(Mean())
    both = tumbling.map(lambda m: ("t", m)).union(sliding.map(lambda m: ("s", m)))
    want = []
    for key in "ab":
        for start in range(-5, 20, 5):
            vs = [v for k, t, v in events if k == key and start <= t < start + 10]
            if vs:
                want.append(("s", sum(vs) / len(vs)))
                if start % 10 == 0:
                    want.append(("t", sum(vs) / len(vs)))
    assert sorted(collect(both)) == sorted(want)
