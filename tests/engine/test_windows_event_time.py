"""Event-time windows end to end: tumbling, sliding, sessions, lateness, late data, functions.

Every expected result comes from `window_reference.simulate`, a plain-Python replay of
the same events and watermarks, or from figures worked by hand in the docstring.
"""

import pytest
from strom.common import Types
from strom.common.time import Duration, Time
from strom.datastream import (
    AggregateFunction,
    OutputTag,
    ProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
    WindowFunction,
)
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.window import (
    EventTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
)
from strom.runtime.local_executor import JobExecutionError
from strom.testing import collect, punctuated_watermarks

from .window_reference import simulate, sliding, tumbling

# (key, timestamp, value), out of order, with stragglers
EVENTS = [
    ("a", 1, 1), ("b", 3, 2), ("a", 7, 3), ("c", 4, 4), ("a", 12, 5), ("b", 15, 6), ("a", 9, 7),
    ("c", 30, 8), ("a", 2, 9), ("b", 14, 10), ("a", 31, 11), ("b", 33, 12), ("c", 21, 13), ("a", 45, 14),
    ("b", 29, 15), ("c", 47, 16),
]


def stream(env, events=EVENTS, bound=5):
    return env.from_collection(events).assign_timestamps_and_watermarks(punctuated_watermarks(bound, lambda e: e[1]))


class SumCount(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value[2], acc[1] + 1)

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class WithWindow(ProcessWindowFunction):
    """(key, start, end, sum, count) from a pre-aggregated (sum, count)."""

    def process(self, key, context, elements):
        (s, c), = elements
        w = context.window()
        yield (key, w.start, w.end, s, c)


class AllElements(ProcessWindowFunction):
    def process(self, key, context, elements):
        values = sorted(e[2] for e in elements)
        w = context.window()
        yield (key, w.start, w.end, sum(values), len(values))


def expected(fired):
    return sorted((k, s, e, sum(vs), len(vs)) for k, s, e, vs in fired)


@pytest.mark.parametrize("lateness", [0, 6])
def test_tumbling_aggregate_with_process_window_function_matches_reference(lateness):
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        stream(env).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
        .allowed_lateness(lateness).aggregate(SumCount(), WithWindow())
    )
    fired, _ = simulate(EVENTS, assign=tumbling(10), bound=5, lateness=lateness)
    assert sorted(collect(out)) == expected(fired)


def test_tumbling_reduce_without_window_function_sums_each_window():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        stream(env).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
        .reduce(lambda a, b: (a[0], min(a[1], b[1]), a[2] + b[2]))
    )
    fired, _ = simulate(EVENTS, assign=tumbling(10), bound=5)
    assert sorted((k, s) for k, _t, s in collect(out)) == sorted((k, sum(vs)) for k, _s, _e, vs in fired)


def test_sliding_reduce_with_window_function_matches_reference():
    class Tag(WindowFunction):
        def apply(self, key, window, inputs):
            (v,) = inputs
            return [(key, window.start, window.end, v[2], v[3])]

    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        stream(env).map(lambda e: (e[0], e[1], e[2], 1)).key_by(lambda e: e[0])
        .window(SlidingEventTimeWindows.of(Time.milliseconds(10), Time.milliseconds(5)))
        .allowed_lateness(3)
        .reduce(lambda a, b: (a[0], a[1], a[2] + b[2], a[3] + b[3]), window_function=Tag())
    )
    fired, _ = simulate(EVENTS, assign=sliding(10, 5), bound=5, lateness=3)
    assert sorted(collect(out)) == expected(fired)


def test_sliding_process_over_all_elements_matches_reference():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = stream(env).key_by(lambda e: e[0]).window(SlidingEventTimeWindows.of(10, 4)).process(AllElements())
    fired, _ = simulate(EVENTS, assign=sliding(10, 4), bound=5)
    assert sorted(collect(out)) == expected(fired)


@pytest.mark.parametrize("lateness", [0, 8])
def test_session_windows_merge_state_of_overlapping_windows(lateness):
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        stream(env).key_by(lambda e: e[0]).window(EventTimeSessionWindows.with_gap(6))
        .allowed_lateness(lateness).aggregate(SumCount(), WithWindow())
    )
    fired, _ = simulate(EVENTS, session_gap=6, bound=5, lateness=lateness)
    assert sorted(collect(out)) == expected(fired)


def test_session_windows_with_process_function_see_all_merged_elements():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = stream(env).key_by(lambda e: e[0]).window(EventTimeSessionWindows.with_gap(Duration.of_millis(5))).process(
        AllElements()
    )
    fired, _ = simulate(EVENTS, session_gap=5, bound=5)
    assert sorted(collect(out)) == expected(fired)


def test_dynamic_session_gap_from_extractor_and_from_callable():
    """Gap 4 for key 'a', 8 otherwise: the reference runs per key with its own gap."""

    class Gap(SessionWindowTimeGapExtractor):
        def extract(self, element):
            return 4 if element[0] == "a" else 8

    want = []
    for key, gap in (("a", 4), ("b", 8), ("c", 8)):
        # replay all events (they drive the watermark) and keep this key's sessions
        fired_all, _ = simulate(EVENTS, session_gap=gap, bound=5)
        want += [f for f in fired_all if f[0] == key]
    for extractor in (Gap(), lambda e: Duration.of_millis(4 if e[0] == "a" else 8)):
        env = StreamExecutionEnvironment.get_execution_environment()
        out = stream(env).key_by(lambda e: e[0]).window(EventTimeSessionWindows.with_dynamic_gap(extractor)).process(
            AllElements()
        )
        assert sorted(collect(out)) == expected(want)


def test_late_elements_go_to_side_output_and_refire_within_lateness():
    """Tumbling 10 ms, bound 0 (watermark = max_ts - 1), lateness 5.

    ("k",12) -> wm 11 fires [0,10) = {1};  ("k",3) within lateness -> refire [0,10) = {1,3};
    ("k",16) -> wm 15 cleans [0,10) up;     ("k",4) is late (4 + 5 <= 15) -> side output;
    end: [10,20) = {12,16}."""
    events = [("k", 1, 1), ("k", 12, 12), ("k", 3, 3), ("k", 16, 16), ("k", 4, 4)]
    late_tag = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))
    env = StreamExecutionEnvironment.get_execution_environment()
    main = (
        stream(env, events, bound=0).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
        .allowed_lateness(5).side_output_late_data(late_tag).aggregate(SumCount(), WithWindow())
    )
    late = main.get_side_output(late_tag)
    both = main.map(lambda r: ("main",) + r).union(late.map(lambda r: ("late",) + r))
    got = sorted(collect(both))
    assert got == sorted([
        ("main", "k", 0, 10, 1, 1), ("main", "k", 0, 10, 4, 2), ("main", "k", 10, 20, 28, 2), ("late", "k", 4, 4),
    ])
    fired, late_ref = simulate(events, assign=tumbling(10), bound=0, lateness=5)
    assert sorted(("main",) + f for f in expected(fired)) == [g for g in got if g[0] == "main"]
    assert late_ref == [("k", 4, 4)]


def test_late_data_side_output_matches_reference_for_sessions_and_sliding():
    tag = OutputTag("late")
    for kwargs, assigner in (
        ({"session_gap": 3}, EventTimeSessionWindows.with_gap(3)),
        ({"assign": sliding(6, 3)}, SlidingEventTimeWindows.of(6, 3)),
    ):
        env = StreamExecutionEnvironment.get_execution_environment()
        main = (
            stream(env, bound=2).key_by(lambda e: e[0]).window(assigner).allowed_lateness(2)
            .side_output_late_data(tag).process(AllElements())
        )
        got_late = sorted(collect(main.get_side_output(tag)))
        _, late_ref = simulate(EVENTS, bound=2, lateness=2, **kwargs)
        assert late_ref, "the reference should see late events in this data"
        assert got_late == sorted(late_ref)


def test_results_carry_window_max_timestamp():
    class Stamp(ProcessFunction):
        def process_element(self, value, ctx):
            yield (value, ctx.timestamp())

    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        stream(env).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
        .aggregate(SumCount(), WithWindow()).process(Stamp())
    )
    got = collect(out)
    assert got and all(ts == r[2] - 1 for r, ts in got)


def test_window_offset_shifts_window_starts():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        stream(env).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10, offset=3))
        .aggregate(SumCount(), WithWindow())
    )
    shifted = [(k, ts - 3, v) for k, ts, v in EVENTS]
    fired, _ = simulate(shifted, assign=tumbling(10), bound=5)
    assert sorted(collect(out)) == sorted((k, s + 3, e + 3, sum(vs), len(vs)) for k, s, e, vs in fired)


def test_process_window_function_state_and_side_output():
    """window_state counts firings of a pane (refires see it), global_state counts all panes of
    a key, and ctx.output goes to a side output."""
    tag = OutputTag("fired")

    class Counting(ProcessWindowFunction):
        def process(self, key, context, elements):
            per_window = context.window_state().get_state(ValueStateDescriptor("firings"))
            per_key = context.global_state().get_state(ValueStateDescriptor("panes"))
            per_window.update((per_window.value() or 0) + 1)
            per_key.update((per_key.value() or 0) + 1)
            context.output(tag, (key, context.window().start))
            yield (key, context.window().start, per_window.value(), len(list(elements)))

        def clear(self, context):
            context.window_state().get_state(ValueStateDescriptor("firings")).clear()

    events = [("k", 1, 1), ("k", 12, 12), ("k", 3, 3), ("k", 4, 4), ("k", 25, 25)]
    env = StreamExecutionEnvironment.get_execution_environment()
    main = (
        stream(env, events, bound=0).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
        .allowed_lateness(10).process(Counting())
    )
    side = main.get_side_output(tag)
    both = main.map(lambda r: ("main",) + r).union(side.map(lambda r: ("side",) + r))
    got = sorted(collect(both))
    # [0,10): fired at wm 11 ({1}), refired for 3 and 4; [10,20) fired at wm 24; [20,30) at the end
    assert got == sorted([
        ("main", "k", 0, 1, 1), ("main", "k", 0, 2, 2), ("main", "k", 0, 3, 3),
        ("main", "k", 10, 1, 1), ("main", "k", 20, 1, 1),
        ("side", "k", 0), ("side", "k", 0), ("side", "k", 0), ("side", "k", 10), ("side", "k", 20),
    ])


def test_apply_with_plain_callable_window_function():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = stream(env).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10)).apply(
        lambda key, window, inputs: [(key, window.start, window.end, sum(e[2] for e in inputs), len(list(inputs)))]
    )
    fired, _ = simulate(EVENTS, assign=tumbling(10), bound=5)
    assert sorted(collect(out)) == expected(fired)


def test_event_time_window_without_timestamps_fails_naming_the_operator():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = env.from_collection([("a", 1, 1)]).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10)).reduce(
        lambda a, b: a
    )
    with pytest.raises(JobExecutionError) as info:
        collect(out)
    assert "Record has no timestamp" in str(info.value)
    assert "Window(TumblingEventTimeWindows(10)" in str(info.value)


def test_window_on_non_keyed_stream_raises_naming_the_operator():
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(TypeError, match="window\\(\\) needs a keyed stream.*Collection Source"):
        env.from_collection([1]).window(TumblingEventTimeWindows.of(10))


def test_time_window_helpers():
    w = TimeWindow(0, 10)
    assert w.max_timestamp() == 9
    assert w.intersects(TimeWindow(10, 20)) and not w.intersects(TimeWindow(11, 20))
    assert w.cover(TimeWindow(5, 15)) == TimeWindow(0, 15)
    assert TimeWindow.get_window_start_with_offset(-3, 0, 5) == -5
    assert TimeWindow.get_window_start_with_offset(7, 2, 5) == 7
