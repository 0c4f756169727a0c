"""Batches of one NamedTuple class cross processes as the class and plain tuples (serialization.py).

The reference is the batch itself: what comes back must equal it value for value and be of the same
classes, exactly as pickle would have rebuilt it; classes whose instances are more than their fields
(their own `__new__`, a `__dict__`, slots) or that pickle cannot name must take the pickle paths.
"""

from __future__ import annotations

import collections
import pickle
from typing import Any, NamedTuple

import pytest
from strom.connectors.nexmark import Auction, Bid
from strom.runtime.network.serialization import (
    NAMED_TUPLE_TAG,
    PICKLE_TAG,
    deserialize_item,
    register_batch_codec,
    serialize_item,
)


class Point(NamedTuple):
    x: int
    y: int


Pair = collections.namedtuple("Pair", "a b")


class Labelled(Point):
    """A subclass with __dict__: instances may carry attributes pickle keeps."""


class Doubling(NamedTuple):
    v: int


class Scaled(Doubling):
    """A subclass with its own __new__: pickle calls it with the stored fields, tuple.__new__ would not."""

    __slots__ = ()

    def __new__(cls, v: int) -> Scaled:
        return super().__new__(cls, v * 2)


def bids(n: int) -> list[Bid]:
    return [Bid(1000 + i, 2000 + i % 7, 10 * i, "Apple", f"https://x/{i}", 1_700_000_000_000 + i, "e" * (i % 5))
            for i in range(n)]


def round_trip(item: Any) -> tuple[int, Any]:
    data = serialize_item(item)
    return data[0], deserialize_item(memoryview(data))


def test_a_batch_of_one_named_tuple_class_round_trips_with_its_class():
    values = bids(50)
    item = (values, [b.date_time for b in values], [b.bidder for b in values])
    tag, back = round_trip(item)
    assert tag == NAMED_TUPLE_TAG
    assert back == item
    assert all(type(v) is Bid for v in back[0])
    assert back[0][3].bidder == values[3].bidder  # fields by name, not only by position


def test_collections_namedtuple_and_typing_namedtuple_both_take_the_fast_encoding():
    for values in ([Point(1, 2), Point(3, 4)], [Pair("a", None), Pair(1.5, (2, 3))]):
        tag, back = round_trip((values, None, None))
        assert tag == NAMED_TUPLE_TAG
        assert back == (values, None, None) and [type(v) for v in back[0]] == [type(v) for v in values]


def test_mixed_classes_in_a_batch_are_pickled_and_keep_each_class():
    values: list[Any] = [Bid(*bids(1)[0]), Auction(1, "item", "d", 1, 2, 3, 4, 5, 6, "x"), Point(1, 2)]
    tag, back = round_trip((values, None, None))
    assert tag == PICKLE_TAG
    assert [type(v) for v in back[0]] == [Bid, Auction, Point] and back[0] == values


def test_a_subclass_with_instance_attributes_keeps_them_through_pickle():
    p = Labelled(1, 2)
    p.label = "kept"  # type: ignore[attr-defined]
    tag, back = round_trip(([p], None, None))
    assert tag == PICKLE_TAG
    assert back[0][0].label == "kept"


def test_a_class_with_its_own_new_is_rebuilt_as_pickle_rebuilds_it():
    values = [Scaled(1), Scaled(5)]
    tag, back = round_trip((values, None, None))
    assert tag == PICKLE_TAG
    assert back[0] == pickle.loads(pickle.dumps(values))


def test_local_named_tuples_and_unpicklable_fields_take_the_cloudpickle_path():
    Local = collections.namedtuple("Local", "f")
    tag, back = round_trip(([Local(1), Local(2)], None, None))
    assert tag == PICKLE_TAG and [v.f for v in back[0]] == [1, 2]
    tag, back = round_trip(([Point(1, lambda: 7)], None, None))  # a lambda field: plain pickle fails
    assert tag == PICKLE_TAG and back[0][0].y() == 7 and type(back[0][0]) is Point


def test_a_registered_codec_cannot_take_the_named_tuple_tag():
    class Codec:
        tag = NAMED_TUPLE_TAG

        def encode(self, batch: Any) -> bytes | None:
            return None

        def decode(self, data: bytes | memoryview) -> Any:
            raise AssertionError("never called")

    with pytest.raises(ValueError, match="out of range"):
        register_batch_codec(Pair, Codec())
