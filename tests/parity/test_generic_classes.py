"""PyFlink's Generic classes are subscriptable in Strom (issue 18).

PyFlink declares these classes `Generic` (flink-python/pyflink/datastream/functions.py, window.py and
state.py), and Flink's own examples subclass them with type arguments, e.g. windowing.py's
`class CountWindowProcessFunction(ProcessWindowFunction[tuple, tuple, str, TimeWindow])`.
"""

from __future__ import annotations

import pytest
from strom.datastream import StreamExecutionEnvironment
from strom.datastream import functions as fn
from strom.datastream import state as st
from strom.datastream import window as win

# (class, number of type parameters PyFlink gives it), read from PyFlink's sources:
#   functions.py: WindowFunction(Function, Generic[IN, OUT, KEY, W]), AllWindowFunction(.., Generic[IN, OUT, W]),
#   ProcessWindowFunction(.., Generic[IN, OUT, KEY, W]) and its Context(ABC, Generic[W2]),
#   ProcessAllWindowFunction(.., Generic[IN, OUT, W]) and its Context(ABC, Generic[W2]),
#   BroadcastProcessFunction(.., Generic[IN1, IN2, OUT]), KeyedBroadcastProcessFunction(.., Generic[KEY, IN1, IN2, OUT])
#   window.py: Trigger(ABC, Generic[T, W]), WindowAssigner(ABC, Generic[T, W]),
#   MergingWindowAssigner(WindowAssigner[T, W]) and MergingWindowAssigner.MergeCallback(ABC, Generic[W2])
#   state.py: ValueState(State, Generic[T]), AppendingState(State, Generic[IN, OUT]),
#   MergingState(AppendingState[IN, OUT]),
#   ReducingState(MergingState[T, T]), AggregatingState(MergingState[IN, OUT]), ListState(MergingState[T, Iterable[T]]),
#   MapState(State, Generic[K, V]), ReadOnlyBroadcastState(State, Generic[K, V]),
#   BroadcastState(ReadOnlyBroadcastState[K, V])
PYFLINK_GENERIC = [
    (fn.WindowFunction, 4),
    (fn.AllWindowFunction, 3),
    (fn.ProcessWindowFunction, 4),
    (fn.ProcessWindowFunction.Context, 1),
    (fn.ProcessAllWindowFunction, 3),
    (fn.ProcessAllWindowFunction.Context, 1),
    (fn.BroadcastProcessFunction, 3),
    (fn.KeyedBroadcastProcessFunction, 4),
    (win.Trigger, 2),
    (win.WindowAssigner, 2),
    (win.MergingWindowAssigner, 2),
    (win.MergingWindowAssigner.MergeCallback, 1),
    (st.ValueState, 1),
    (st.AppendingState, 2),
    (st.MergingState, 2),
    (st.ReducingState, 1),
    (st.AggregatingState, 2),
    (st.ListState, 1),
    (st.MapState, 2),
    (st.ReadOnlyBroadcastState, 2),
    (st.BroadcastState, 2),
]


@pytest.mark.parametrize(("cls", "arity"), PYFLINK_GENERIC, ids=lambda v: getattr(v, "__qualname__", str(v)))
def test_pyflink_generic_class_takes_its_type_parameters(cls: type, arity: int) -> None:
    alias = cls[tuple([int] * arity)]  # type: ignore[index]
    assert alias.__origin__ is cls
    with pytest.raises(TypeError):  # the wrong number of parameters is refused, as typing does for PyFlink's
        cls[tuple([int] * (arity + 1))]  # type: ignore[index]


def test_process_window_function_subclassed_as_flinks_windowing_example_writes_it() -> None:
    """Flink's windowing example: `class CountWindowProcessFunction(ProcessWindowFunction[tuple, tuple, str,
    TimeWindow])` whose process() yields (key, window.start, window.end, count); the job runs and gives what a
    plain-Python grouping gives."""
    from strom.common import Duration, Types, WatermarkStrategy
    from strom.common.watermark_strategy import TimestampAssigner

    class CountPerWindow(fn.ProcessWindowFunction[tuple, tuple, str, win.TimeWindow]):
        def process(self, key: str, context: fn.ProcessWindowFunction.Context[win.TimeWindow], elements):  # noqa: ANN001, ANN201
            w = context.window()
            return [(key, w.start, w.end, len([e for e in elements]))]

    class Ts(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):  # noqa: ANN001, ANN201
            return value[1]

    data = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 5), ("hi", 8), ("hi", 9), ("hi", 15)]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts())
    ds = env.from_collection(data, Types.TUPLE([Types.STRING(), Types.INT()])).assign_timestamps_and_watermarks(
        strategy
    )
    got = sorted(
        ds.key_by(lambda v: v[0])
        .window(win.TumblingEventTimeWindows.of(Duration.of_millis(5)))
        .process(CountPerWindow(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]))
        .execute_and_collect()
    )
    expected: dict[tuple[str, int], int] = {}
    for key, ts in data:
        start = ts - ts % 5
        expected[(key, start)] = expected.get((key, start), 0) + 1
    assert got == sorted((k, s, s + 5, n) for (k, s), n in expected.items())
