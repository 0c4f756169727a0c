"""Interval join: results equal a nested-loop join; late elements go to their side outputs;
buffers are cleaned once nothing can join them any more (Flink's IntervalJoinOperator rules)."""

import random
import threading
import time
from collections import Counter

import pytest
from strom.common.time import MAX_WATERMARK, Duration
from strom.common.watermark_strategy import Watermark, WatermarkGenerator, WatermarkStrategy
from strom.connectors.base import Boundedness, Source, SourceReader
from strom.datastream import OutputTag, ProcessFunction, ProcessJoinFunction, StreamExecutionEnvironment
from strom.datastream.functions import as_key_selector
from strom.graph.transformations import OperatorDescriptor
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.interval_join import IntervalJoinOperator
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

PARALLELISMS = [1, 2]


def run(stream):
    with stream.execute_and_collect() as results:
        return list(results)


def env_with(parallelism):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def keyed(env, events):
    """(key, id, ts) events with ascending timestamps, keyed by key."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _ts: e[2])
    return env.from_collection(events).assign_timestamps_and_watermarks(strategy).key_by(lambda e: e[0])


def random_side(rng, name, n):
    ts = 0
    out = []
    for i in range(n):
        ts += rng.randint(0, 4)  # repeated timestamps included
        out.append((f"k{rng.randint(0, 3)}", f"{name}{i}", ts))
    return out


def reference_join(left, right, lower, upper):
    """Every pair of equal key with right_ts - left_ts in [lower, upper], stamped with the later timestamp."""
    return [
        (l, r, max(l[2], r[2]))
        for l in left
        for r in right
        if l[0] == r[0] and lower <= r[2] - l[2] <= upper
    ]


class PairWithTimestamps(ProcessJoinFunction):
    def process_element(self, left, right, ctx):
        assert ctx.get_left_timestamp() == ctx.left_timestamp() == left[2]
        assert ctx.get_right_timestamp() == right[2]
        yield (left, right, ctx.timestamp())


class RecordTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        assert ctx.timestamp() == value[2], "the record's timestamp is the later of the pair's"
        yield value


BOUNDS = [(-5, 5), (0, 8), (-10, -3), (2, 9), (0, 0), (-3, 0)]


@pytest.mark.parametrize("parallelism", PARALLELISMS)
@pytest.mark.parametrize("lower,upper", BOUNDS)
def test_interval_join_equals_nested_loop_join(parallelism, lower, upper):
    rng = random.Random(1000 * lower + upper)
    left, right = random_side(rng, "L", 80), random_side(rng, "R", 80)
    env = env_with(parallelism)
    joined = keyed(env, left).interval_join(keyed(env, right)).between(lower, upper).process(PairWithTimestamps())
    out = run(joined.process(RecordTimestamp()))
    assert Counter(out) == Counter(reference_join(left, right, lower, upper))


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_exclusive_bounds_leave_out_pairs_exactly_on_the_bounds(parallelism):
    rng = random.Random(7)
    left, right = random_side(rng, "L", 60), random_side(rng, "R", 60)
    env = env_with(parallelism)
    joined = (
        keyed(env, left)
        .interval_join(keyed(env, right))
        .between(Duration.of_millis(-4), Duration.of_millis(4))
        .lower_bound_exclusive()
        .upper_bound_exclusive()
        .process(PairWithTimestamps())
    )
    assert Counter(run(joined)) == Counter(reference_join(left, right, -3, 3))


def test_elements_without_timestamps_fail_the_job_with_a_clear_error():
    env = env_with(1)
    left = env.from_collection([("k", 1)]).key_by(lambda e: e[0])
    right = env.from_collection([("k", 2)]).key_by(lambda e: e[0])
    joined = left.interval_join(right).between(-1, 1).process(PairWithTimestamps())
    with pytest.raises(Exception, match="has no timestamp; an interval join needs event-time timestamps"):
        run(joined)


# -- late data, end to end: sources held back until the join has seen both watermarks --------------
class EveryEventIsAWatermark(WatermarkGenerator):
    """Punctuated: after each event, the watermark is that event's timestamp."""

    def on_event(self, event, event_timestamp, output):
        output.emit_watermark(Watermark(event_timestamp))


GATES: dict[str, threading.Event] = {}


class GatedSource(Source):
    """Emits `before`, waits until GATES[gate] is set (30 s deadline), then emits `after`."""

    def __init__(self, gate, before, after):
        self.gate, self.before, self.after = gate, before, after

    def get_boundedness(self):
        return Boundedness.BOUNDED

    @property
    def max_parallelism(self):
        return 1

    def create_reader(self, context):
        return GatedReader(GATES[self.gate], self.before, self.after)


class GatedReader(SourceReader):
    def __init__(self, gate, before, after):
        self.gate, self.before, self.after = gate, list(before), list(after)
        self.deadline = time.monotonic() + 30

    def poll(self, max_records):
        if self.before:
            before, self.before = self.before, []
            return before
        if self.after is None:
            return None
        if not self.gate.wait(0.05):
            if time.monotonic() > self.deadline:
                raise TimeoutError("the interval join never joined the pair that opens the gate")
            return []
        after, self.after = self.after, None
        return after


class OpenGateOnPair(ProcessJoinFunction):
    def __init__(self, gate, trigger):
        self.gate, self.trigger = gate, trigger

    def process_element(self, left, right, ctx):
        if (left[1], right[1]) == self.trigger:
            GATES[self.gate].set()
        yield (left[1], right[1], ctx.timestamp())


LEFT_LATE = OutputTag("left-late")
RIGHT_LATE = OutputTag("right-late")


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_elements_behind_the_watermark_go_to_the_late_side_outputs(parallelism):
    """Both inputs send ts 100 then ts 101, each followed by a watermark equal to its timestamp.
    The pair (L101, R101) can only be joined after both watermarks 100 arrived, so from then on the
    operator's event time is at least 100: L50 and R60, sent only after that pair, are late.
    L150 and R155 are not (the other side's watermark is at most 101 before they arrive) and join."""
    gate = f"late-{parallelism}"
    GATES[gate] = threading.Event()
    env = env_with(parallelism)
    strategy = WatermarkStrategy.for_generator(lambda ctx: EveryEventIsAWatermark()).with_timestamp_assigner(
        lambda e, _ts: e[2]
    )

    def side(name, before, after):
        src = GatedSource(gate, before, after)
        return env.from_source(src, strategy, f"{name} source").key_by(lambda e: e[0])

    left = side("left", [("k", "L100", 100), ("k", "L101", 101)], [("k", "L50", 50), ("k", "L150", 150)])
    right = side("right", [("k", "R100", 100), ("k", "R101", 101)], [("k", "R60", 60), ("k", "R155", 155)])
    joined = (
        left.interval_join(right)
        .between(-10, 10)
        .side_output_left_late_data(LEFT_LATE)
        .side_output_right_late_data(RIGHT_LATE)
        .process(OpenGateOnPair(gate, ("L101", "R101")))
    )
    late = joined.get_side_output(LEFT_LATE).map(lambda e: ("left late", e[1])).union(
        joined.get_side_output(RIGHT_LATE).map(lambda e: ("right late", e[1]))
    )
    out = run(joined.union(late))
    before = [("L100", 100), ("L101", 101)], [("R100", 100), ("R101", 101)]
    expected = [(lid, rid, max(lt, rt)) for lid, lt in before[0] for rid, rt in before[1]]
    expected += [("L150", "R155", 155), ("left late", "L50"), ("right late", "R60")]
    assert Counter(out) == Counter(expected)


# -- the operator alone, driven step by step ----------------------------------------------------
class Recorder(Output):
    def __init__(self):
        self.main, self.side, self.watermarks = [], {}, []

    def collect(self, values, timestamps):
        self.main.extend(zip(values, timestamps, strict=True))

    def collect_side(self, tag, values, timestamps):
        self.side.setdefault(tag.tag_id, []).extend(zip(values, timestamps, strict=True))

    def emit_watermark(self, timestamp):
        self.watermarks.append(timestamp)


class PairIds(ProcessJoinFunction):
    def process_element(self, left, right, ctx):
        yield (left[1], right[1])


def harness(lower, upper, left_late=None, right_late=None):
    params = {"lower": lower, "upper": upper, "left_late": left_late, "right_late": right_late, "output_type": None}
    key = as_key_selector(lambda e: e[0])
    op = IntervalJoinOperator(OperatorDescriptor("interval_join", PairIds(), params), key_selectors=(key, key))
    ctx = OperatorContext(
        task_name="join",
        operator_name="IntervalJoin",
        operator_uid="join",
        subtask_index=0,
        parallelism=1,
        max_parallelism=128,
        attempt=0,
        config=None,
        processing_time_service=ProcessingTimeService(ManualClock()),
        metrics=MetricGroup(),
    )
    out = Recorder()
    op.setup(ctx, out)
    op.open()
    return op, out


def left(op, key, ident, ts):
    op.process_batch1([(key, ident)], [ts], None)


def right(op, key, ident, ts):
    op.process_batch2([(key, ident)], [ts], None)


def watermark(op, ts):
    op.process_watermark1(ts)
    op.process_watermark2(ts)


def buffered(op, side):
    table = op.backend.tables[f"_interval_join_{side}_buffer"].maps.get(None, {})
    return sorted(ident for buckets in table.values() for values in buckets.values() for _, ident in values)


def test_late_elements_are_dropped_or_side_output_and_never_joined():
    """between(-2, 3). L1@10 and R1@12 join at 12. Watermark 14 passes L1's cleanup time (10 + 3 = 13)
    and R1's (12 + 2 = 14). Then L_late@13 and R_late@11 are behind the watermark: side outputs only.
    L2@15 and R2@16 are on time and join at 16."""
    for tags in [(LEFT_LATE, RIGHT_LATE), (None, None)]:
        op, out = harness(-2, 3, *tags)
        left(op, "k", "L1", 10)
        right(op, "k", "R1", 12)
        watermark(op, 14)
        assert buffered(op, "left") == [] and buffered(op, "right") == []
        left(op, "k", "L_late", 13)
        right(op, "k", "R_late", 11)
        left(op, "k", "L2", 15)
        right(op, "k", "R2", 16)
        assert out.main == [(("L1", "R1"), 12), (("L2", "R2"), 16)]
        if tags[0] is not None:
            assert out.side == {"left-late": [(("k", "L_late"), 13)], "right-late": [(("k", "R_late"), 11)]}
        else:
            assert out.side == {}
        assert out.watermarks == [14]


@pytest.mark.parametrize("lower,upper", [(-5, 5), (0, 8), (-10, -3), (2, 9), (0, 0)])
def test_buffers_keep_exactly_the_elements_that_can_still_join(lower, upper):
    """Flink's rule: a left element at t stays until the watermark reaches t + upper (t when upper <= 0),
    a right element at t until t - lower (t when lower >= 0)."""
    rng = random.Random(lower * 31 + upper)
    op, out = harness(lower, upper)
    lefts, rights = random_side(rng, "L", 50), random_side(rng, "R", 50)
    for e in lefts:
        left(op, e[0], e[1], e[2])
    for e in rights:
        right(op, e[0], e[1], e[2])
    horizon = max(e[2] for e in lefts + rights)
    for wm in range(0, horizon + 20, 3):
        watermark(op, wm)
        assert buffered(op, "left") == sorted(e[1] for e in lefts if e[2] + max(upper, 0) > wm)
        assert buffered(op, "right") == sorted(e[1] for e in rights if e[2] - min(lower, 0) > wm)
    watermark(op, MAX_WATERMARK)
    assert buffered(op, "left") == [] == buffered(op, "right")
    expected = [(l[1], r[1]) for l, r, _ in reference_join(lefts, rights, lower, upper)]
    assert Counter(v for v, _ in out.main) == Counter(expected)
