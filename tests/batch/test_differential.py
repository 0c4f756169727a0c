"""Differential tests: the same bounded program in STREAMING mode (the engine, in-process) and in
BATCH mode (local Spark) gives the same results, order-insensitively.

1. Every example in examples/*.py, with its print sinks redirected to files. The one documented
   difference is Flink's: a rolling reduction emits every running value in STREAMING mode and each
   key's final value in BATCH mode, so for such an example BATCH equals STREAMING's last value per key.
2. Generated programs over random bounded inputs (hypothesis), checked against a plain-Python
   reference in both modes.
"""

import ast
import glob
import os
import runpy
import uuid
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strom.common import Configuration, Types
from strom.common.time import Duration
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import (
    AggregateFunction,
    DataStream,
    KeyedProcessFunction,
    RuntimeExecutionMode,
    SinkFunction,
    StreamExecutionEnvironment,
)
from strom.datastream import stream_execution_environment as see
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.window import (
    EventTimeSessionWindows,
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

from tests.batch.batch_testing import final_per_key, multiset, run_in

pytestmark = pytest.mark.usefixtures("spark")

EXAMPLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
EXAMPLES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(EXAMPLES_DIR, "*.py")))
# examples whose output is a rolling reduction keyed by the first field of each printed tuple
ROLLING = {"word_count"}


class LinesToDirectory(SinkFunction):
    """Each subtask appends repr(value) lines to its own file in `directory` (works on Spark executors)."""

    def __init__(self, directory):
        self.directory = directory

    def open(self, runtime_context):
        self.file = open(os.path.join(self.directory, f"{uuid.uuid4().hex}.txt"), "w")  # noqa: SIM115

    def invoke(self, value, context):
        self.file.write(repr(value) + "\n")

    def close(self):
        self.file.close()


def read_lines(directory):
    lines = []
    for path in glob.glob(os.path.join(directory, "*.txt")):
        with open(path) as f:
            lines += f.read().splitlines()
    return lines


def run_example(name, mode, directory, monkeypatch):
    """Run examples/<name>.py's main in `mode`, its print() sinks writing into `directory`."""
    module = runpy.run_path(os.path.join(EXAMPLES_DIR, f"{name}.py"), run_name=f"strom_example_{name}")
    main = module.get("main") or (lambda: module["word_count"](None, None))
    monkeypatch.setattr(DataStream, "print", lambda self, *a: self.add_sink(LinesToDirectory(directory)))
    # the example may pin a mode in code; the test decides it through the context configuration
    monkeypatch.setattr(StreamExecutionEnvironment, "set_runtime_mode", lambda self, mode: self)
    see.set_context(Configuration({"execution.runtime-mode": mode}))
    try:
        main()
    finally:
        see.set_context(None)
    return read_lines(directory)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_gives_the_same_results_in_streaming_and_batch_mode(name, tmp_path, monkeypatch):
    (tmp_path / "s").mkdir()
    (tmp_path / "b").mkdir()
    streaming = run_example(name, "STREAMING", str(tmp_path / "s"), monkeypatch)
    batch = run_example(name, "BATCH", str(tmp_path / "b"), monkeypatch)
    assert streaming, f"example {name} printed nothing"
    if name in ROLLING:
        streaming = [repr(v) for v in final_per_key([ast.literal_eval(s) for s in streaming], key=lambda t: t[0])]
    assert Counter(batch) == Counter(streaming)


# -- generated programs ---------------------------------------------------------------------------------
END = 10**12  # beyond every timestamp: a timer there fires at the end of input in both modes


class CountAndSum(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + 1, acc[1] + value[1])

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class WithBounds(ProcessWindowFunction):
    def process(self, key, context, elements):
        for e in elements:
            yield (key, context.window().start, context.window().end, e)


class TotalAtEnd(KeyedProcessFunction):
    """Keyed state summed per key; one event-time timer at END reports it."""

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        self.total.update((self.total.value() or 0) + value[1])
        ctx.timer_service().register_event_time_timer(END)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), self.total.value())


def windows_of(kind, ts, size, slide):
    if kind == "tumbling":
        return [(ts - ts % size, ts - ts % size + size)]
    last = ts - ts % slide
    return [(s, s + size) for s in range(last, ts - size, -slide)]


def reference(program, events):
    pre_mul, pre_mod, keyed, size, slide = program
    events = [(k, v * pre_mul, ts) for k, v, ts in events if v % pre_mod != 0]
    if keyed == "total":
        totals = Counter()
        for k, v, _ in events:
            totals[k] += v
        return list(totals.items())
    if keyed in ("tumbling", "sliding"):
        acc = defaultdict(lambda: (0, 0))
        for k, v, ts in events:
            for w in windows_of(keyed, ts, size, slide):
                n, s = acc[(k, w)]
                acc[(k, w)] = (n + 1, s + v)
        return [(k, w[0], w[1], r) for (k, w), r in acc.items()]
    # sessions with gap `size`
    out = []
    by_key = defaultdict(list)
    for k, v, ts in events:
        by_key[k].append((ts, v))
    for k, items in by_key.items():
        items.sort()
        start, end, n, s = items[0][0], items[0][0] + size, 0, 0
        for ts, v in items:
            # Flink's TimeWindow.intersects: [a, b) and [b, c) touch and merge into one session
            if ts > end:
                out.append((k, start, end, (n, s)))
                start, n, s = ts, 0, 0
            end = max(end, ts + size)
            n, s = n + 1, s + v
        out.append((k, start, end, (n, s)))
    return out


def build_program(program, events):
    pre_mul, pre_mod, keyed, size, slide = program

    def build(env):
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(50)).with_timestamp_assigner(
            lambda e, _ts: e[2]
        )
        # timestamps ascend in the input, so no record is ever late in STREAMING mode either
        ds = (
            env.from_collection(events)
            .assign_timestamps_and_watermarks(strategy)
            .filter(lambda e: e[1] % pre_mod != 0)
            .map(lambda e: (e[0], e[1] * pre_mul, e[2]))
        )
        keyed_stream = ds.key_by(lambda e: e[0])
        if keyed == "total":
            return keyed_stream.process(TotalAtEnd())
        if keyed == "tumbling":
            assigner = TumblingEventTimeWindows.of(Duration.of_millis(size))
        elif keyed == "sliding":
            assigner = SlidingEventTimeWindows.of(Duration.of_millis(size), Duration.of_millis(slide))
        else:
            assigner = EventTimeSessionWindows.with_gap(Duration.of_millis(size))
        return keyed_stream.window(assigner).aggregate(CountAndSum(), window_function=WithBounds())

    return build


event_lists = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.integers(-50, 50), st.integers(0, 400)),
    min_size=1,
    max_size=60,
).map(lambda es: sorted(es, key=lambda e: e[2]))
programs = st.tuples(
    st.integers(1, 3),  # map: multiply values
    st.integers(2, 5),  # filter: drop multiples
    st.sampled_from(["total", "tumbling", "sliding", "session"]),
    st.integers(10, 80),  # window size / session gap (ms)
    st.integers(5, 10),  # slide (ms), at most the size
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs, events=event_lists, parallelism=st.integers(1, 3))
# sessions that touch ([117, 154) and [154, 191)) merge, in both modes, as in Flink
@example(program=(1, 2, "session", 37, 5), events=[("a", 1, 117), ("a", 1, 154)], parallelism=1)
def test_generated_program_gives_the_reference_results_in_both_modes(program, events, parallelism):
    expected = multiset(reference(program, events))
    build = build_program(program, events)
    assert multiset(run_in(RuntimeExecutionMode.BATCH, build, parallelism=parallelism)) == expected
    assert multiset(run_in(RuntimeExecutionMode.STREAMING, build, parallelism=parallelism)) == expected
