"""In-process channels and input gates with credit-based back pressure, bounded in bytes.

A channel carries buffers (record batches) and events from one producer subtask to one
consumer subtask, in order. Its capacity is the number of credits: network buffers of
`taskmanager.memory.segment-size` bytes the consumer has room for (`network_memory`). A
producer that finds no credit blocks until the consumer takes a buffer; that is back pressure,
and the time spent blocked is measured. A TCP channel (remote producer) plugs into the same
`InputGate`: its network reader queues the serialized buffers as they arrive, each one credit,
a record batch larger than a segment as several fragments (`PartialBuffer`s then the last one as
bytes), and the consumer task reassembles and deserializes them when it takes them, so what a
channel holds is credits x segment size whatever the record size. An in-process producer queues
its batch objects with their cost in buffers (estimated serialized size); a batch costing more than
the whole capacity is let in alone when the queue is empty (a record spanning buffers).

For checkpoint barrier alignment the consumer can block channels: a blocked channel's items
stay in its bounded queue (its producer runs out of credit and waits), nothing is buffered
elsewhere, until `unblock_all`. For unaligned checkpoints a barrier can be put at the head of a
queue (`put_priority`, no credit), overtaking what is queued; the gate then hands out that
overtaken in-flight data (`capture`), records what the task takes from channels whose barrier
has not come yet (`start_recording`), and puts recovered channel state back in front (`recover`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import replace
from typing import Any

from strom.runtime.network.events import CheckpointBarrier
from strom.runtime.network.serialization import BARRIER_SIZE, CHECKPOINT_BARRIER_TAG, deserialize_item


class TaskCancelledError(Exception):
    """Raised inside a task whose job is being cancelled."""


class PartialBuffer:
    """A fragment of a serialized record batch that continues in the channel's next buffer."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def _queued_barrier(item: Any, before: Any, partial: list[bytes] | None) -> CheckpointBarrier | None:
    """The checkpoint barrier `item` is (an object, or the whole serialized event of a remote channel)."""
    t = type(item)
    if t is CheckpointBarrier:
        return item
    if (
        t is bytes
        and len(item) == BARRIER_SIZE
        and item[0] == CHECKPOINT_BARRIER_TAG
        and type(before) is not PartialBuffer
        and not partial
    ):
        return deserialize_item(item)  # type: ignore[no-any-return]
    return None


class LocalChannel:
    """The consumer-side queue of one channel. For a producer in the same process it is also the
    producer's end (`put`); for a remote producer a network reader fills it (one credit per buffer)
    and `on_consumed` returns one credit to the producer each time the consumer takes a buffer."""

    __slots__ = (
        "gate", "index", "input_index", "capacity", "queue", "costs", "queued", "partial", "back_pressured_ns",
        "finished", "on_consumed", "bytes_received", "overtaken",
    )

    def __init__(self, gate: InputGate, index: int, input_index: int, capacity: int) -> None:
        self.gate = gate
        self.index = index
        self.input_index = input_index
        self.capacity = capacity
        self.queue: deque[Any] = deque()
        self.costs: deque[int] = deque()  # buffers each queued item takes, parallel to `queue`
        self.queued = 0  # buffers queued: sum(costs), at most `capacity` (or one item alone)
        self.partial: list[bytes] = []  # fragments of a batch still being reassembled (consumer thread)
        self.back_pressured_ns = 0
        self.finished = False
        self.on_consumed: Any = None
        self.bytes_received = 0  # counted by a network reader; 0 for in-process channels
        self.overtaken = 0  # items a priority barrier at the head of the queue overtook

    def abort(self) -> None:
        """Wake a producer blocked in put() (the job is being cancelled)."""
        self.gate.cancel()

    def put(self, item: Any, size_hint: int = 0) -> None:
        """Send a buffer or event; blocks while the consumer has no credit left. `size_hint` is the
        batch's estimated serialized size, which says how many buffers it takes."""
        gate = self.gate
        cost = -(-size_hint // gate.segment_size) or 1 if type(item) is tuple else 0
        with gate.cond:
            if cost and self.queued and self.queued + cost > self.capacity:
                start = time.perf_counter_ns()
                while self.queued and self.queued + cost > self.capacity:
                    if gate.cancelled:
                        raise TaskCancelledError()
                    gate.cond.wait(0.5)
                self.back_pressured_ns += time.perf_counter_ns() - start
            if gate.cancelled:
                raise TaskCancelledError()
            self.queue.append(item)
            self.costs.append(cost)
            self.queued += cost
            gate.pending += 1
            gate.cond.notify_all()

    def put_priority(self, barrier: Any) -> None:
        """Put an unaligned checkpoint barrier at the head of the queue, without credit."""
        with self.gate.cond:
            self.gate.insert_priority(self, barrier)


class InputGate:
    """All input channels of one subtask; the consumer takes from whichever has data."""

    def __init__(self, segment_size: int = 32 * 1024) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.channels: list[LocalChannel] = []
        self.pending = 0
        self.cancelled = False
        self.segment_size = segment_size
        self._next = 0
        self.blocked: set[int] = set()  # indexes of channels not polled (barrier alignment)
        self.recording: dict[int, list[Any]] = {}  # channel index -> items taken (unaligned checkpoint)

    def add_channel(self, input_index: int, capacity: int) -> LocalChannel:
        ch = LocalChannel(self, len(self.channels), input_index, capacity)
        self.channels.append(ch)
        return ch

    def block_channel(self, channel: LocalChannel) -> None:
        """Stop taking items from `channel` until `unblock_all` (consumer thread only)."""
        self.blocked.add(channel.index)

    def unblock_all(self) -> None:
        self.blocked.clear()

    # -- unaligned checkpoints -------------------------------------------------------------------------
    def insert_priority(self, ch: LocalChannel, barrier: Any, cost: int = 0) -> None:
        """(Under the lock.) `barrier` overtakes everything queued in `ch`: it goes first, credit-free."""
        ch.queue.appendleft(barrier)
        ch.costs.appendleft(cost)
        ch.queued += cost
        ch.overtaken = len(ch.queue) - 1
        self.pending += 1
        self.cond.notify_all()

    def promote_overdue_barriers(self, now_ms: float) -> None:
        """An aligned barrier that may turn unaligned (aligned-checkpoint-timeout) and has waited in a
        queue past its timeout jumps to the head of the queue, unaligned: what it passes becomes in-flight
        data of the checkpoint, as when Flink times out a barrier in a queue."""
        with self.cond:
            for ch in self.channels:
                if ch.index in self.blocked:
                    continue
                queue = ch.queue
                for i, item in enumerate(queue):
                    barrier = _queued_barrier(item, queue[i - 1] if i else None, ch.partial if not i else None)
                    if barrier is None:
                        continue
                    if not barrier.unaligned and 0 <= barrier.alignment_timeout_ms <= now_ms - barrier.timestamp:
                        cost = ch.costs[i]
                        del queue[i]
                        del ch.costs[i]
                        ch.queued -= cost
                        self.pending -= 1
                        self.insert_priority(ch, replace(barrier, unaligned=True), cost)
                        ch.overtaken = i
                    break

    def capture(self, ch: LocalChannel, *, with_partial: bool) -> list[Any]:
        """(Consumer thread.) The in-flight data a priority barrier just taken from `ch` overtook: the
        fragments of a batch the task had begun to take (`with_partial`) and the overtaken queued items,
        which stay queued and are processed as usual after the snapshot."""
        with self.cond:
            state = [PartialBuffer(p) for p in ch.partial] if with_partial else []
            n, ch.overtaken = ch.overtaken, 0
            for i in range(n):
                state.append(ch.queue[i])
        return state

    def start_recording(self, ch: LocalChannel) -> None:
        """Keep what the task takes from `ch` from now on (and the fragments it holds), until
        `stop_recording`: in-flight data before a barrier that has not arrived yet."""
        with self.cond:
            self.recording[ch.index] = [PartialBuffer(p) for p in ch.partial]

    def stop_recording(self, ch: LocalChannel) -> list[Any]:
        with self.cond:
            items = self.recording.pop(ch.index, [])
        return [x for x in items if type(x) is not CheckpointBarrier]

    def recover(self, ch: LocalChannel, items: list[Any]) -> None:
        """Put `ch`'s channel state of a restored checkpoint in front of anything that arrives; it takes
        no credit (it is not in the producer's account)."""
        with self.cond:
            ch.queue.extendleft(reversed(items))
            ch.costs.extendleft([0] * len(items))
            self.pending += len(items)
            self.cond.notify_all()

    # hot path: called per buffer received
    def poll(self, timeout: float | None) -> tuple[LocalChannel, Any] | None:
        """The next item from any channel (round robin), waiting up to `timeout` seconds. Fragments of
        a serialized batch are taken (each returns its credit) until the batch is whole."""
        got = self._take(timeout)
        while got is not None:
            ch, item = got
            t = type(item)
            if t is bytes:
                return ch, self._decode(ch, item)
            if t is not PartialBuffer:
                return got
            ch.partial.append(item.data)
            # the rest of the batch is on its way (the producer sends it with the credit just returned)
            got = self._take_from(ch, timeout)
        return None

    def _decode(self, ch: LocalChannel, data: bytes) -> Any:
        if ch.partial:
            ch.partial.append(data)
            data = b"".join(ch.partial)
            ch.partial = []
        try:
            return deserialize_item(data)
        except Exception as e:  # noqa: BLE001 - a buffer that does not decode fails the task, with its cause
            raise ConnectionError(f"input channel {ch.index}: cannot read a buffer: {type(e).__name__}: {e}") from e

    def _take(self, timeout: float | None) -> tuple[LocalChannel, Any] | None:
        if self.blocked:
            return self._take_unblocked(timeout)
        cond = self.cond
        with cond:
            if self.pending == 0:
                if self.cancelled:
                    raise TaskCancelledError()
                if timeout is None or timeout > 0:
                    cond.wait(timeout)
                if self.cancelled:
                    raise TaskCancelledError()
                if self.pending == 0:
                    return None
            channels = self.channels
            n = len(channels)
            i = self._next
            for _ in range(n):
                ch = channels[i]
                i = i + 1 if i + 1 < n else 0
                if ch.queue:
                    self._next = i
                    item, cost = self._pop(ch)
                    break
            else:
                return None
        if cost and ch.on_consumed is not None:
            ch.on_consumed()  # outside the lock: it may write to a socket
        return ch, item

    def _pop(self, ch: LocalChannel) -> tuple[Any, int]:
        """Take `ch`'s next item and its cost in buffers (under the lock), and free its buffers."""
        item = ch.queue.popleft()
        cost = ch.costs.popleft()
        ch.queued -= cost
        self.pending -= 1
        if self.recording:
            taken = self.recording.get(ch.index)
            if taken is not None:
                taken.append(item)
        self.cond.notify_all()  # a producer may be waiting for this credit
        return item, cost

    def _take_from(self, ch: LocalChannel, timeout: float | None) -> tuple[LocalChannel, Any] | None:
        """The next item of `ch` only (the rest of a fragmented batch), waiting up to `timeout`."""
        cond = self.cond
        deadline = None if timeout is None else time.monotonic() + timeout
        with cond:
            while not ch.queue:
                if self.cancelled:
                    raise TaskCancelledError()
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    return None
                cond.wait(wait)
            item, cost = self._pop(ch)
        if cost and ch.on_consumed is not None:
            ch.on_consumed()
        return ch, item

    def _take_unblocked(self, timeout: float | None) -> tuple[LocalChannel, Any] | None:
        """`_take` while some channels are blocked: `pending` also counts their held items, so
        look at the unblocked channels and wait (once) when none has an item."""
        cond = self.cond
        blocked = self.blocked
        with cond:
            for attempt in (0, 1):
                if self.cancelled:
                    raise TaskCancelledError()
                for ch in self.channels:
                    if ch.queue and ch.index not in blocked:
                        item, cost = self._pop(ch)
                        break
                else:
                    if attempt == 0 and (timeout is None or timeout > 0):
                        cond.wait(timeout)
                        continue
                    return None
                break
        if cost and ch.on_consumed is not None:
            ch.on_consumed()
        return ch, item

    def cancel(self) -> None:
        with self.cond:
            self.cancelled = True
            self.cond.notify_all()
