"""A key without a stable hash (a list) is refused alike in STREAMING and BATCH mode (issue 18: "keys that
are not hashable in Python work as in STREAMING").

PyFlink pickles an untyped key and hashes the bytes in Java, so a list key works there; Strom partitions
by a stable hash of the key itself (ARCHITECTURE: key partitioning), which a list does not have. Both modes
refuse it with the same line, which says what a key selector may return (a tuple works: see the second test,
checked against a plain-Python sum per key)."""

from __future__ import annotations

from collections import defaultdict

import pytest
from strom.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

from tests.batch.test_batch_cli_output import needs_spark

RECORDS = [(["a", 1], 1), (["a", 1], 2), (["b"], 5)]


def build(mode: RuntimeExecutionMode, key) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(2)
    ds = env.from_collection(RECORDS).key_by(key).reduce(lambda a, b: (a[0], a[1] + b[1]))
    return env, ds


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH])
def test_a_list_key_is_refused_with_the_same_line_in_both_modes(mode):
    if mode is RuntimeExecutionMode.BATCH:
        needs_spark()
    env, ds = build(mode, lambda r: r[0])
    ds.print()
    with pytest.raises(Exception, match=r"key \['a', 1\] of type list is not hashable; a key selector must return"):
        env.execute("list keys")


def test_the_same_program_with_a_tuple_key_runs():
    env, ds = build(RuntimeExecutionMode.STREAMING, lambda r: tuple(r[0]))
    finals: dict[tuple, int] = defaultdict(int)
    for k, v in RECORDS:
        finals[tuple(k)] += v
    out = list(ds.execute_and_collect())
    assert {tuple(k): v for k, v in out} == dict(finals)  # the last rolling sum per key is the total
