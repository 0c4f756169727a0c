"""In-process channels and input gates with credit-based back pressure.

A channel carries buffers (record batches) and events from one producer subtask to one
consumer subtask, in order. Its capacity is the number of credits: buffers the
consumer has room for. A producer that finds no credit blocks until the consumer takes
a buffer; that is back pressure, and the time spent blocked is measured. A TCP channel
(remote producer) plugs into the same `InputGate` through the same `put` interface.

For checkpoint barrier alignment the consumer can block channels: a blocked channel's items
stay in its bounded queue (its producer runs out of credit and waits), nothing is buffered
elsewhere, until `unblock_all`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any


class TaskCancelledError(Exception):
    """Raised inside a task whose job is being cancelled."""


class LocalChannel:
    """The consumer-side queue of one channel. For a producer in the same process it is also the
    producer's end (`put`); for a remote producer a network reader fills it and `on_consumed`
    returns one credit to the producer each time the consumer takes an item."""

    __slots__ = (
        "gate", "index", "input_index", "capacity", "queue", "back_pressured_ns", "finished", "on_consumed",
        "bytes_received",
    )

    def __init__(self, gate: InputGate, index: int, input_index: int, capacity: int) -> None:
        self.gate = gate
        self.index = index
        self.input_index = input_index
        self.capacity = capacity
        self.queue: deque[Any] = deque()
        self.back_pressured_ns = 0
        self.finished = False
        self.on_consumed: Any = None
        self.bytes_received = 0  # counted by a network reader; 0 for in-process channels

    def abort(self) -> None:
        """Wake a producer blocked in put() (the job is being cancelled)."""
        self.gate.cancel()

    def put(self, item: Any) -> None:
        """Send a buffer or event; blocks while the consumer has no credit left."""
        gate = self.gate
        with gate.cond:
            if len(self.queue) >= self.capacity and type(item) is tuple:
                start = time.perf_counter_ns()
                while len(self.queue) >= self.capacity:
                    if gate.cancelled:
                        raise TaskCancelledError()
                    gate.cond.wait(0.5)
                self.back_pressured_ns += time.perf_counter_ns() - start
            if gate.cancelled:
                raise TaskCancelledError()
            self.queue.append(item)
            gate.pending += 1
            gate.cond.notify_all()


class InputGate:
    """All input channels of one subtask; the consumer takes from whichever has data."""

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.channels: list[LocalChannel] = []
        self.pending = 0
        self.cancelled = False
        self._next = 0
        self.blocked: set[int] = set()  # indexes of channels not polled (barrier alignment)

    def add_channel(self, input_index: int, capacity: int) -> LocalChannel:
        ch = LocalChannel(self, len(self.channels), input_index, capacity)
        self.channels.append(ch)
        return ch

    def block_channel(self, channel: LocalChannel) -> None:
        """Stop taking items from `channel` until `unblock_all` (consumer thread only)."""
        self.blocked.add(channel.index)

    def unblock_all(self) -> None:
        self.blocked.clear()

    # hot path: called per buffer received
    def poll(self, timeout: float | None) -> tuple[LocalChannel, Any] | None:
        """The next item from any channel (round robin), waiting up to `timeout` seconds."""
        if self.blocked:
            return self._poll_unblocked(timeout)
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
                    item = ch.queue.popleft()
                    self.pending -= 1
                    cond.notify_all()  # a producer may be waiting for this credit
                    break
            else:
                return None
        if ch.on_consumed is not None:
            ch.on_consumed()  # outside the lock: it may write to a socket
        return ch, item

    def _poll_unblocked(self, timeout: float | None) -> tuple[LocalChannel, Any] | None:
        """`poll` while some channels are blocked: `pending` also counts their held items, so
        look at the unblocked channels and wait (once) when none has an item."""
        cond = self.cond
        blocked = self.blocked
        with cond:
            for attempt in (0, 1):
                if self.cancelled:
                    raise TaskCancelledError()
                for ch in self.channels:
                    if ch.queue and ch.index not in blocked:
                        item = ch.queue.popleft()
                        self.pending -= 1
                        cond.notify_all()
                        break
                else:
                    if attempt == 0 and (timeout is None or timeout > 0):
                        cond.wait(timeout)
                        continue
                    return None
                break
        if ch.on_consumed is not None:
            ch.on_consumed()
        return ch, item

    def cancel(self) -> None:
        with self.cond:
            self.cancelled = True
            self.cond.notify_all()
