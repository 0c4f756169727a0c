"""What PyFlink refuses on a KeyedStream, Strom refuses too (issue 18).

PyFlink's KeyedStream (pyflink/datastream/data_stream.py) overrides the partitioning calls to
`raise Exception('Cannot override partitioning for KeyedStream.')` (as Java's
KeyedStream.setConnectionType throws UnsupportedOperationException with the same words), and the
operator settings to e.g. `raise Exception("Set name for KeyedStream is not supported.")`. Before
this, Strom's `key_by(...).name("x")` silently renamed the operator before key_by.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from strom.common import Types
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.data_stream import KeyedStream


def _keyed() -> KeyedStream:
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection([(1, "a"), (2, "b")], Types.TUPLE([Types.INT(), Types.STRING()])).key_by(lambda v: v[0])


PARTITIONING: list[tuple[str, Callable[[KeyedStream], Any]]] = [
    ("forward", lambda k: k.forward()),
    ("rebalance", lambda k: k.rebalance()),
    ("rescale", lambda k: k.rescale()),
    ("shuffle", lambda k: k.shuffle()),
    ("global_", lambda k: k.global_()),
    ("broadcast", lambda k: k.broadcast()),
    ("partition_custom", lambda k: k.partition_custom(lambda key, n: 0, lambda v: v[0])),
]

SETTINGS: list[tuple[str, Callable[[KeyedStream], Any], str]] = [
    ("name", lambda k: k.name("x"), "Set name for KeyedStream is not supported."),
    ("get_name", lambda k: k.get_name(), "Get name of KeyedStream is not supported."),
    ("uid", lambda k: k.uid("u"), "Set uid for KeyedStream is not supported."),
    ("set_uid_hash", lambda k: k.set_uid_hash("h"), "Set uid hash for KeyedStream is not supported."),
    ("set_parallelism", lambda k: k.set_parallelism(2), "Set parallelism for KeyedStream is not supported."),
    ("set_max_parallelism", lambda k: k.set_max_parallelism(8), "max parallelism for KeyedStream is not supported."),
    ("force_non_parallel", lambda k: k.force_non_parallel(), "force non-parallel for KeyedStream is not supported."),
    ("set_buffer_timeout", lambda k: k.set_buffer_timeout(5), "Set buffer timeout for KeyedStream is not supported."),
    ("start_new_chain", lambda k: k.start_new_chain(), "Start new chain for KeyedStream is not supported."),
    ("disable_chaining", lambda k: k.disable_chaining(), "Disable chaining for KeyedStream is not supported."),
    ("slot_sharing_group", lambda k: k.slot_sharing_group("g"), "slot sharing group for KeyedStream is not supported."),
]


@pytest.mark.parametrize(("call", "action"), PARTITIONING, ids=[p[0] for p in PARTITIONING])
def test_partitioning_a_keyed_stream_is_refused_as_in_pyflink(call: str, action: Callable[[KeyedStream], Any]) -> None:
    with pytest.raises(Exception, match=r"^Cannot override partitioning for KeyedStream\.") as info:
        action(_keyed())
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("call", "action", "words"), SETTINGS, ids=[s[0] for s in SETTINGS])
def test_operator_settings_on_a_keyed_stream_are_refused_as_in_pyflink(
    call: str, action: Callable[[KeyedStream], Any], words: str
) -> None:
    with pytest.raises(Exception, match=words.replace(".", r"\.")):
        action(_keyed())


def test_name_on_a_keyed_stream_leaves_the_operator_before_it_alone() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    src = env.from_collection([1, 2, 3]).map(lambda v: v).name("before")
    with pytest.raises(Exception):  # noqa: B017, PT011 - PyFlink raises a plain Exception
        src.key_by(lambda v: v).name("renamed")
    assert src.get_name() == "before"


def test_operators_after_key_by_still_take_their_settings() -> None:
    """The refusal is for the virtual partition only: the operator after key_by takes name/uid/parallelism."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out = _keyed().reduce(lambda a, b: (a[0], a[1] + b[1])).name("sums").uid("sums").set_parallelism(2)
    assert out.get_name() == "sums"
    assert env is not None
