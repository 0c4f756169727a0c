"""Processing-time windows, driven by a manual clock so that nothing depends on timing.

The operator runs in a small harness: records go in through process_batch, time moves
only when the test advances the clock, and due timers run as the task's mailbox would
run them. Expected results are computed in plain Python from the arrival times.
"""

from strom.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from strom.datastream.window import (
    ContinuousProcessingTimeTrigger,
    ProcessingTimeSessionWindows,
    SlidingProcessingTimeWindows,
    TumblingProcessingTimeWindows,
)
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.window_operator import WindowOperator
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService
from strom.testing import collect


class CapturingOutput(Output):
    def __init__(self) -> None:
        self.records: list = []

    def collect(self, values, timestamps):
        self.records += list(zip(values, timestamps, strict=True))

    def emit_watermark(self, timestamp):
        pass


class Harness:
    def __init__(self, stream, start_ms: int) -> None:
        t = stream._t
        self.clock = ManualClock(start_ms)
        self.pts = ProcessingTimeService(self.clock)
        self.op = WindowOperator(t.operator, key_selectors=t.key_selectors)
        self.out = CapturingOutput()
        ctx = OperatorContext(
            task_name="test", operator_name=t.name, operator_uid="window", subtask_index=0, parallelism=1,
            max_parallelism=128, attempt=0, config=None, processing_time_service=self.pts, metrics=MetricGroup(),
        )
        self.op.setup(ctx, self.out)
        self.op.open()

    def send(self, *values) -> None:
        self.op.process_batch(list(values), None, None)

    def advance_to(self, ms: int) -> list:
        self.clock.ms = ms
        self.pts.run_due()
        got, self.out.records = self.out.records, []
        return got


class Span(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        yield (key, w.start, w.end, sum(e[1] for e in elements))


def keyed(env):
    return env.from_collection([("a", 0)]).key_by(lambda e: e[0])


def reference(arrivals, windows_of):
    """arrivals: [(now, key, value)] -> {(key, start, end): sum}."""
    sums: dict = {}
    for now, key, value in arrivals:
        for start, end in windows_of(now):
            sums[(key, start, end)] = sums.get((key, start, end), 0) + value
    return sums


def test_tumbling_processing_time_windows_fire_when_the_clock_passes_their_end():
    env = StreamExecutionEnvironment.get_execution_environment()
    h = Harness(keyed(env).window(TumblingProcessingTimeWindows.of(100)).process(Span()), 1_000)
    arrivals = [(1_000, "a", 1), (1_050, "b", 2), (1_098, "a", 3), (1_100, "a", 4), (1_250, "b", 5)]
    fired = []
    for now, key, value in arrivals:
        fired += h.advance_to(now)
        h.send((key, value))
    fired += h.advance_to(1_400)
    want = reference(arrivals, lambda now: [(now - now % 100, now - now % 100 + 100)])
    assert sorted(fired) == sorted(((k, s, e, v), e - 1) for (k, s, e), v in want.items())


def test_sliding_processing_time_reduce_runs_on_the_fast_path():
    env = StreamExecutionEnvironment.get_execution_environment()
    h = Harness(
        keyed(env).window(SlidingProcessingTimeWindows.of(100, 50)).reduce(lambda a, b: (a[0], a[1] + b[1])), 1_000
    )
    assert h.op.fast is not None
    arrivals = [(1_010, "a", 1), (1_060, "a", 2), (1_120, "a", 4), (1_130, "b", 8)]
    fired = []
    for now, key, value in arrivals:
        fired += h.advance_to(now)
        h.send((key, value))
    fired += h.advance_to(2_000)

    def windows_of(now):
        last = now - now % 50
        return [(s, s + 100) for s in (last, last - 50)]

    want = reference(arrivals, windows_of)
    assert sorted(fired) == sorted(((k, v), e - 1) for (k, s, e), v in want.items())


def test_processing_time_sessions_merge_and_fire_after_the_gap():
    env = StreamExecutionEnvironment.get_execution_environment()
    h = Harness(keyed(env).window(ProcessingTimeSessionWindows.with_gap(30)).process(Span()), 0)
    h.advance_to(100)
    h.send(("a", 1))
    assert h.advance_to(120) == []
    h.send(("a", 2), ("b", 7))  # a: [100,130) + [120,150) -> [100,150)
    assert h.advance_to(148) == []
    assert sorted(h.advance_to(149)) == [(("a", 100, 150, 3), 149), (("b", 120, 150, 7), 149)]
    h.advance_to(200)
    h.send(("a", 4))
    assert h.advance_to(300) == [(("a", 200, 230, 4), 229)]


def test_continuous_processing_time_trigger_fires_every_interval():
    """Window [0,100), interval 30: first element at 10 -> fire at 30 (10 - 10 % 30 + 30),
    then 60, 90 and min(120, 99) = 99."""
    env = StreamExecutionEnvironment.get_execution_environment()
    h = Harness(
        keyed(env).window(TumblingProcessingTimeWindows.of(100)).trigger(ContinuousProcessingTimeTrigger.of(30))
        .process(Span()),
        10,
    )
    h.send(("a", 1))
    got = [(t, r[3]) for r, t in h.advance_to(30)]
    h.send(("a", 2))
    got += [(t, r[3]) for r, t in h.advance_to(65)]
    got += [(t, r[3]) for r, t in h.advance_to(200)]
    # every firing is stamped with the window's max timestamp
    assert got == [(99, 1), (99, 3), (99, 3), (99, 3)]


def test_processing_time_window_job_emits_well_formed_windows():
    """End to end on the wall clock: only structure is asserted (windows still open when the
    bounded input ends are not fired, as in Flink)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    data = [("k", i) for i in range(200)]
    out = env.from_collection(data).key_by(lambda e: e[0]).window(TumblingProcessingTimeWindows.of(50)).process(
        Span()
    )
    results = collect(out)
    assert sum(r[3] for r in results) <= sum(range(200))
    assert all(r[2] - r[1] == 50 and r[1] % 50 == 0 for r in results)
