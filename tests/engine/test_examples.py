"""The examples run with `strom run` and print what a plain-Python reference computes."""

import collections
import importlib
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
sys.path.insert(0, EXAMPLES)


def run_example(name: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "runtime-image"), EXAMPLES]))
    proc = subprocess.run(
        [sys.executable, "-m", "strom.cli", "run", os.path.join(EXAMPLES, f"{name}.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    # drop Flink's "N> " subtask prefix
    return sorted(re.sub(r"^\d+> ", "", line) for line in proc.stdout.splitlines() if line.strip())


def example(name: str):
    return importlib.import_module(name)


def test_word_count_prints_running_counts():
    wc = example("word_count")
    counts: collections.Counter[str] = collections.Counter()
    expected = []
    for line in wc.WORDS:
        for word in wc.split(line):
            counts[word] += 1
            expected.append(f"({word},{counts[word]})")  # PyFlink prints a Types.TUPLE record as Java's Tuple2
    assert run_example("word_count") == sorted(expected)


def windows_of(ts, size, slide):
    last = ts - ts % slide
    return [(s, s + size) for s in range(last, ts - size, -slide)]


def test_tumbling_windows_example():
    ex = example("tumbling_windows")
    counts: collections.Counter[tuple[str, int, int]] = collections.Counter()
    for user, _, ts in ex.VIEWS:
        start = ts - ts % ex.WINDOW_MS
        counts[(user, start, start + ex.WINDOW_MS)] += 1
    expected = sorted(f"{u} [{s}, {e}): {n} views" for (u, s, e), n in counts.items())
    assert run_example("tumbling_windows") == expected


def test_sliding_windows_example():
    ex = example("sliding_windows")
    acc: dict[tuple[str, int, int], list[float]] = collections.defaultdict(list)
    for sensor, ts, temp in ex.READINGS:
        for s, e in windows_of(ts, ex.SIZE_MS, ex.SLIDE_MS):
            acc[(sensor, s, e)].append(temp)
    expected = sorted(f"{k} [{s}, {e}): avg {sum(v) / len(v):.2f}" for (k, s, e), v in acc.items())
    assert run_example("sliding_windows") == expected


def test_session_windows_example():
    ex = example("session_windows")
    expected = []
    for user in {u for u, _ in ex.CLICKS}:
        times = sorted(t for u, t in ex.CLICKS if u == user)
        sessions = [[times[0]]]
        for t in times[1:]:
            if t < sessions[-1][-1] + ex.GAP_MS:
                sessions[-1].append(t)
            else:
                sessions.append([t])
        expected += [f"{user} session [{s[0]}, {s[-1] + ex.GAP_MS}): {len(s)} clicks" for s in sessions]
    assert run_example("session_windows") == sorted(expected)


def test_count_windows_example():
    ex = example("count_windows")
    expected = []
    for customer in {c for c, _ in ex.ORDERS}:
        amounts = [a for c, a in ex.ORDERS if c == customer]
        expected += [f"tumbling(3) {customer}: {sum(amounts[i:i + 3])}" for i in range(0, len(amounts) - 2, 3)]
        expected += [f"sliding(4, 2) {customer}: {sum(amounts[i:i + 4])}" for i in range(0, len(amounts) - 3, 2)]
    assert run_example("count_windows") == sorted(expected)


def test_event_time_timers_example():
    ex = example("event_time_timers")
    # reference: per sensor, its newest reading arms a timer; a timer fires when the watermark
    # (max seen - 1000 - 1, after every reading) passes it, or at the end of input
    last: dict[str, int] = {}
    timers: dict[str, int] = {}
    fired = []
    max_ts = None
    for sensor, ts, _ in ex.READINGS:
        if sensor in last and ts <= last[sensor]:
            continue
        last[sensor] = ts
        timers[sensor] = ts + ex.SILENCE_MS
        if max_ts is None or ts > max_ts:
            max_ts = ts
        wm = max_ts - 1000 - 1
        for s, t in sorted(timers.items(), key=lambda kv: kv[1]):
            if t <= wm:
                fired.append(f"sensor {s} silent since {last[s]} ms (timer at {t} ms)")
                del timers[s]
    fired += [f"sensor {s} silent since {last[s]} ms (timer at {t} ms)" for s, t in timers.items()]
    assert run_example("event_time_timers") == sorted(fired)


def test_state_access_example():
    ex = example("state_access")
    stats: dict[str, tuple[int, float]] = {}
    recent: dict[str, list[float]] = collections.defaultdict(list)
    merchants: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    expected = []
    for acc, merchant, amount in ex.TRANSACTIONS:
        count, total = stats.get(acc, (0, 0.0))
        if count and amount > 3 * total / count:
            expected.append(f"ALERT {acc}: {amount:.2f} at {merchant} (average {total / count:.2f})")
        stats[acc] = (count + 1, total + amount)
        recent[acc] = (recent[acc] + [amount])[-3:]
        merchants[acc][merchant] += 1
        expected.append(f"{acc}: n={count + 1} last3={recent[acc]} merchants={dict(sorted(merchants[acc].items()))}")
    assert run_example("state_access") == sorted(expected)


@pytest.mark.parametrize("name", ["word_count"])
def test_pyflink_program_runs_after_replacing_imports(name, tmp_path):
    """A PyFlink program text with `pyflink` replaced by `strom` runs unchanged."""
    pyflink_program = '''
from pyflink.common import Types, WatermarkStrategy, Duration, Time
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment, RuntimeExecutionMode
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext, ReduceFunction
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import TumblingEventTimeWindows


class TsAssigner(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Sum(ReduceFunction):
    def reduce(self, a, b):
        return (a[0], max(a[1], b[1]), a[2] + b[2])


class Dedup(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.BOOLEAN()))

    def process_element(self, value, ctx):
        if self.seen.value() is None:
            self.seen.update(True)
            yield value[0]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
env.set_parallelism(2)
ds = env.from_collection(
    [("a", 1000, 1), ("b", 1500, 2), ("a", 2500, 3), ("a", 3100, 4)],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]),
)
ds = ds.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(TsAssigner())
)
ds.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(Time.seconds(2))).reduce(Sum()).print()
ds.key_by(lambda e: e[0]).process(Dedup(), output_type=Types.STRING()).print()
env.execute("pyflink job")
'''
    job = tmp_path / "job.py"
    job.write_text(pyflink_program.replace("pyflink", "strom"))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "runtime-image"))
    proc = subprocess.run([sys.executable, str(job)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = sorted(re.sub(r"^\d+> ", "", line) for line in proc.stdout.splitlines())
    # windows [0, 2000): a -> (a, 1000, 1), b -> (b, 1500, 2); [2000, 4000): a -> (a, 3100, 7); a Types.TUPLE
    # record prints as PyFlink prints it (Java's Tuple3.toString)
    assert lines == sorted(["(a,1000,1)", "(b,1500,2)", "(a,3100,7)", "a", "b"])
