"""ConnectedStreams: co-map, co-flat-map and (keyed) co-process against plain-Python references."""

from collections import Counter

import pytest
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
    TimeDomain,
)
from strom.datastream.state import ValueStateDescriptor

PARALLELISMS = [1, 2]
END_OF_TIME = 10**12  # far beyond every event timestamp: such timers fire only at the end of input


def run(stream):
    with stream.execute_and_collect() as results:
        return list(results)


def env_with(parallelism):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def timestamped(env, events, ts_of):
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _ts: ts_of(e))
    return env.from_collection(events).assign_timestamps_and_watermarks(strategy)


NUMBERS = list(range(50))
WORDS = [f"w{i % 7}" for i in range(30)]


class Tag(CoMapFunction):
    def map1(self, value):
        return ("n", value * 10)

    def map2(self, value):
        return ("w", value.upper())


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_co_map_applies_map1_to_first_and_map2_to_second_input(parallelism):
    env = env_with(parallelism)
    out = run(env.from_collection(NUMBERS).connect(env.from_collection(WORDS)).map(Tag()))
    expected = [("n", n * 10) for n in NUMBERS] + [("w", w.upper()) for w in WORDS]
    assert Counter(out) == Counter(expected)


class Split(CoFlatMapFunction):
    def flat_map1(self, value):
        for _ in range(value % 3):
            yield ("n", value)

    def flat_map2(self, value):
        yield from value.split(",")


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_co_flat_map_emits_every_output_of_both_inputs(parallelism):
    env = env_with(parallelism)
    lines = ["a,b", "c", "d,e,f", ""]
    out = run(env.from_collection(NUMBERS).connect(env.from_collection(lines)).flat_map(Split()))
    expected = [("n", n) for n in NUMBERS for _ in range(n % 3)] + [w for line in lines for w in line.split(",")]
    assert Counter(out) == Counter(expected)


class CountPerKey(CoMapFunction):
    """Keyed state shared by both inputs: a running count of records per key."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def _bump(self, key):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        return (key, n)

    def map1(self, value):
        return self._bump(value[0])

    def map2(self, value):
        return self._bump(value["key"])


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_keyed_co_map_shares_state_of_a_key_between_both_inputs(parallelism):
    env = env_with(parallelism)
    first = [(f"k{i % 5}", i) for i in range(40)]
    second = [{"key": f"k{i % 3}"} for i in range(25)]
    connected = env.from_collection(first).connect(env.from_collection(second))
    out = run(connected.key_by(lambda t: t[0], lambda d: d["key"]).map(CountPerKey()))
    # whatever the interleaving, a key with n records counts 1..n exactly once
    totals = Counter([k for k, _ in first] + [d["key"] for d in second])
    assert Counter(out) == Counter((k, i) for k, n in totals.items() for i in range(1, n + 1))


class SumBothSides(KeyedCoProcessFunction):
    """Sums each input per key; an event-time timer at the end of input reports both sums."""

    def open(self, runtime_context):
        self.left = runtime_context.get_state(ValueStateDescriptor("left"))
        self.right = runtime_context.get_state(ValueStateDescriptor("right"))

    def process_element1(self, value, ctx):
        assert ctx.get_current_key() == value[0]
        assert ctx.timestamp() == value[2]
        self.left.update((self.left.value() or 0) + value[1])
        ctx.timer_service().register_event_time_timer(END_OF_TIME)
        return None

    def process_element2(self, value, ctx):
        assert ctx.get_current_key() == value[0]
        self.right.update((self.right.value() or 0) + value[1])
        ctx.timer_service().register_event_time_timer(END_OF_TIME)
        return None

    def on_timer(self, timestamp, ctx):
        yield (
            ctx.get_current_key(),
            self.left.value() or 0,
            self.right.value() or 0,
            timestamp,
            ctx.timestamp(),
            ctx.time_domain() == TimeDomain.EVENT_TIME,
        )


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_keyed_co_process_fires_event_time_timer_with_its_key_and_state_of_both_inputs(parallelism):
    env = env_with(parallelism)
    first = [(f"k{i % 4}", i, 1000 + i) for i in range(60)]
    second = [(f"k{i % 6}", i * 100, 2000 + i) for i in range(30)]
    s1 = timestamped(env, first, lambda e: e[2])
    s2 = timestamped(env, second, lambda e: e[2])
    out = run(s1.connect(s2).key_by(lambda e: e[0], lambda e: e[0]).process(SumBothSides()))
    keys = {k for k, _, _ in first} | {k for k, _, _ in second}
    expected = [
        (
            k,
            sum(v for kk, v, _ in first if kk == k),
            sum(v for kk, v, _ in second if kk == k),
            END_OF_TIME,
            END_OF_TIME,
            True,
        )
        for k in keys
    ]
    assert sorted(out) == sorted(expected)


class EmitAtTimer(KeyedCoProcessFunction):
    """Each record schedules an event-time timer at its timestamp + 5 that emits a marker."""

    def process_element1(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + 5)
        return None

    def process_element2(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + 5)
        return None

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp)


class NotLate(ProcessFunction):
    def process_element(self, value, ctx):
        yield (value, ctx.timestamp(), ctx.timestamp() > ctx.timer_service().current_watermark())


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_co_process_timer_output_precedes_the_watermark_that_fired_it(parallelism):
    env = env_with(parallelism)
    first = [(f"k{i % 3}", 10 * i) for i in range(40)]
    second = [(f"k{i % 2}", 7 * i) for i in range(40)]
    s1 = timestamped(env, first, lambda e: e[1])
    s2 = timestamped(env, second, lambda e: e[1])
    fired = s1.connect(s2).key_by(lambda e: e[0], lambda e: e[0]).process(EmitAtTimer())
    out = run(fired.process(NotLate()))
    # timers are de-duplicated per (key, timestamp); each fires once, before its watermark moves on
    expected = {((k, t + 5), t + 5, True) for k, t in first + second}
    assert Counter(out) == Counter(expected)


EVEN_ODD = OutputTag("odd")


class RouteOdd(CoProcessFunction):
    def process_element1(self, value, ctx):
        if value % 2:
            ctx.output(EVEN_ODD, ("odd", value))
        else:
            yield ("even", value)

    def process_element2(self, value, ctx):
        yield ("word", value)


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_co_process_side_output_gets_what_ctx_output_sent(parallelism):
    env = env_with(parallelism)
    main = env.from_collection(NUMBERS).connect(env.from_collection(WORDS)).process(RouteOdd())
    side = main.get_side_output(EVEN_ODD)
    out = run(main.union(side))
    expected = [("even", n) for n in NUMBERS if n % 2 == 0] + [("odd", n) for n in NUMBERS if n % 2]
    expected += [("word", w) for w in WORDS]
    assert Counter(out) == Counter(expected)


class KeyedNoop(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        yield value

    def process_element2(self, value, ctx):
        yield value


def test_keyed_co_process_function_on_unkeyed_streams_is_rejected():
    env = env_with(1)
    connected = env.from_collection([1]).connect(env.from_collection([2]))
    with pytest.raises(TypeError, match="KeyedCoProcessFunction needs both connected streams keyed"):
        connected.process(KeyedNoop())


class TimerWithoutKey(CoProcessFunction):
    def process_element1(self, value, ctx):
        ctx.timer_service().register_event_time_timer(100)
        yield value

    def process_element2(self, value, ctx):
        yield value


def test_timer_on_non_keyed_co_process_fails_naming_the_operator():
    env = env_with(1)
    stream = env.from_collection([1, 2]).connect(env.from_collection([3])).process(TimerWithoutKey())
    with pytest.raises(Exception, match="operator 'Co-Process': timers need a keyed stream"):
        run(stream)
