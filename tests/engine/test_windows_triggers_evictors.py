"""Count windows, every built-in trigger and evictor, and a custom merging trigger.

Expected values come from small plain-Python simulations written next to each test, or
from figures worked by hand in the docstrings.
"""

from strom.datastream import AggregateFunction, ProcessWindowFunction, StreamExecutionEnvironment
from strom.datastream.state import ReducingStateDescriptor
from strom.datastream.window import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    CountWindow,
    DeltaEvictor,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    PurgingTrigger,
    TimeEvictor,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    count_window_parts,
)
from strom.testing import collect, punctuated_watermarks

VALUES = [1, 2, 4, 9, 7, 3, 5]


def flink_sliding_count_reference(values, size, slide):
    """Flink's countWindow(size, slide): fire every `slide` elements over the last `size` elements."""
    return [sum(values[max(0, i - size) : i]) for i in range(1, len(values) + 1) if i % slide == 0]


def pyflink_sliding_count_reference(values, size, slide):
    """PyFlink's count_window(size, slide): window n holds elements [n*slide, n*slide + size) and
    fires (once) when it is full."""
    return [sum(values[s : s + size]) for s in range(0, len(values) - size + 1, slide)]


def test_count_window_4_2_behaves_as_in_pyflink():
    """Over 1,2,4,9,7,3,5: window 0 = [1,2,4,9] = 16, window 1 = [4,9,7,3] = 23; window 2 = [7,3,5]
    never fills, so it never fires."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out = env.from_collection(VALUES).key_by(lambda x: 0).count_window(4, 2).reduce(lambda a, b: a + b)
    assert collect(out) == [16, 23] == pyflink_sliding_count_reference(VALUES, 4, 2)


def test_java_count_window_with_count_trigger_and_evictor():
    """Java Flink's countWindow(4, 2) = GlobalWindows + CountTrigger(2) + CountEvictor(4): fires
    after elements 2, 4 and 6 over the last four: [1,2] = 3, [1,2,4,9] = 16, [4,9,7,3] = 23."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        env.from_collection(VALUES)
        .key_by(lambda x: 0)
        .window(GlobalWindows.create())
        .trigger(CountTrigger.of(2))
        .evictor(CountEvictor.of(4))
        .reduce(lambda a, b: a + b)
    )
    assert collect(out) == [3, 16, 23] == flink_sliding_count_reference(VALUES, 4, 2)


def test_count_sliding_window_assigner_fires_only_full_windows():
    """CountWindow(n) holds elements [2n, 2n+4): windows 0 = 1+2+4+9 = 16 and 1 = 4+9+7+3 = 23 fill up."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out = env.from_collection(VALUES).key_by(lambda x: 0).window(CountSlidingWindowAssigner.of(4, 2)).reduce(
        lambda a, b: a + b
    )
    assert collect(out) == [16, 23]


def test_count_windows_per_key_match_reference_at_parallelism_2():
    data = [(k, v) for v in range(40) for k in ("x", "y", "z") if (v * 7 + len(k)) % 3 != 0]
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection(data).key_by(lambda e: e[0])
    tumbling = ds.count_window(3).reduce(lambda a, b: (a[0], a[1] + b[1])).set_parallelism(2)
    sliding = ds.count_window(5, 2).reduce(lambda a, b: (a[0], a[1] + b[1])).set_parallelism(2)
    assigned = ds.window(CountTumblingWindowAssigner.of(3)).reduce(lambda a, b: (a[0], a[1] + b[1]))
    both = tumbling.map(lambda r: ("t",) + r).union(
        sliding.map(lambda r: ("s",) + r), assigned.map(lambda r: ("a",) + r)
    )
    want = []
    for key in ("x", "y", "z"):
        vs = [v for k, v in data if k == key]
        want += [("t", key, sum(vs[i : i + 3])) for i in range(0, len(vs) - 2, 3)]
        want += [("a", key, sum(vs[i : i + 3])) for i in range(0, len(vs) - 2, 3)]
        want += [("s", key, s) for s in pyflink_sliding_count_reference(vs, 5, 2)]
    assert sorted(collect(both)) == sorted(want)


def test_count_window_all_runs_in_one_subtask():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    out = env.from_collection(VALUES).count_window_all(3).reduce(lambda a, b: a + b)
    assert collect(out) == [7, 19]


def test_count_window_parts_are_pyflinks():
    assigner, trigger, evictor = count_window_parts(5)
    assert isinstance(assigner, CountTumblingWindowAssigner) and evictor is None
    assigner, trigger, evictor = count_window_parts(5, 2)
    assert isinstance(assigner, CountSlidingWindowAssigner) and evictor is None
    assert (assigner.window_size, assigner.window_slide) == (5, 2)


# -- triggers on event-time windows ---------------------------------------------------------------------
def timed(env, events, bound):
    return env.from_collection(events).assign_timestamps_and_watermarks(punctuated_watermarks(bound, lambda e: e[1]))


def test_continuous_event_time_trigger_fires_every_interval_and_at_window_end():
    """Tumbling 10, ContinuousEventTimeTrigger(3), watermark = max_ts - 1.

    (1): timers 9 and 3. (2). (5): wm 4 fires 3 -> 1+2+5 = 8, next 6. (8): wm 7 fires 6 -> 16,
    next 9. (15): wm 14 fires 9 (window end) -> 16; window [10,20) timers 19 and 18.
    End: 18 -> 15, 19 -> 15."""
    events = [("k", 1, 1), ("k", 2, 2), ("k", 5, 5), ("k", 8, 8), ("k", 15, 15)]
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        timed(env, events, 0).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
        .trigger(ContinuousEventTimeTrigger.of(3)).reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    )
    assert [r[2] for r in collect(out)] == [8, 16, 16, 15, 15]


def test_purging_count_trigger_fires_pairs_within_each_window():
    events = [("a", t, t) for t in (1, 3, 12, 5, 7, 14, 9, 16, 18, 2)] + [("b", t, t) for t in (4, 6, 8)]
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        timed(env, events, 100).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
        .trigger(PurgingTrigger.of(CountTrigger.of(2))).reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    )
    want = []
    for key in ("a", "b"):
        for start in (0, 10):
            vs = [v for k, t, v in events if k == key and start <= t < start + 10]
            want += [(key, vs[i] + vs[i + 1]) for i in range(0, len(vs) - 1, 2)]
    assert sorted((r[0], r[2]) for r in collect(out)) == sorted(want)


def test_count_trigger_without_purge_fires_cumulative_contents():
    events = [("a", t, t) for t in (1, 3, 5, 7, 9, 2)]
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        timed(env, events, 100).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
        .trigger(CountTrigger.of(2)).reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    )
    assert [r[2] for r in collect(out)] == [1 + 3, 1 + 3 + 5 + 7, 1 + 3 + 5 + 7 + 9 + 2]


def test_global_windows_never_fire_by_default_and_fire_once_at_end_of_stream_if_asked():
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection([("a", 1), ("b", 2), ("a", 3)]).key_by(lambda e: e[0])
    never = ds.window(GlobalWindows.create()).reduce(lambda a, b: (a[0], a[1] + b[1]))
    at_end = ds.window(GlobalWindows.create_with_end_of_stream_trigger()).reduce(lambda a, b: (a[0], a[1] + b[1]))
    both = never.map(lambda r: ("never",) + r).union(at_end.map(lambda r: ("end",) + r))
    assert sorted(collect(both)) == [("end", "a", 4), ("end", "b", 2)]


CLEARED: list = []


class SessionCountTrigger(Trigger):
    """Fires a session early once it holds 3 elements, and at its end; merges its count."""

    count = ReducingStateDescriptor("session-count", lambda a, b: a + b)

    def on_element(self, element, timestamp, window, ctx):
        state = ctx.get_partitioned_state(self.count)
        state.add(1)
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.FIRE if state.get() >= 3 else TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        ctx.merge_partitioned_state(self.count)
        ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window, ctx):
        CLEARED.append((window.start, window.end, ctx.get_partitioned_state(self.count).get()))
        ctx.get_partitioned_state(self.count).clear()
        ctx.delete_event_time_timer(window.max_timestamp())


def test_custom_trigger_merges_its_state_and_is_cleared_for_merged_and_finished_windows():
    """Gap 5: (1) -> [1,6), (10) -> [10,15), (5) -> [5,10) touches both: merged [1,15) with
    count 1 + 1 + 1 = 3 fires early (16). The end fires it again (16) and cleans it up.
    clear() runs for the two merged-away windows (their counts already moved) and at cleanup."""
    CLEARED.clear()
    events = [("k", 1, 1), ("k", 10, 10), ("k", 5, 5)]
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        timed(env, events, 100).key_by(lambda e: e[0]).window(EventTimeSessionWindows.with_gap(5))
        .trigger(SessionCountTrigger()).reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    )
    assert [r[2] for r in collect(out)] == [16, 16]
    assert sorted(CLEARED) == [(1, 6, None), (1, 15, 3), (10, 15, None)]


def test_trigger_result_flags():
    assert TriggerResult.FIRE_AND_PURGE.is_fire() and TriggerResult.FIRE_AND_PURGE.is_purge()
    assert TriggerResult.FIRE.is_fire() and not TriggerResult.FIRE.is_purge()
    assert not TriggerResult.CONTINUE.is_fire() and TriggerResult.PURGE.is_purge()
    assert EventTimeTrigger.create().can_merge() and not CountWindow(1) == CountWindow(2)


# -- evictors ------------------------------------------------------------------------------------------
class Values(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield (key, context.window().start, tuple(e[2] for e in elements))


EVENTS = [("a", 3, 30), ("a", 1, 10), ("b", 2, 20), ("a", 8, 80), ("a", 5, 50), ("b", 9, 90), ("a", 14, 140),
          ("a", 11, 110), ("b", 12, 120), ("a", 19, 190)]


def panes(events):
    """(key, window start) -> elements in arrival order, tumbling 10 ms (no element is late here)."""
    out = {}
    for e in events:
        out.setdefault((e[0], e[1] - e[1] % 10), []).append(e)
    return out


def evicted(evictor, process=Values()):
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        timed(env, EVENTS, 100).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
        .evictor(evictor).process(process)
    )
    return sorted(collect(out))


def test_count_evictor_keeps_the_last_elements():
    want = sorted((k, s, tuple(e[2] for e in es[-2:])) for (k, s), es in panes(EVENTS).items())
    assert evicted(CountEvictor.of(2)) == want


def test_time_evictor_keeps_elements_close_to_the_newest():
    want = sorted(
        (k, s, tuple(e[2] for e in es if e[1] > max(x[1] for x in es) - 4)) for (k, s), es in panes(EVENTS).items()
    )
    assert evicted(TimeEvictor.of(4)) == want


def test_delta_evictor_removes_elements_far_from_the_last():
    def far(a, b):
        return abs(a[2] - b[2])

    want = sorted((k, s, tuple(e[2] for e in es if far(e, es[-1]) < 45)) for (k, s), es in panes(EVENTS).items())
    assert evicted(DeltaEvictor.of(45, far)) == want


def test_evict_after_leaves_the_function_everything_and_keeps_the_rest():
    """GlobalWindows + CountTrigger(3) + CountEvictor(1, after): fire at 3: [1,2,3] = 6, keep [3];
    fire at 6 (three more elements): [3,4,5,6] = 18, keep [6]; 7 never fires."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        env.from_collection([1, 2, 3, 4, 5, 6, 7]).key_by(lambda x: 0).window(GlobalWindows.create())
        .trigger(CountTrigger.of(3)).evictor(CountEvictor.of(1, do_evict_after=True)).reduce(lambda a, b: a + b)
    )
    assert collect(out) == [6, 18]


def test_evictor_with_reduce_and_aggregate_evaluates_what_is_left():
    class Mean(AggregateFunction):
        def create_accumulator(self):
            return (0, 0)

        def add(self, value, acc):
            return (acc[0] + value[2], acc[1] + 1)

        def get_result(self, acc):
            return acc[0] / acc[1]

    env = StreamExecutionEnvironment.get_execution_environment()
    ds = timed(env, EVENTS, 100).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
    reduced = ds.evictor(CountEvictor.of(2)).reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
    ds2 = timed(env, EVENTS, 100).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10))
    averaged = ds2.evictor(CountEvictor.of(2)).aggregate(Mean())
    both = reduced.map(lambda r: ("sum", r[2])).union(averaged.map(lambda m: ("mean", m)))
    want = []
    for es in panes(EVENTS).values():
        last = [e[2] for e in es[-2:]]
        want += [("sum", sum(last)), ("mean", sum(last) / len(last))]
    assert sorted(collect(both)) == sorted(want)
