"""Record writers: partition a producer's records over its output channels, in buffers.

One writer per non-chained output edge. Records are appended to a per-channel buffer
that is sent when full, on flush (buffer timeout, idle task, before every event), so events
never overtake records. Full means one network buffer of serialized bytes
(`taskmanager.memory.segment-size`, by the sampled size of a record: `network_memory`) or
`buffer_records` records, whichever comes first; so a writer holds about one segment per channel
whatever the record size, and a record larger than a segment goes alone (spanning buffers).
"""

from __future__ import annotations

import random
from itertools import compress
from typing import Any

from strom.common.key_groups import KeyGroupAssigner, describe_key_selector
from strom.common.row import detached
from strom.runtime.network.events import END_OF_PARTITION
from strom.runtime.network.network_memory import RecordSizeEstimator


def _copy(column: list[Any] | None) -> list[Any] | None:
    return list(column) if column is not None else None


class RecordWriter:
    def __init__(
        self,
        channels: list[Any],
        *,
        kind: str,
        buffer_records: int,
        key_selector: Any = None,
        custom_partitioner: Any = None,
        max_parallelism: int = 128,
        consumer_parallelism: int = 1,
        subtask_index: int = 0,
        segment_size: int = 32 * 1024,
    ) -> None:
        self.channels = channels
        self.kind = kind
        self.n = len(channels)
        self.buffer_records = buffer_records
        self.segment_size = segment_size
        self.sizes = RecordSizeEstimator()
        self.key_fn = key_selector.get_key if key_selector is not None else None
        self.partitioner = custom_partitioner
        owner = describe_key_selector(key_selector) if key_selector is not None else ""
        self.kg = KeyGroupAssigner(max_parallelism, owner=owner)
        self.max_parallelism = max_parallelism
        self.parallelism = consumer_parallelism
        self._values: list[list[Any]] = [[] for _ in channels]
        self._ts: list[list[Any] | None] = [None for _ in channels]
        self._keys: list[list[Any] | None] = [None for _ in channels]
        self._rr = subtask_index % max(1, self.n)
        self._rng = random.Random(subtask_index)
        self.records_out = 0
        self._channel_of: dict[Any, int] = {}

    # hot path: called per batch
    def emit(self, values: list[Any], timestamps: list[Any] | None) -> None:
        n = len(values)
        if not n:
            return
        values = detached(values)  # the consumer's own Rows: the producer may assign to its Row after emitting
        self.records_out += n
        self.sizes.sample(values)
        if self.n == 1 or self.kind in ("forward", "global"):
            self._append(0, values, timestamps, None)
        elif self.kind == "hash":
            self._emit_hash(values, timestamps)
        elif self.kind in ("rebalance", "rescale"):
            k = self.n
            start = self._rr
            for j in range(min(k, n)):
                ch = (start + j) % k
                self._append(ch, values[j::k], timestamps[j::k] if timestamps is not None else None, None)
            self._rr = (start + n) % k
        elif self.kind == "broadcast":
            for ch in range(self.n):
                self._append(ch, list(values), timestamps, None)
        elif self.kind == "shuffle":
            rnd = self._rng.randrange
            self._scatter([rnd(self.n) for _ in range(n)], values, timestamps, None)
        elif self.kind == "custom":
            key_fn, part, k = self.key_fn, self.partitioner.partition, self.n
            targets = []
            for v in values:
                t = part(key_fn(v), k)
                if not 0 <= t < k:
                    raise ValueError(f"custom partitioner returned channel {t}, expected 0..{k - 1}")
                targets.append(t)
            self._scatter(targets, values, timestamps, None)
        else:
            raise ValueError(f"unknown partitioner {self.kind!r}")
        self._send_full()

    def _emit_hash(self, values: list[Any], timestamps: list[Any] | None) -> None:
        # hot path: per record one key extraction, one dict lookup and appends straight into the
        # channel buffers. Keys travel with the records so the keyed consumer need not recompute them.
        bufs, tsb, kb = self._values, self._ts, self._keys
        for ch in range(self.n):
            if kb[ch] is None:
                kb[ch] = []  # a hash writer's buffers always carry keys
            if timestamps is not None and tsb[ch] is None:
                tsb[ch] = [None] * len(bufs[ch])
        key_fn, channel_of, channel_for, freeze = self.key_fn, self._channel_of, self._channel_for, self.kg.freeze
        value_appends = [b.append for b in bufs]
        key_appends = [k.append for k in kb]  # type: ignore[union-attr]
        if timestamps is None:
            ts_appends = [t.append if t is not None else None for t in tsb]
            for v in values:
                k = key_fn(v)
                try:
                    ch = channel_of[k]
                except KeyError:
                    ch = channel_for(k)
                except TypeError:  # a list, dict or set key travels as a FrozenKey (keyed by value)
                    k = freeze(k)
                    ch = channel_for(k)
                value_appends[ch](v)
                key_appends[ch](k)
                if ts_appends[ch] is not None:
                    ts_appends[ch](None)  # type: ignore[misc]
        else:
            ts_appends = [t.append for t in tsb]  # type: ignore[union-attr]
            for v, t in zip(values, timestamps, strict=True):
                k = key_fn(v)
                try:
                    ch = channel_of[k]
                except KeyError:
                    ch = channel_for(k)
                except TypeError:  # a list, dict or set key travels as a FrozenKey (keyed by value)
                    k = freeze(k)
                    ch = channel_for(k)
                value_appends[ch](v)
                key_appends[ch](k)
                ts_appends[ch](t)

    def _channel_for(self, key: Any) -> int:
        """key -> consumer subtask (key group * parallelism // max parallelism), memoized."""
        ch = self.kg.key_group(key) * self.parallelism // self.max_parallelism
        cache = self._channel_of
        if len(cache) >= 65536:
            cache.clear()
        cache[key] = ch
        return ch

    def _scatter(
        self, targets: list[int], values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None
    ) -> None:
        # hot path: per channel, a mask built once and C-level compress() for each column
        for ch in range(self.n):
            mask = [t == ch for t in targets]
            part = list(compress(values, mask))
            if part:
                self._append(
                    ch,
                    part,
                    list(compress(timestamps, mask)) if timestamps is not None else None,
                    list(compress(keys, mask)) if keys is not None else None,
                )

    def _append(self, ch: int, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        buf = self._values[ch]
        had = len(buf)
        buf.extend(values)
        bts = self._ts[ch]
        if timestamps is not None:
            if bts is None:
                bts = self._ts[ch] = [None] * had
            bts.extend(timestamps)
        elif bts is not None:
            bts.extend([None] * len(values))
        bks = self._keys[ch]
        if keys is not None:
            if bks is None and had:
                # keys of earlier records are unknown: drop keys for this buffer
                return
            if bks is None:
                bks = self._keys[ch] = []
            bks.extend(keys)
        elif bks is not None:
            self._keys[ch] = None

    def _send_full(self) -> None:
        limit = self.sizes.records_for(self.segment_size, self.buffer_records)
        for ch, buf in enumerate(self._values):
            if len(buf) >= limit:
                self._send(ch, limit)

    def _send(self, ch: int, limit: int = 0) -> None:
        """Send channel `ch`'s buffer, in pieces of at most `limit` records (0: as it is); with a limit,
        a remainder smaller than the limit stays for the next records."""
        values = self._values[ch]
        if not values:
            return
        ts, keys = self._ts[ch], self._keys[ch]
        put = self.channels[ch].put
        record_bytes = self.sizes.record_bytes
        if limit and len(values) > limit:
            n = len(values)
            full = n - n % limit
            for i in range(0, full, limit):
                j = i + limit
                part = (values[i:j], ts[i:j] if ts is not None else None, keys[i:j] if keys is not None else None)
                put(part, limit * record_bytes)
            if full < n:
                self._values[ch] = values[full:]
                self._ts[ch] = ts[full:] if ts is not None else None
                self._keys[ch] = keys[full:] if keys is not None else None
                return
        else:
            put((values, ts, keys), len(values) * record_bytes)
        self._values[ch] = []
        self._ts[ch] = None
        self._keys[ch] = None

    def flush(self) -> None:
        for ch in range(self.n):
            if self._values[ch]:
                self._send(ch)

    def broadcast_event(self, event: Any) -> None:
        self.flush()
        for c in self.channels:
            c.put(event)

    def broadcast_priority(self, barrier: Any) -> dict[int, Any]:
        """Send an unaligned checkpoint barrier ahead of the buffered records (Flink's priority event: it
        jumps to the head of the output queues) and return those records by channel: the output channel
        state of the checkpoint. They stay buffered and go out after the barrier as usual."""
        state = {
            ch: (list(values), _copy(self._ts[ch]), _copy(self._keys[ch]))
            for ch, values in enumerate(self._values)
            if values
        }
        for c in self.channels:
            c.put_priority(barrier)
        return state

    def recover(self, state: dict[int, Any]) -> None:
        """Before any record: the output channel state of a restored checkpoint goes out first."""
        for ch, (values, ts, keys) in state.items():
            self._append(ch, values, ts, keys)

    def close(self) -> None:
        self.broadcast_event(END_OF_PARTITION)
