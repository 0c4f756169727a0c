"""Serialization of channel items (record batches and events) into bytes for a remote channel.

The first byte of every encoding says how to read the rest:
  0x80        a pickled record batch (0x80 is pickle's PROTO opcode, so pickle output needs no extra tag
              byte and no copy)
  0x01..0x7f  an event type with a compact fixed encoding (watermark, stream status, end of partition)
  0x81        a batch of one plain NamedTuple class (built in: the class once, the records as plain tuples)
  0x82..0xff  a registered batch codec (a faster encoding for one record type)

Record batches are pickled with protocol 5; cloudpickle is the fallback for what plain pickle cannot
carry to another process (classes defined in `__main__`, local classes, lambdas). Both registries are
small dicts so a new event type (checkpoint barrier) or a typed-row codec is one `register_*` call.

Batches of NamedTuples (Nexmark's events, many users' records) would pickle each record through the class's
Python-level `__getnewargs__` and rebuild it through its Python-level `__new__`: ~2 us per record. A batch
whose records are all of one plain NamedTuple class travels as the class (by reference) and plain tuples,
rebuilt with `tuple.__new__` (what the class's own `__new__` does): ~1 us, the same objects.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

import cloudpickle

from strom.common.time import MAX_WATERMARK, MIN_WATERMARK
from strom.runtime.network.events import (
    ACTIVE,
    END_OF_PARTITION,
    IDLE,
    CheckpointBarrier,
    EndOfPartition,
    StreamStatusEvent,
    WatermarkEvent,
)

PICKLE_TAG = 0x80
NAMED_TUPLE_TAG = 0x81
PICKLE_PROTOCOL = 5

RecordBatch = tuple[list[Any], list[Any] | None, list[Any] | None]


class BatchCodec(Protocol):
    """A faster encoding for record batches whose first value has one record type.

    `encode` returns the whole encoding starting with the codec's tag byte, or None to decline the batch
    (e.g. mixed record types), which then falls back to pickle. `decode` receives the whole encoding,
    tag byte included.
    """

    tag: int

    def encode(self, batch: RecordBatch) -> bytes | None: ...

    def decode(self, data: bytes | memoryview) -> RecordBatch: ...


_decoders: dict[int, Callable[[bytes | memoryview], Any]] = {}
_event_encoders: dict[type, Callable[[Any], bytes]] = {}
_batch_codecs: dict[type, BatchCodec] = {}


def _claim_tag(tag: int, decode: Callable[[bytes | memoryview], Any], lo: int, hi: int, what: str) -> None:
    if not lo <= tag <= hi:
        raise ValueError(f"tag {tag:#x} for {what} out of range: expected {lo:#x}..{hi:#x}")
    if tag in _decoders:
        raise ValueError(f"tag {tag:#x} for {what} is already registered")
    _decoders[tag] = decode


def register_event_type(
    event_type: type,
    tag: int,
    encode: Callable[[Any], bytes],
    decode: Callable[[bytes | memoryview], Any],
) -> None:
    """Give an event type a fixed encoding. `encode(event)` returns bytes starting with `tag`;
    `decode(data)` gets those bytes back (tag included). Tags 0x01..0x7f."""
    if event_type in _event_encoders:
        raise ValueError(f"event type {event_type.__name__} is already registered")
    _claim_tag(tag, decode, 0x01, 0x7F, f"event {event_type.__name__}")
    _event_encoders[event_type] = encode


def register_batch_codec(record_type: type, codec: BatchCodec) -> None:
    """Encode batches whose first value is exactly of `record_type` with `codec` (tags 0x82..0xff)."""
    if record_type in _batch_codecs:
        raise ValueError(f"a batch codec for {record_type.__name__} is already registered")
    _claim_tag(codec.tag, codec.decode, 0x82, 0xFF, f"batch codec of {record_type.__name__}")
    _batch_codecs[record_type] = codec


def unregister_batch_codec(record_type: type) -> None:
    """Remove the codec of `record_type`; its batches are pickled again."""
    codec = _batch_codecs.pop(record_type)
    del _decoders[codec.tag]


# -- batches of one NamedTuple class -------------------------------------------------------------------
_named_tuple_classes: dict[type, bool] = {}  # record class -> travels as plain tuples (decided once per class)
_tuple_makers: dict[type, Callable[[tuple[Any, ...]], Any]] = {}
_NAMED_TUPLE_PREFIX = bytes([NAMED_TUPLE_TAG])


def _is_plain_named_tuple(cls: type) -> bool:
    """A class made by collections.namedtuple / typing.NamedTuple (or a subclass adding only methods):
    an instance is its fields and nothing else (no __dict__, no slots of its own), built by the generated
    `__new__`, so `tuple.__new__(cls, fields)` rebuilds what pickle would; and importable by reference."""
    if not (issubclass(cls, tuple) and hasattr(cls, "_fields")):
        return False
    if cls.__basicsize__ != tuple.__basicsize__ or cls.__dictoffset__ or cls.__weakrefoffset__:
        return False
    if not getattr(cls.__new__, "__module__", "").startswith("namedtuple_"):
        return False  # a __new__ of its own may compute fields: pickle would call it, tuple.__new__ not
    try:
        return b"__main__" not in pickle.dumps(cls, PICKLE_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False  # local or dynamic classes: the cloudpickle path


def _encode_named_tuples(batch: RecordBatch) -> bytes | None:
    values, timestamps, keys = batch
    cls = type(values[0])
    plain = _named_tuple_classes.get(cls)
    if plain is None:
        plain = _named_tuple_classes[cls] = _is_plain_named_tuple(cls)
    if not plain or len(set(map(type, values))) != 1:
        return None
    try:
        data = pickle.dumps((cls, list(map(tuple, values)), timestamps, keys), PICKLE_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None  # a field pickle cannot carry: the cloudpickle path
    return None if b"__main__" in data else _NAMED_TUPLE_PREFIX + data


def _decode_named_tuples(data: bytes | memoryview) -> RecordBatch:
    cls, rows, timestamps, keys = pickle.loads(memoryview(data)[1:])
    make = _tuple_makers.get(cls)
    if make is None:
        make = _tuple_makers[cls] = partial(tuple.__new__, cls)
    return list(map(make, rows)), timestamps, keys


_claim_tag(NAMED_TUPLE_TAG, _decode_named_tuples, 0x81, 0x81, "batches of one NamedTuple class")


def _pickle_batch(batch: RecordBatch) -> bytes:
    try:
        data = pickle.dumps(batch, PICKLE_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        # local classes, lambdas, dynamic classes rebuilt by cloudpickle in a worker: pickle by value
        return cloudpickle.dumps(batch, protocol=PICKLE_PROTOCOL)
    # Plain pickle names classes of the job file's `__main__` by reference, which another process
    # resolves to its own `__main__` (or fails). A false positive (a string containing it) only costs
    # using cloudpickle, which is still correct.
    if b"__main__" in data:
        return cloudpickle.dumps(batch, protocol=PICKLE_PROTOCOL)
    return data


# hot path: called per buffer sent
def serialize_item(item: Any) -> bytes:
    """The bytes of a record batch `(values, timestamps, keys)` or an event."""
    if type(item) is tuple:
        values = item[0]
        if values:
            if _batch_codecs:
                codec = _batch_codecs.get(type(values[0]))
                if codec is not None:
                    data = codec.encode(item)
                    if data is not None:
                        return data
            if isinstance(values[0], tuple) and type(values[0]) is not tuple:
                data = _encode_named_tuples(item)
                if data is not None:
                    return data
        return _pickle_batch(item)
    encode = _event_encoders.get(type(item))
    if encode is None:
        raise TypeError(
            f"cannot serialize {type(item).__name__} for a channel: not a record batch or a registered event"
        )
    return encode(item)


# hot path: called per buffer received
def deserialize_item(data: bytes | memoryview) -> Any:
    """The record batch or event that `serialize_item` turned into `data`."""
    tag = data[0]
    if tag == PICKLE_TAG:
        return pickle.loads(data)
    decode = _decoders.get(tag)
    if decode is None:
        raise ValueError(f"unknown channel item tag {tag:#x}: the peer runs a different serializer registry")
    return decode(data)


# -- built-in events ---------------------------------------------------------------------------------
WATERMARK_TAG, STREAM_STATUS_TAG, END_OF_PARTITION_TAG, CHECKPOINT_BARRIER_TAG = 0x01, 0x02, 0x03, 0x04

_WATERMARK = struct.Struct("!Bq")
_BARRIER = struct.Struct("!Bqq?q")
BARRIER_SIZE = _BARRIER.size
_END_OF_PARTITION_BYTES = bytes([END_OF_PARTITION_TAG])
_IDLE_BYTES = bytes([STREAM_STATUS_TAG, 1])
_ACTIVE_BYTES = bytes([STREAM_STATUS_TAG, 0])


def _encode_watermark(event: WatermarkEvent) -> bytes:
    ts = event.timestamp
    if type(ts) is not int or not MIN_WATERMARK <= ts <= MAX_WATERMARK:
        raise ValueError(f"watermark {ts!r} is not a 64-bit integer timestamp in milliseconds")
    return _WATERMARK.pack(WATERMARK_TAG, ts)


def _decode_watermark(data: bytes | memoryview) -> WatermarkEvent:
    return WatermarkEvent(_WATERMARK.unpack_from(data)[1])


def _encode_barrier(event: CheckpointBarrier) -> bytes:
    return _BARRIER.pack(
        CHECKPOINT_BARRIER_TAG, event.checkpoint_id, event.timestamp, event.unaligned, event.alignment_timeout_ms
    )


def _decode_barrier(data: bytes | memoryview) -> CheckpointBarrier:
    _tag, checkpoint_id, timestamp, unaligned, timeout = _BARRIER.unpack_from(data)
    return CheckpointBarrier(checkpoint_id, timestamp, unaligned, timeout)


def _decode_stream_status(data: bytes | memoryview) -> StreamStatusEvent:
    return IDLE if data[1] else ACTIVE


register_event_type(WatermarkEvent, WATERMARK_TAG, _encode_watermark, _decode_watermark)
register_event_type(
    StreamStatusEvent,
    STREAM_STATUS_TAG,
    lambda e: _IDLE_BYTES if e.idle else _ACTIVE_BYTES,
    _decode_stream_status,
)
register_event_type(
    EndOfPartition, END_OF_PARTITION_TAG, lambda _e: _END_OF_PARTITION_BYTES, lambda _d: END_OF_PARTITION
)
register_event_type(CheckpointBarrier, CHECKPOINT_BARRIER_TAG, _encode_barrier, _decode_barrier)
