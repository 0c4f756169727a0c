"""Keys Python cannot hash (lists, dicts, sets) work alike in STREAMING and BATCH mode (issue 18: "keys that
are not hashable in Python work as in STREAMING").

PyFlink documents that a key selector without a declared key type produces a pickled key (the key type
defaults to `Types.PICKLED_BYTE_ARRAY()`), so any picklable value is a key, compared by value, and the
key handed back (`ctx.get_current_key()`, a window function's `key`) is the unpickled value: a list stays a
list. Strom keys them by value (a FrozenKey inside), with a key group stable across processes, and still
refuses an object compared by identity, even inside a list."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections import defaultdict

import pytest
from strom.common.key_groups import (
    FrozenKey,
    KeyGroupAssigner,
    UnhashableKeyError,
    UnstableKeyError,
    assign_to_key_group,
)
from strom.datastream import KeyedProcessFunction, RuntimeExecutionMode, StreamExecutionEnvironment
from strom.datastream.functions import ProcessWindowFunction

from tests.batch.test_batch_cli_output import needs_spark

RECORDS = [(["a", 1], 1), (["b"], 5), (["a", 1], 2), (["a", 1.0], 4), (["c", 2], 7), (["b"], 3), ([1, "a"], 10)]


def expected_sums() -> dict[tuple, int]:
    """The plain-Python reference: sums per key, with the key as a tuple."""
    sums: dict[tuple, int] = defaultdict(int)
    for k, v in RECORDS:
        sums[tuple(k)] += v
    return dict(sums)


def summed(mode: RuntimeExecutionMode, parallelism: int, key) -> list:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(parallelism)
    ds = env.from_collection(RECORDS).key_by(key).reduce(lambda a, b: (a[0], a[1] + b[1]))
    return list(ds.execute_and_collect())


@pytest.mark.parametrize(
    "mode,parallelism",
    [(RuntimeExecutionMode.STREAMING, 1), (RuntimeExecutionMode.STREAMING, 2), (RuntimeExecutionMode.BATCH, 2)],
)
def test_a_keyed_sum_with_list_keys_equals_a_plain_python_sum(mode, parallelism):
    if mode is RuntimeExecutionMode.BATCH:
        needs_spark()
    out = summed(mode, parallelism, lambda r: r[0])
    assert all(type(k) is list for k, _ in out)
    last: dict[tuple, int] = {}
    for k, v in out:  # STREAMING emits rolling sums, BATCH the final one: the last per key is the total
        last[tuple(k)] = v
    assert last == expected_sums()
    if mode is RuntimeExecutionMode.STREAMING:
        assert len(out) == len(RECORDS)


@pytest.mark.parametrize(
    "key",
    [
        lambda r: {"first": r[0][0], "rest": r[0][1:]},  # a dict (holding a list)
        lambda r: (r[0], "x"),  # a tuple holding a list
    ],
    ids=["dict", "tuple-holding-list"],
)
def test_dict_and_nested_list_keys_are_keyed_by_value(key):
    out = summed(RuntimeExecutionMode.STREAMING, 2, key)
    last: dict[tuple, int] = {}
    for k, v in out:
        last[tuple(k)] = v
    assert last == expected_sums()


def test_set_keys_are_keyed_by_value():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    records = [({"x", "y"}, 1), ({"y", "x"}, 2), ({"z"}, 4)]
    ds = env.from_collection(records).key_by(lambda r: set(r[0])).reduce(lambda a, b: (a[0], a[1] + b[1]))
    last = {frozenset(k): v for k, v in ds.execute_and_collect()}
    assert last == {frozenset({"x", "y"}): 3, frozenset({"z"}): 4}


class _KeysSeen(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield ctx.get_current_key()


def test_get_current_key_returns_the_list():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    out = list(env.from_collection(RECORDS).key_by(lambda r: r[0]).process(_KeysSeen()).execute_and_collect())
    assert all(type(k) is list for k in out)
    assert sorted(map(tuple, out), key=repr) == sorted((tuple(k) for k, _ in RECORDS), key=repr)


class _PaneSum(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, sum(v for _, v in elements)


def test_a_window_function_gets_the_list_key():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    records = [(["a", 1], 1), (["b"], 5), (["a", 1.0], 2), (["b"], 3), (["a", 1], 4)]
    ds = env.from_collection(records).key_by(lambda r: r[0]).count_window(2).process(_PaneSum())
    out = list(ds.execute_and_collect())
    assert all(type(k) is list for k, _ in out)
    assert sorted((tuple(k), v) for k, v in out) == [(("a", 1), 3), (("b",), 8)]  # ["a", 1] #3 waits for a 4th


def test_keyed_stream_execute_and_collect_yields_the_list_key():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    rows = list(env.from_collection(RECORDS).key_by(lambda r: r[0]).execute_and_collect())
    got = sorted(((tuple(r.f0), r.f1[1]) for r in rows), key=repr)
    assert got == sorted(((tuple(k), v) for k, v in RECORDS), key=repr)
    assert all(type(r.f0) is list for r in rows)


_KEY_GROUPS_SCRIPT = """
from strom.common.key_groups import KeyGroupAssigner, assign_to_key_group
print(assign_to_key_group(["a", 1, ["b", {"x": 2}]], 32768),
      assign_to_key_group({"k": [1, 2], "j": "v"}, 32768),
      assign_to_key_group({"s", "t", "u", "v"}, 32768),
      KeyGroupAssigner(32768).key_group(["a", 1, ["b", {"x": 2}]]))
"""

# RocksDB stores state under the pickled key: equal keys must pickle to equal bytes in every process
_PICKLE_SCRIPT = """
import pickle
from strom.common.key_groups import FrozenKey
print(pickle.dumps(FrozenKey([{"s", "t", "u", "v", "w"}, {"k": 1, "j": frozenset({"p", "q", "r"})}])).hex())
"""


def _run(script: str, seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join(sys.path))  # this checkout's strom
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return out.stdout


def _key_groups_in_a_process(seed: str) -> list[int]:
    return [int(x) for x in _run(_KEY_GROUPS_SCRIPT, seed).split()]


def test_equal_list_dict_and_set_keys_land_in_the_same_key_group_in_two_processes():
    first, second = _key_groups_in_a_process("1"), _key_groups_in_a_process("2")
    assert first == second
    assert first[0] == first[3]  # a raw list and the FrozenKey the assigner makes of it
    here = [
        assign_to_key_group(["a", 1.0, ["b", {"x": 2}]], 32768),  # 1.0 == 1: an equal list
        assign_to_key_group({"j": "v", "k": [1, 2]}, 32768),  # other insertion order: an equal dict
        assign_to_key_group({"v", "u", "t", "s"}, 32768),
    ]
    assert here == first[:3]


def test_equal_keys_pickle_to_equal_bytes_in_any_process_and_back_to_an_equal_key():
    assert _run(_PICKLE_SCRIPT, "1") == _run(_PICKLE_SCRIPT, "2") == _run(_PICKLE_SCRIPT, "3")
    a, b = FrozenKey({"a": [1, {"x", "y"}], "b": 2}), FrozenKey({"b": 2, "a": [1, {"y", "x"}]})
    assert pickle.dumps(a) == pickle.dumps(b)
    back = pickle.loads(pickle.dumps(a))
    assert back == a and hash(back) == hash(a) and back.value == {"a": [1, {"x", "y"}], "b": 2}


def test_a_list_and_the_tuple_of_its_items_are_different_keys():
    """[1, 2] != (1, 2) in Python and their pickles differ in PyFlink: different keys, different hashes."""
    assert assign_to_key_group([1, 2, "a"], 1 << 15) != assign_to_key_group((1, 2, "a"), 1 << 15)


class Opaque:
    """Compares by identity: no stable hash across processes."""


def test_an_identity_object_inside_a_list_is_still_refused():
    with pytest.raises(UnstableKeyError, match=r"Opaque compares by identity"):
        assign_to_key_group(["a", Opaque()], 128)
    with pytest.raises(UnstableKeyError, match=r"^key selector k: .*Opaque compares by identity"):
        KeyGroupAssigner(128, owner="key selector k").key_group([Opaque()])


def test_an_identity_object_inside_a_list_key_fails_the_job():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    ds = env.from_collection(RECORDS).key_by(lambda r: [r[0][0], Opaque()]).reduce(lambda a, b: a)
    ds.print()
    with pytest.raises(Exception, match=r"Opaque compares by identity"):
        env.execute("identity keys")


def test_a_list_holding_an_unhashable_non_container_is_refused():
    with pytest.raises(UnhashableKeyError, match=r"^key selector k: key \[bytearray\(b'x'\)\] of type list"):
        KeyGroupAssigner(128, owner="key selector k").key_group([bytearray(b"x")])
