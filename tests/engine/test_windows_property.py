"""Property: windows over random out-of-order streams equal a plain-Python replay, at any parallelism.

Random (key, timestamp, value) streams run through tumbling, sliding and session
windows with allowed lateness and a late-data side output, under a punctuated bounded
out-of-orderness watermark; the result must equal `window_reference.simulate` and be
the same with the window operators at parallelism 1 and 4.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strom.datastream import AggregateFunction, OutputTag, ProcessWindowFunction, StreamExecutionEnvironment
from strom.datastream.window import EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows
from strom.testing import collect, punctuated_watermarks

from .window_reference import simulate, sliding, tumbling

EVENTS = st.lists(
    st.tuples(st.sampled_from("abcde"), st.integers(min_value=0, max_value=80), st.integers(-50, 50)),
    min_size=1,
    max_size=40,
)


class SumCount(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value[2], acc[1] + 1)

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class Describe(ProcessWindowFunction):
    def __init__(self, name):
        self.name = name

    def process(self, key, context, elements):
        (s, c), = elements
        yield (self.name, key, context.window().start, context.window().end, s, c)


def run(events, *, bound, lateness, parallelism):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)  # source and watermarks in arrival order; only the windows run in parallel
    ds = env.from_collection(events).assign_timestamps_and_watermarks(punctuated_watermarks(bound, lambda e: e[1]))
    outputs = []
    for name, assigner in (
        ("tumbling", TumblingEventTimeWindows.of(10)),
        ("sliding", SlidingEventTimeWindows.of(10, 4)),
        ("session", EventTimeSessionWindows.with_gap(6)),
    ):
        tag = OutputTag(f"late-{name}")
        main = (
            ds.key_by(lambda e: e[0]).window(assigner).allowed_lateness(lateness).side_output_late_data(tag)
            .aggregate(SumCount(), Describe(name)).set_parallelism(parallelism)
        )
        outputs += [main, main.get_side_output(tag).map(lambda e, n=name: ("late-" + n,) + e)]
    return sorted(collect(outputs[0].union(*outputs[1:])))


def reference(events, *, bound, lateness):
    out = []
    for name, kwargs in (
        ("tumbling", {"assign": tumbling(10)}),
        ("sliding", {"assign": sliding(10, 4)}),
        ("session", {"session_gap": 6}),
    ):
        fired, late = simulate(events, bound=bound, lateness=lateness, **kwargs)
        out += [(name, k, s, e, sum(vs), len(vs)) for k, s, e, vs in fired]
        out += [("late-" + name,) + e for e in late]
    return sorted(out)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=EVENTS, bound=st.integers(0, 12), lateness=st.sampled_from([0, 3, 9]))
def test_windows_match_reference_at_parallelism_1_and_4(events, bound, lateness):
    want = reference(events, bound=bound, lateness=lateness)
    assert run(events, bound=bound, lateness=lateness, parallelism=1) == want
    assert run(events, bound=bound, lateness=lateness, parallelism=4) == want
