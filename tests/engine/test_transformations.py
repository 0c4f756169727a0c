"""Stateless and rolling keyed transformations against plain-Python references."""

import pytest
from strom.common import Row, Types, WatermarkStrategy
from strom.connectors.number_sequence import NumberSequenceSource
from strom.datastream import FlatMapFunction, MapFunction, StreamExecutionEnvironment
from strom.testing import collect

DATA = [("a", 3, 1.5), ("b", 1, 2.0), ("a", 1, 0.5), ("c", 7, 1.0), ("b", 9, 3.0), ("a", 2, 9.0), ("c", 7, 0.1)]


def env_with(parallelism=2):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def test_map_flat_map_filter_chain():
    env = env_with()
    out = collect(
        env.from_collection(["a b c", "d", "", "e f"])
        .flat_map(lambda s: s.split())
        .map(str.upper)
        .filter(lambda w: w != "D")
    )
    assert sorted(out) == ["A", "B", "C", "E", "F"]


def test_function_classes_with_open_and_close():
    events = []

    class Prefix(MapFunction):
        def open(self, ctx):
            self.p = f"{ctx.get_index_of_this_subtask()}/{ctx.get_number_of_parallel_subtasks()}"

        def map(self, v):
            return (self.p, v)

        def close(self):
            events.append("closed")

    class Twice(FlatMapFunction):
        def flat_map(self, v):
            yield v
            yield v

    env = env_with(2)
    out = collect(env.from_collection([1, 2, 3]).flat_map(Twice()).map(Prefix()))
    assert sorted(v for _, v in out) == [1, 1, 2, 2, 3, 3]
    assert {p for p, _ in out} <= {"0/2", "1/2"}
    assert events == ["closed", "closed"]


def rolling(data, key, fn):
    acc, out = {}, []
    for v in data:
        k = key(v)
        acc[k] = v if k not in acc else fn(acc[k], v)
        out.append(acc[k])
    return out


def keyed(env, data=DATA):
    return env.from_collection(data).key_by(lambda v: v[0])


def test_reduce_emits_running_result_per_key_in_order():
    env = env_with()
    out = collect(keyed(env).reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2])))
    expected = rolling(DATA, lambda v: v[0], lambda a, b: (a[0], a[1] + b[1], a[2] + b[2]))
    for k in "abc":
        assert [o for o in out if o[0] == k] == [e for e in expected if e[0] == k]


@pytest.mark.parametrize(
    "agg, ref",
    [
        ("sum", lambda a, b: (a[0], a[1] + b[1], a[2])),
        ("min", lambda a, b: (a[0], min(a[1], b[1]), a[2])),
        ("max", lambda a, b: (a[0], max(a[1], b[1]), a[2])),
        ("min_by", lambda a, b: b if b[1] < a[1] else a),
        ("max_by", lambda a, b: b if b[1] > a[1] else a),
    ],
)
def test_built_in_aggregations(agg, ref):
    env = env_with()
    out = collect(getattr(keyed(env), agg)(1))
    expected = rolling(DATA, lambda v: v[0], ref)
    for k in "abc":
        assert [o for o in out if o[0] == k] == [e for e in expected if e[0] == k]


def test_sum_on_plain_numbers_and_named_row_fields():
    env = env_with(1)
    assert collect(env.from_collection([1, 2, 3]).key_by(lambda v: 0).sum()) == [1, 3, 6]
    rows = [Row(name="a", n=1), Row(name="a", n=4)]
    env = env_with(1)
    out = collect(env.from_collection(rows).key_by(lambda r: r.name).sum("n"))
    assert [r.n for r in out] == [1, 5] and out[1].name == "a"


def test_row_output_type_turns_tuples_into_rows():
    env = env_with(1)
    out = collect(
        env.from_collection([1, 2]).map(
            lambda v: (v, str(v)), output_type=Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
        )
    )
    assert all(isinstance(r, Row) for r in out)
    assert [(r.id, r.name) for r in out] == [(1, "1"), (2, "2")]


def test_from_collection_with_row_type_info():
    env = env_with(1)
    ti = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()])
    out = collect(env.from_collection([("a", 1)], type_info=ti))
    assert out == [Row(k="a", v=1)] and out[0].k == "a"


def test_union_of_three_streams():
    env = env_with(2)
    a = env.from_collection([1, 2])
    b = env.from_collection([3])
    c = env.from_sequence(4, 10)
    assert sorted(collect(a.union(b, c))) == list(range(1, 11))


def test_number_sequence_source_splits_among_subtasks():
    env = env_with(3)
    ds = env.from_source(NumberSequenceSource(1, 1000), WatermarkStrategy.no_watermarks(), "seq")
    assert sorted(collect(ds)) == list(range(1, 1001))


def test_execute_and_collect_with_limit_returns_list():
    env = env_with(1)
    assert env.from_collection([5, 6, 7]).execute_and_collect(limit=2) == [5, 6]


def test_key_selector_returning_unhashable_fails_clearly():
    from strom.runtime.local_executor import JobExecutionError

    env = env_with(2)
    # lists are keys by value (as in PyFlink: tests/parity/test_unhashable_keys.py); a bytearray inside one is not
    env.from_collection([[1], [2]]).key_by(lambda v: [bytearray(v)]).print()
    with pytest.raises(JobExecutionError, match="not hashable"):
        env.execute()


def test_keyed_process_on_non_keyed_stream_is_rejected():
    from strom.datastream import KeyedProcessFunction

    class P(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value

    env = env_with(1)
    with pytest.raises(TypeError, match="key_by"):
        env.from_collection([1]).process(P())


def test_window_on_non_keyed_stream_is_rejected_naming_operator():
    env = env_with(1)
    with pytest.raises(TypeError, match="'Map'.*not keyed"):
        env.from_collection([1]).map(lambda v: v).window(object())


def test_each_subtask_gets_its_own_copy_of_the_function():
    counts = []

    class CountPerSubtask(MapFunction):
        def open(self, ctx):
            self.n = 0

        def map(self, v):
            self.n += 1
            return v

        def close(self):
            counts.append(self.n)

    env = env_with(2)
    out = collect(env.from_collection(list(range(100))).rebalance().map(CountPerSubtask()))
    assert len(out) == 100
    assert sorted(counts) == [50, 50]  # not one shared counter reaching 100


def test_closing_collect_iterator_cancels_an_unbounded_job():
    import threading
    import time

    from strom.connectors.datagen import DataGeneratorSource

    env = env_with(1)
    ds = env.from_source(DataGeneratorSource(lambda i: i, None), WatermarkStrategy.no_watermarks(), "endless")
    assert ds.execute_and_collect(limit=5) == [0, 1, 2, 3, 4]

    def running():
        return [t for t in threading.enumerate() if t.name.startswith("Source: endless")]

    deadline = time.monotonic() + 20
    while running() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not running(), "the unbounded job kept running after the client stopped reading"
