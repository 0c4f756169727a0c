"""Keys hash alike in every process, or are refused naming the key selector (issue 17).

A key whose hash depends on the process (an identity object, a repr with a memory address, a frozenset's
salted iteration order) would send one key to different key groups in different TaskManagers: silently
wrong results. The supported value types get the same key group in a fresh process under other hash
seeds; the rest fail the job with a one-line error naming the user's function.
"""

import os
import struct
import subprocess
import sys

import mmh3
import pytest
from strom.common.key_groups import (
    KeyGroupAssigner,
    UnstableKeyError,
    assign_to_key_group,
    describe_key_selector,
)
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.functions import KeySelector, as_key_selector
from strom.runtime.local_executor import JobExecutionError

# Defines the keys in this process and, unchanged, in the child processes (same classes, same values).
KEYS_CODE = """
import datetime, decimal, enum, uuid
from collections import namedtuple
from dataclasses import dataclass
from strom.common.row import Row

class Color(enum.Enum):
    RED = "red"
    BLUE = 2

@dataclass(frozen=True)
class Point:
    x: int
    y: str

Pair = namedtuple("Pair", "a b")

@dataclass(frozen=True)
class Tagged:
    name: str
    tags: frozenset
    at: Point

keys = [
    None, True, False, 0, -7, 2**70, 3.5, "", "hello", "ünï", b"raw",
    (1, "x", None), ("nested", (2, b"y")),
    frozenset({"apple", "banana", "cherry", "date", "elder", "fig"}), frozenset({("a", 1), ("b", 2)}),
    Row("a", 1), Point(1, "p"), Pair("a", 2), Color.RED, Color.BLUE,
    Tagged("t", frozenset({"apple", "banana", "cherry", "date", "elder", "fig"}), Point(2, "q")),
    datetime.datetime(2024, 2, 29, 12, 30, 1, 5), datetime.date(2024, 1, 1), datetime.timedelta(seconds=90),
    decimal.Decimal("12.50"), uuid.UUID("12345678-1234-5678-1234-567812345678"),
]
"""


def _keys():
    namespace: dict = {}
    exec(KEYS_CODE, namespace)  # noqa: S102 - the test's own constant, shared with the child process
    return namespace["keys"]


def _key_groups_in_child(seed: str) -> list[int]:
    code = KEYS_CODE + "\nfrom strom.common.key_groups import assign_to_key_group\n"
    code += "print([assign_to_key_group(k, 128) for k in keys])"
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join(sys.path))
    return eval(subprocess.check_output([sys.executable, "-c", code], env=env, text=True))  # noqa: S307


def _reference_key_group(data: bytes) -> int:
    """Plain murmur3 (x86_32, seed 0x5EED) of the canonical bytes, as key_groups documents the encoding."""
    return (mmh3.hash(data, 0x5EED, signed=False) & 0x7FFFFFFF) % 128


def test_value_keys_get_the_same_key_group_in_other_processes_and_hash_seeds():
    here = [assign_to_key_group(k, 128) for k in _keys()]
    for seed in ("0", "1", "4242"):
        assert _key_groups_in_child(seed) == here, f"PYTHONHASHSEED={seed}"


def test_key_groups_match_a_plain_murmur3_of_the_canonical_encoding():
    def s(text):
        return b"s" + text.encode()

    def i(n):
        return b"i" + struct.pack("<q", n)

    assert assign_to_key_group("hello", 128) == _reference_key_group(s("hello"))
    assert assign_to_key_group(-7, 128) == _reference_key_group(i(-7))
    assert assign_to_key_group(("a", 1), 128) == _reference_key_group(b"t" + s("a") + b"\x00" + i(1) + b"\x00")
    assert assign_to_key_group((3, -4), 128) == _reference_key_group(b"t" + i(3) + b"\x00" + i(-4) + b"\x00")
    assert assign_to_key_group((1, "é", 2), 128) == _reference_key_group(
        b"t" + i(1) + b"\x00" + b"s\xc3\xa9\x00" + i(2) + b"\x00"
    )
    # an int past 64 bits is written as its decimal digits
    assert assign_to_key_group((2**63, 1), 128) == _reference_key_group(
        b"t" + b"I" + str(2**63).encode() + b"\x00" + i(1) + b"\x00"
    )
    # a frozenset's elements in sorted order of their encodings, whatever the process's str hash seed
    fruit = frozenset({"fig", "apple", "date"})
    expected = b"F" + b"".join(e + b"\x00" for e in sorted(s(x) for x in fruit))
    assert assign_to_key_group(fruit, 128) == _reference_key_group(expected)


class Opaque:
    """No __eq__: every instance is its own key, and its repr holds its address."""

    def __init__(self, name):
        self.name = name

    __hash__ = object.__hash__


class EqualButAddressRepr:
    """Value equality, but the default repr (with an address) is all there is to hash."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, EqualButAddressRepr) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class Labelled:
    """Value equality and a repr that shows only the value: hashable the same in every process."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Labelled) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"Labelled({self.name!r})"


def by_opaque_name(value):
    return Opaque(value)


def test_an_identity_key_is_refused_naming_the_key_selector():
    assigner = KeyGroupAssigner(128, owner=describe_key_selector(as_key_selector(by_opaque_name)))
    with pytest.raises(UnstableKeyError) as info:
        assigner.key_group(by_opaque_name("a"))
    message = str(info.value)
    assert "\n" not in message
    assert "key selector by_opaque_name (test_key_stability.py:" in message
    assert "compares by identity" in message and "dataclass(frozen=True)" in message


def test_a_key_whose_repr_holds_an_address_is_refused():
    with pytest.raises(UnstableKeyError, match="memory address"):
        assign_to_key_group(EqualButAddressRepr("a"), 128)
    with pytest.raises(UnstableKeyError, match="memory address"):
        assign_to_key_group(("ok", EqualButAddressRepr("a")), 128)  # nested in a tuple too
    with pytest.raises(UnstableKeyError, match="compares by identity"):
        assign_to_key_group(frozenset({Opaque("a")}), 128)


def test_a_value_class_with_its_own_repr_stays_a_valid_key():
    assert assign_to_key_group(Labelled("a"), 128) == assign_to_key_group(Labelled("a"), 128)


def test_a_key_selector_class_is_named_by_its_class():
    class ByOpaque(KeySelector):
        def get_key(self, value):
            return Opaque(value)

    assert describe_key_selector(ByOpaque()).endswith("ByOpaque")


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_job_keyed_by_identity_objects_fails_with_the_selector_named(parallelism):
    """Parallelism 2: the sender's record writer refuses the key; parallelism 1 sends everything to one
    subtask unhashed, and the keyed operator's state backend refuses it."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    env.from_collection(["a", "b", "a"]).key_by(by_opaque_name).reduce(lambda a, b: a).print()
    with pytest.raises(JobExecutionError, match=r"key selector by_opaque_name \(test_key_stability.py:\d+\)"):
        env.execute("opaque keys")
