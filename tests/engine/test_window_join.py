"""Window joins and co-groups, and non-keyed windows, against plain-Python references."""

from strom.datastream import (
    AllWindowFunction,
    CoGroupFunction,
    FlatJoinFunction,
    JoinFunction,
    ProcessAllWindowFunction,
    StreamExecutionEnvironment,
)
from strom.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from strom.testing import collect, punctuated_watermarks

# (key, timestamp, payload); everything is on time (bound 100)
LEFT = [("a", 1, "l1"), ("b", 2, "l2"), ("a", 8, "l3"), ("c", 12, "l4"), ("a", 15, "l5"), ("b", 11, "l6")]
RIGHT = [("a", 3, "r1"), ("a", 4, "r2"), ("b", 14, "r3"), ("c", 13, "r4"), ("d", 5, "r5"), ("a", 19, "r6")]


def timed(env, events):
    return env.from_collection(events).assign_timestamps_and_watermarks(punctuated_watermarks(100, lambda e: e[1]))


def panes(events, size=10):
    out: dict = {}
    for e in events:
        out.setdefault((e[0], e[1] - e[1] % size), []).append(e[2])
    return out


def test_window_join_emits_cross_product_per_key_and_window():
    class Pair(JoinFunction):
        def join(self, value1, value2):
            return (value1[0], value1[2], value2[2])

    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        timed(env, LEFT).join(timed(env, RIGHT)).where(lambda e: e[0]).equal_to(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(10)).apply(Pair())
    )
    left, right = panes(LEFT), panes(RIGHT)
    want = [(k, a, b) for pane, ls in left.items() for a in ls for b in right.get(pane, []) for k in [pane[0]]]
    assert want and sorted(collect(out)) == sorted(want)


def test_flat_join_and_callable_join():
    class Flat(FlatJoinFunction):
        def join(self, value1, value2):
            if value1[1] < value2[1]:
                yield (value1[2], value2[2])

    env = StreamExecutionEnvironment.get_execution_environment()
    joined = timed(env, LEFT).join(timed(env, RIGHT)).where(lambda e: e[0]).equal_to(lambda e: e[0]).window(
        TumblingEventTimeWindows.of(10)
    )
    flat = joined.apply(Flat())
    env2 = StreamExecutionEnvironment.get_execution_environment()
    plain = (
        timed(env2, LEFT).join(timed(env2, RIGHT)).where(lambda e: e[0]).equal_to(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(10)).apply(lambda a, b: a[2] + b[2])
    )
    pairs = [
        (a, b) for (k, s), ls in panes(LEFT).items() for a in ls for b in panes(RIGHT).get((k, s), [])
    ]
    ts = {e[2]: e[1] for e in LEFT + RIGHT}
    assert sorted(collect(flat)) == sorted((a, b) for a, b in pairs if ts[a] < ts[b])
    assert sorted(collect(plain)) == sorted(a + b for a, b in pairs)


def test_co_group_sees_both_sides_including_one_sided_panes():
    class Sides(CoGroupFunction):
        def co_group(self, first, second):
            first, second = sorted(e[2] for e in first), sorted(e[2] for e in second)
            key = (first and "L" or "") + (second and "R" or "")
            yield (key, tuple(first), tuple(second))

    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        timed(env, LEFT).co_group(timed(env, RIGHT)).where(lambda e: e[0]).equal_to(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(10)).apply(Sides())
    )
    left, right = panes(LEFT), panes(RIGHT)
    want = []
    for pane in set(left) | set(right):
        ls, rs = tuple(sorted(left.get(pane, []))), tuple(sorted(right.get(pane, [])))
        want.append(((ls and "L" or "") + (rs and "R" or ""), ls, rs))
    assert sorted(collect(out)) == sorted(want)


def test_co_group_on_session_windows_with_callable():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = (
        timed(env, LEFT).co_group(timed(env, RIGHT)).where(lambda e: e[0]).equal_to(lambda e: e[0])
        .window(EventTimeSessionWindows.with_gap(4))
        .apply(lambda first, second: [(len(list(first)), len(list(second)))])
    )
    # sessions per key over both sides' timestamps with gap 4 (touching windows merge)
    want = []
    for key in "abcd":
        stamps = sorted([(e[1], 1) for e in LEFT if e[0] == key] + [(e[1], 2) for e in RIGHT if e[0] == key])
        sessions: list = []
        for ts, side in stamps:
            if sessions and ts <= sessions[-1][0] + 4:
                sessions[-1][0] = max(sessions[-1][0], ts)
                sessions[-1][side] += 1
            else:
                sessions.append([ts, 0, 0])
                sessions[-1][side] += 1
        want += [(s[1], s[2]) for s in sessions]
    assert sorted(collect(out)) == sorted(want)


def test_window_all_with_all_window_functions_runs_at_parallelism_one():
    class Total(AllWindowFunction):
        def apply(self, window, inputs):
            yield (window.start, sum(e[1] for e in inputs))

    class Count(ProcessAllWindowFunction):
        def process(self, context, elements):
            yield (context.window().start, len(list(elements)))

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    ds = timed(env, LEFT + RIGHT)
    total = ds.window_all(TumblingEventTimeWindows.of(10)).apply(Total())
    count = ds.window_all(TumblingEventTimeWindows.of(10)).process(Count())
    reduced = ds.window_all(TumblingEventTimeWindows.of(10)).reduce(lambda a, b: ("*", max(a[1], b[1]), ""))
    assert total.get_parallelism() == 1
    both = total.map(lambda r: ("total",) + r).union(
        count.map(lambda r: ("count",) + r), reduced.map(lambda r: ("max", r[1]))
    )
    want = []
    for start in (0, 10):
        in_window = [e for e in LEFT + RIGHT if start <= e[1] < start + 10]
        want += [("total", start, sum(e[1] for e in in_window)), ("count", start, len(in_window))]
        want.append(("max", max(e[1] for e in in_window)))
    assert sorted(collect(both)) == sorted(want)
