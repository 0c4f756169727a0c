"""BATCH mode on local Spark, operator by operator, against plain-Python references."""

import random
from collections import Counter, defaultdict

import pytest
from strom.common import Types
from strom.common.time import Duration
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import (
    CoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    ProcessJoinFunction,
)
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.window import (
    CountTumblingWindowAssigner,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

from tests.batch.batch_testing import multiset, run_batch

pytestmark = pytest.mark.usefixtures("spark")

rng = random.Random(7)
# (key, value, timestamp ms), timestamps shuffled: BATCH mode sorts each key's input by time
EVENTS = [(f"k{rng.randint(0, 5)}", rng.randint(1, 100), rng.randint(0, 60_000)) for _ in range(400)]


def timed(env, events=EVENTS):
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(60)).with_timestamp_assigner(
        lambda e, _ts: e[2]
    )
    return env.from_collection(events).assign_timestamps_and_watermarks(strategy)


def test_rolling_sum_emits_each_keys_final_value_once():
    got = run_batch(lambda env: env.from_collection(EVENTS).map(lambda e: (e[0], e[1])).key_by(lambda t: t[0]).sum(1))
    expected = Counter()
    for k, v, _ in EVENTS:
        expected[k] += v
    assert sorted(got) == sorted(expected.items())


def test_reduce_folds_each_key_in_timestamp_order():
    """A non-commutative reduce (keep the later-stamped value's id) sees records sorted by time."""
    events = [(f"k{i % 3}", i, (i * 7919) % 1000) for i in range(90)]
    got = run_batch(lambda env: timed(env, events).key_by(lambda e: e[0]).reduce(lambda a, b: b))
    latest = {}
    for e in sorted(events, key=lambda e: e[2]):
        latest[e[0]] = e
    assert sorted(got) == sorted(latest.values())


def test_tumbling_event_time_windows_sum_per_key_and_window():
    got = run_batch(
        lambda env: timed(env)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
        .reduce(lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])))
        .map(lambda e: (e[0], e[1]))
    )
    expected = defaultdict(int)
    for k, v, ts in EVENTS:
        expected[(k, ts // 10_000)] += v
    assert multiset(got) == multiset([(k, s) for (k, _w), s in expected.items()])


def test_sliding_windows_count_every_window_an_event_falls_in():
    size, slide = 10_000, 5_000

    def build(env):
        return (
            timed(env)
            .key_by(lambda e: e[0])
            .window(SlidingEventTimeWindows.of(Duration.of_millis(size), Duration.of_millis(slide)))
            .process(_CountWithWindow())
        )

    expected = Counter()
    for k, _v, ts in EVENTS:
        last_start = ts - ts % slide
        for start in range(last_start, ts - size, -slide):
            expected[(k, start, start + size)] += 1
    assert multiset(run_batch(build)) == multiset([(k, s, e, n) for (k, s, e), n in expected.items()])


def test_session_windows_merge_per_key():
    gap = 3_000

    def build(env):
        return timed(env).key_by(lambda e: e[0]).window(EventTimeSessionWindows.with_gap(gap)).process(
            _CountWithWindow()
        )

    expected = []
    by_key = defaultdict(list)
    for k, _v, ts in EVENTS:
        by_key[k].append(ts)
    for k, stamps in by_key.items():
        stamps.sort()
        start, end, n = stamps[0], stamps[0] + gap, 0
        for ts in stamps:
            if ts >= end:
                expected.append((k, start, end, n))
                start, n = ts, 0
            end = max(end, ts + gap)
            n += 1
        expected.append((k, start, end, n))
    assert multiset(run_batch(build)) == multiset(expected)


def test_count_windows_group_each_keys_records_in_input_order():
    events = [(f"k{i % 4}", i) for i in range(50)]
    got = run_batch(
        lambda env: env.from_collection(events)
        .key_by(lambda e: e[0])
        .window(CountTumblingWindowAssigner.of(3))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    expected = []
    for k in {e[0] for e in events}:
        values = [v for kk, v in events if kk == k]
        expected += [(k, sum(values[i : i + 3])) for i in range(0, len(values) - len(values) % 3, 3)]
    assert multiset(got) == multiset(expected)


class _CountWithWindow:
    def process(self, key, context, elements):
        yield (key, context.window().start, context.window().end, len(list(elements)))


# ProcessWindowFunction subclass made lazily: the import order of the window module stays the user's
from strom.datastream.window import ProcessWindowFunction  # noqa: E402

_CountWithWindow = type("_CountWithWindow", (ProcessWindowFunction,), dict(_CountWithWindow.__dict__))


class LastSeenTimer(KeyedProcessFunction):
    """Counts a key's records in state; an event-time timer 1 s after each record reports the count."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(value[2] + 1_000)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp, self.count.value())


def test_keyed_process_timers_fire_at_the_end_in_timestamp_order_with_final_state():
    """Flink's batch semantics: event time stands still while input lasts, then sweeps to +inf,
    so every timer fires once, after all of its key's records, and sees the final count."""
    got = run_batch(lambda env: timed(env).key_by(lambda e: e[0]).process(LastSeenTimer()))
    counts = Counter(k for k, _, _ in EVENTS)
    timers = {(k, ts + 1_000) for k, _, ts in EVENTS}
    assert sorted(got) == sorted((k, t, counts[k]) for k, t in timers)


class ProcessingTimeAlarm(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 10)
        yield value


def test_processing_time_timer_fails_the_job_naming_the_operator():
    from strom.runtime.local_executor import JobExecutionError

    with pytest.raises(JobExecutionError, match="operator 'KeyedProcess' registered a processing-time timer"):
        run_batch(lambda env: env.from_collection(EVENTS).key_by(lambda e: e[0]).process(ProcessingTimeAlarm()))


def test_union_of_three_streams_and_keyed_count():
    a, b, c = EVENTS[:100], EVENTS[100:250], EVENTS[250:]
    got = run_batch(
        lambda env: env.from_collection(a)
        .union(env.from_collection(b), env.from_collection(c).map(lambda e: e))
        .map(lambda e: (e[0], 1))
        .key_by(lambda t: t[0])
        .sum(1)
    )
    assert sorted(got) == sorted(Counter(e[0] for e in EVENTS).items())


class Enrich(CoProcessFunction):
    """Keyed co-process: names (input 2) join amounts (input 1) per key; amounts before their name wait."""

    def open(self, runtime_context):
        self.name = runtime_context.get_state(ValueStateDescriptor("name", Types.STRING()))
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element1(self, value, ctx):
        self.total.update((self.total.value() or 0) + value[1])
        ctx.timer_service().register_event_time_timer(10**12)

    def process_element2(self, value, ctx):
        self.name.update(value[1])

    def on_timer(self, timestamp, ctx):
        yield (self.name.value(), self.total.value())


def test_keyed_connect_co_process_with_state_from_both_inputs():
    names = [(f"k{i}", f"name-{i}", 0) for i in range(6)]
    got = run_batch(
        lambda env: timed(env)
        .connect(timed(env, names))
        .key_by(lambda e: e[0], lambda n: n[0])
        .process(Enrich())
    )
    totals = Counter()
    for k, v, _ in EVENTS:
        totals[k] += v
    assert sorted(got) == sorted((f"name-{k[1:]}", t) for k, t in totals.items())


class Pair(ProcessJoinFunction):
    def process_element(self, left, right, ctx):
        yield (left[1], right[1])


def test_interval_join_equals_nested_loop_join():
    left = [(f"k{i % 3}", f"l{i}", i * 10) for i in range(60)]
    right = [(f"k{i % 3}", f"r{i}", i * 7) for i in range(80)]
    got = run_batch(
        lambda env: timed(env, left)
        .key_by(lambda e: e[0])
        .interval_join(timed(env, right).key_by(lambda e: e[0]))
        .between(Duration.of_millis(-15), Duration.of_millis(20))
        .process(Pair())
    )
    expected = [(l[1], r[1]) for l in left for r in right if l[0] == r[0] and -15 <= r[2] - l[2] <= 20]
    assert multiset(got) == multiset(expected)


def test_window_join_pairs_equal_keys_in_the_same_window():
    left = [(f"k{i % 4}", i, i * 300) for i in range(50)]
    right = [(f"k{i % 4}", -i, i * 450) for i in range(40)]
    got = run_batch(
        lambda env: timed(env, left)
        .join(timed(env, right))
        .where(lambda e: e[0])
        .equal_to(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(3)))
        .apply(lambda a, b: (a[1], b[1]))
    )
    expected = [(l[1], r[1]) for l in left for r in right if l[0] == r[0] and l[2] // 3000 == r[2] // 3000]
    assert multiset(got) == multiset(expected)


SMALL = OutputTag("small", Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()]))


class SplitBySize(ProcessFunction):
    def process_element(self, value, ctx):
        if value[1] < 50:
            yield SMALL, value
        else:
            yield value


def test_side_outputs_reach_their_own_consumers():
    def build(env):
        main = env.from_collection(EVENTS).process(SplitBySize())
        return main.map(lambda e: ("big", e[1])).union(main.get_side_output(SMALL).map(lambda e: ("small", e[1])))

    expected = [("small" if v < 50 else "big", v) for _, v, _ in EVENTS]
    assert multiset(run_batch(build)) == multiset(expected)


def test_rebalance_rescale_and_global_keep_every_record():
    def build(env):
        return (
            env.from_sequence(1, 500)
            .rebalance()
            .map(lambda x: x * 2)
            .set_parallelism(3)
            .rescale()
            .filter(lambda x: x % 3 != 0)
            .set_parallelism(2)
            .global_()
            .map(lambda x: x + 1)
            .set_parallelism(1)
        )

    assert sorted(run_batch(build)) == [x * 2 + 1 for x in range(1, 501) if (x * 2) % 3 != 0]


def test_hash_partitioning_puts_each_key_on_the_subtask_of_its_key_group():
    """Keys land where STREAMING mode puts them: key group = stable_hash % max parallelism,
    subtask = key group * parallelism // max parallelism."""
    from strom.common.key_groups import stable_hash

    class WhereAmI(KeyedProcessFunction):
        def open(self, runtime_context):
            self.index = runtime_context.get_index_of_this_subtask()

        def process_element(self, value, ctx):
            yield (value, self.index)

    got = run_batch(lambda env: env.from_collection([f"key-{i}" for i in range(40)]).key_by(lambda k: k).process(
        WhereAmI()
    ), parallelism=3)
    assert sorted(got) == sorted((f"key-{i}", (stable_hash(f"key-{i}") % 128) * 3 // 128) for i in range(40))


def test_a_failing_user_function_fails_the_job_with_its_error():
    from strom.runtime.local_executor import JobExecutionError

    def explode(x):
        if x == 7:
            raise ValueError("seven is not allowed")
        return x

    with pytest.raises(JobExecutionError, match="seven is not allowed"):
        run_batch(lambda env: env.from_sequence(1, 10).map(explode))


def test_keyed_broadcast_state_is_built_from_the_whole_broadcast_side_first():
    from strom.datastream import KeyedBroadcastProcessFunction
    from strom.datastream.state import MapStateDescriptor

    rules = MapStateDescriptor("rules", Types.STRING(), Types.INT())
    factors = [("k0", 2), ("k1", 3), ("k3", 5)]

    class Scale(KeyedBroadcastProcessFunction):
        def process_element(self, value, ctx):
            factor = ctx.get_broadcast_state(rules).get(value[0])
            yield (value[0], value[1] * factor) if factor is not None else ("unmatched", value[1])

        def process_broadcast_element(self, value, ctx):
            ctx.get_broadcast_state(rules).put(value[0], value[1])

    got = run_batch(
        lambda env: env.from_collection(EVENTS)
        .key_by(lambda e: e[0])
        .connect(env.from_collection(factors).broadcast(rules))
        .process(Scale())
    )
    table = dict(factors)
    expected = [(k, v * table[k]) if k in table else ("unmatched", v) for k, v, _ in EVENTS]
    assert multiset(got) == multiset(expected)


def test_bounded_datagen_and_number_sequence_sources_split_over_subtasks():
    from strom.datastream.connectors.datagen import DataGeneratorSource

    got = run_batch(
        lambda env: env.from_source(DataGeneratorSource(lambda i: i * i, 1000), WatermarkStrategy.no_watermarks(), "g")
        .union(env.from_sequence(1, 300).map(lambda x: -x))
    , parallelism=3)
    assert sorted(got) == sorted([i * i for i in range(1000)] + [-x for x in range(1, 301)])


def test_file_source_to_file_sink_written_from_the_executors(tmp_path):
    from strom.common import Encoder
    from strom.datastream.connectors.file_system import FileSink, FileSource, StreamFormat

    (tmp_path / "in").mkdir()
    lines = [f"{w} {i}" for i, w in enumerate(["to", "be", "or", "not", "to", "be"] * 30)]
    for part in range(3):
        (tmp_path / "in" / f"part-{part}.txt").write_text("\n".join(lines[part::3]) + "\n")
    out = tmp_path / "out"

    def build(env):
        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path / "in")).build()
        counts = (
            env.from_source(source, WatermarkStrategy.no_watermarks(), "lines")
            .map(lambda l: (l.split()[0], 1))
            .key_by(lambda t: t[0])
            .sum(1)
        )
        counts.sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder()).build())
        return counts

    from strom.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    build(env)
    env.execute("files")
    written = [
        line
        for path in out.rglob("*")
        if path.is_file() and not path.name.startswith(".")
        for line in path.read_text().splitlines()
    ]
    assert sorted(written) == sorted(str(t) for t in Counter(l.split()[0] for l in lines).items())
