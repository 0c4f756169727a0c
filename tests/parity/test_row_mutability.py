"""PyFlink's Row is mutable, and Strom's is too (issue 18).

PyFlink's `pyflink.common.types.Row` documents (class docstring): "The fields in it can be accessed: like
attributes (``row.key``), like dictionary values (``row[key]``)", and "Row can also be used to create
another Row like class, then it could be used to create Row objects, such as `Person = Row("name", "age")`
... `Person("Alice", 11)` -> `Row(name='Alice', age=11)`". Its `__setitem__` assigns by position or by
field name, `__eq__` compares values, field names and row kind (never equal to a non-Row), `__hash__` is
the hash of the values' tuple, `__contains__` searches the values. PyFlink serializes every record it
emits to Java, so an accumulator Row assigned to after it was emitted does not change what was emitted.

Expected values come from plain Python (sums of the input), never from Strom's earlier output.
"""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from collections import defaultdict

import pytest
from strom.common import Configuration
from strom.common.key_groups import FrozenKey, assign_to_key_group
from strom.common.row import Row, RowKind
from strom.common.typeinfo import Types
from strom.datastream import KeyedProcessFunction, RuntimeExecutionMode, StreamExecutionEnvironment
from strom.datastream.state import ValueStateDescriptor

from tests.batch.test_batch_cli_output import needs_spark

RECORDS = [("a", 1), ("b", 5), ("a", 2), ("c", 7), ("a", 4), ("b", 3), ("c", 1), ("a", 10)]


def running_sums() -> list[tuple[str, int]]:
    """Plain Python: the running sum per key after each record, in input order."""
    sums: dict[str, int] = defaultdict(int)
    out = []
    for k, v in RECORDS:
        sums[k] += v
        out.append((k, sums[k]))
    return out


# -- the Row itself ------------------------------------------------------------------------------------
def test_item_assignment_by_index_and_by_name():
    """PyFlink's __setitem__: `row[0] = v` by position, `row['name'] = v` by field name; the accumulator
    idiom `acc[0] += v` works on both."""
    row = Row(1, "a")
    row[0] += 41
    row[1] = "b"
    assert list(row) == [42, "b"]
    named = Row(name="Alice", age=11)  # PyFlink sorts keyword fields by name: (age, name)
    named["age"] += 1
    named[1] = "Bob"
    assert (named.name, named.age, named["name"], named[0]) == ("Bob", 12, "Bob", 12)
    assert named.as_dict() == {"name": "Bob", "age": 12}


def test_assigning_an_unknown_field_name_is_refused_naming_the_field():
    """PyFlink raises ValueError for a name that is not a field of a named Row and KeyError on a Row without
    names; Strom raises one error that is both, naming the field (and the fields it has)."""
    named = Row(name="Alice", age=11)
    with pytest.raises(ValueError, match=r"field 'nme' is not in this Row's fields \['age', 'name'\]"):
        named["nme"] = "x"
    with pytest.raises(KeyError, match="field 'x': this Row has no field names"):
        Row(1, 2)["x"] = 3
    with pytest.raises(AttributeError):  # PyFlink's Row takes no new attributes either
        named.nme = "x"
    assert list(named) == [11, "Alice"]


def test_row_class_builds_rows_and_refuses_too_many_values():
    """PyFlink: `Person = Row("name", "age")`, `Person("Alice", 11)` is `Row(name='Alice', age=11)`, and
    `'name' in Person` is True (the names are the row class's values); more values than names raise."""
    person = Row("name", "age")
    alice = person("Alice", 11)
    assert repr(alice) == "Row(name='Alice', age=11)" and alice.as_dict() == {"name": "Alice", "age": 11}
    assert alice != Row(name="Alice", age=11)  # PyFlink too: keyword fields are sorted, so the names differ
    assert "name" in person and "wrong_key" not in person
    with pytest.raises(ValueError, match="expected at most 2 values, got 3"):
        person("Alice", 11, "x")


def test_equality_hash_and_row_kind_follow_pyflink():
    """PyFlink's __eq__: a Row equals only a Row with equal values, equal field names and the same row kind;
    __hash__ is `tuple(self).__hash__()`. (Strom compares the names only when both rows are named.)"""
    assert Row(1, "a") == Row(1, "a")
    assert Row(1, "a") != (1, "a")
    assert Row(f0=1, f1="a") != Row(x=1, f1="a")
    assert Row(1, "a") == Row(f0=1, f1="a")  # Strom: names compared only when both rows have them
    deleted = Row(1, "a")
    deleted.set_row_kind(RowKind.DELETE)
    assert deleted != Row(1, "a") and deleted.get_row_kind() is RowKind.DELETE
    assert hash(Row(1, "a")) == hash((1, "a")) == hash(deleted)
    assert len(Row(1, "a")) == 2 and 1 in Row(1, "a") and list(iter(Row(1, "a"))) == [1, "a"]


def test_repr_and_pickling_keep_names_and_kind():
    """PyFlink's __repr__: `Row(age=11, name='Alice')` for a named row, `<Row(1, 'a')>` without names;
    __reduce__ keeps the field names and the row kind."""
    named = Row(name="Alice", age=11)
    named.set_row_kind(RowKind.UPDATE_AFTER)
    assert repr(named) == "Row(age=11, name='Alice')" and repr(Row(1, "a")) == "<Row(1, 'a')>"
    back = pickle.loads(pickle.dumps(named))
    assert back == named and back.get_row_kind() is RowKind.UPDATE_AFTER and back is not named
    deep = copy.deepcopy(Row(1, [2]))
    deep[1].append(3)
    assert deep == Row(1, [2, 3])


# -- the accumulator pattern in a job -----------------------------------------------------------------------
class RowAccumulator(KeyedProcessFunction):
    """Keeps a Row in ValueState and does `acc[1] += v`, emitting the accumulator after each record."""

    def open(self, runtime_context):
        self.acc = runtime_context.get_state(ValueStateDescriptor("acc", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        acc = self.acc.value()
        if acc is None:
            acc = Row(value[0], 0)
        acc[1] += value[1]
        self.acc.update(acc)
        yield acc


def _accumulated(mode: RuntimeExecutionMode, parallelism: int, backend: str = "hashmap") -> list:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({"state.backend.type": backend}))
    env.set_runtime_mode(mode)
    env.set_parallelism(parallelism)
    ds = env.from_collection(RECORDS).key_by(lambda r: r[0]).process(RowAccumulator())
    return list(ds.execute_and_collect())


@pytest.mark.parametrize(
    "parallelism,backend", [(1, "hashmap"), (2, "hashmap"), (2, "rocksdb")], ids=["p1", "p2", "p2-rocksdb"]
)
def test_a_row_accumulator_in_value_state_emits_the_running_sums(parallelism, backend):
    """Each emitted record is the accumulator as it was when emitted (PyFlink serializes it then), so the
    collected records are the running sums of plain Python, per key in input order."""
    out = _accumulated(RuntimeExecutionMode.STREAMING, parallelism, backend)
    assert all(type(r) is Row for r in out)
    per_key: dict[str, list[int]] = defaultdict(list)
    for r in out:
        per_key[r[0]].append(r[1])
    expected: dict[str, list[int]] = defaultdict(list)
    for k, s in running_sums():
        expected[k].append(s)
    assert per_key == expected


def test_a_row_accumulator_in_batch_mode_ends_with_the_plain_python_totals():
    needs_spark()
    out = _accumulated(RuntimeExecutionMode.BATCH, 2)
    last = {r[0]: r[1] for r in out}
    totals: dict[str, int] = defaultdict(int)
    for k, v in RECORDS:
        totals[k] += v
    assert last == dict(totals)


def test_a_reduce_that_assigns_to_its_accumulator_emits_each_running_value():
    """`reduce(lambda a, b: ...)` that does `a[1] += b[1]; return a` (mutating the running Row): each
    emitted value is the running sum at that record, as PyFlink's serialized output is."""

    def add(a, b):
        a[1] += b[1]
        return a

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    rows = env.from_collection(RECORDS).map(lambda r: Row(r[0], r[1]))
    out = list(rows.key_by(lambda r: r[0]).reduce(add).execute_and_collect())
    assert [(r[0], r[1]) for r in out] == running_sums()


# -- a Row as a key ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_a_row_key_sums_like_plain_python_at_parallelism_two(backend):
    """A key selector returning a Row keys state by the Row's values (RocksDB stores it pickled)."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({"state.backend.type": backend}))
    env.set_parallelism(2)
    ds = env.from_collection(RECORDS).key_by(lambda r: Row(r[0], len(r[0])))
    out = list(ds.reduce(lambda a, b: (a[0], a[1] + b[1])).execute_and_collect())
    last = {k: v for k, v in out}
    totals: dict[str, int] = defaultdict(int)
    for k, v in RECORDS:
        totals[k] += v
    assert last == dict(totals)


_IN_CHILD = """
import pickle, sys
from strom.common.key_groups import FrozenKey, assign_to_key_group
from strom.common.row import Row
key = FrozenKey(Row('a', {'x': 1, 'y': [2]}))
sys.stdout.write(repr((assign_to_key_group(Row('a', 1, None), 128), pickle.dumps(key))))
"""


def test_a_row_key_has_the_same_key_group_and_state_key_bytes_in_every_process():
    """Key groups come from a stable encoding (never Python's salted hash): a Row key is routed alike by
    every TaskManager, and a Row holding a dict pickles to the same RocksDB key bytes."""
    outs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _IN_CHILD], env=env, capture_output=True, text=True,
                              check=True, timeout=60)
        outs.add(done.stdout)
    assert len(outs) == 1
    group, key_bytes = eval(outs.pop())  # noqa: S307 - our own child's repr of an int and bytes
    assert group == assign_to_key_group(("a", 1, None), 128)  # a Row key routes as the tuple of its values
    assert pickle.loads(key_bytes).value == Row("a", {"x": 1, "y": [2]})
    assert FrozenKey(Row("a", [1])) == FrozenKey(Row("a", [1])) != FrozenKey(Row("b", [1]))


class CountThenScribble(KeyedProcessFunction):
    """Counts records per key in ValueState, then assigns to the record (which is also its key)."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        key = ctx.get_current_key()
        value[1] = -1  # PyFlink's key is its own deserialized object: this does not change the key
        yield (key[0], key[1], n)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_assigning_to_a_record_that_is_its_own_key_leaves_the_key_and_its_state_alone(parallelism):
    """key_by(lambda r: r) on Rows: PyFlink's keyed state holds the key serialized, so assigning to the
    record afterwards neither renames the key nor loses its count. Reference: a plain Python Counter."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    rows = env.from_collection(RECORDS).map(lambda r: Row(r[0], r[1] % 2))
    out = list(rows.key_by(lambda r: r).process(CountThenScribble()).execute_and_collect())
    expected: dict[tuple[str, int], int] = defaultdict(int)
    for k, v in RECORDS:
        expected[(k, v % 2)] += 1
    final = {}
    for k0, k1, n in out:
        final[(k0, k1)] = max(n, final.get((k0, k1), 0))
    assert final == dict(expected) and len(out) == len(RECORDS)


def test_a_window_function_that_reuses_one_row_emits_each_value_as_yielded():
    """A ProcessWindowFunction yielding one Row object per element, assigned to between yields (PyFlink
    serializes each yielded record, so the consumer sees each value): the outputs equal a plain-Python list
    of the running counts."""
    from strom.common.time import Time
    from strom.common.watermark_strategy import WatermarkStrategy
    from strom.datastream.functions import ProcessWindowFunction
    from strom.datastream.window import TumblingEventTimeWindows

    class Running(ProcessWindowFunction):
        def process(self, key, context, elements):
            row = Row(key, 0)
            for _ in elements:
                row[1] += 1
                yield row

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    at_zero = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda r, ts: 0)
    windowed = env.from_collection(RECORDS).assign_timestamps_and_watermarks(at_zero).key_by(
        lambda r: r[0]).window(TumblingEventTimeWindows.of(Time.hours(1)))
    out = list(windowed.process(Running()).execute_and_collect())
    counts: dict[str, int] = defaultdict(int)
    expected = []
    for k, _ in RECORDS:
        counts[k] += 1
    for k in sorted(counts):
        expected.extend((k, i) for i in range(1, counts[k] + 1))
    assert sorted((r[0], r[1]) for r in out) == expected
