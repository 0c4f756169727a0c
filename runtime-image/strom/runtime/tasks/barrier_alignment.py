"""Checkpoint barrier handling of one task with input channels: when does the task snapshot, and
which in-flight data belongs to an unaligned checkpoint?

EXACTLY_ONCE, aligned: once a barrier arrived on a channel, that channel is blocked (its items stay
in its bounded queue) until the barrier arrived on every live channel; then the task snapshots and
forwards the barrier, and every channel is unblocked. So the snapshot reflects exactly the
records before the barrier on every input. AT_LEAST_ONCE: nothing is blocked; the task
snapshots when the last barrier arrives, so records after the barrier on a fast channel may
already be in the state (replayed again after a restore).

EXACTLY_ONCE, unaligned (Flink's unaligned checkpoints): the first barrier makes the task snapshot
at once, nothing is blocked. The barrier arrived as a priority event at the head of its channel's
queue; what it overtook is in-flight data of the checkpoint (`InputGate.capture`). On every other
channel, what the task takes until that channel's barrier arrives is in-flight data too
(`InputGate.start_recording`). Once every channel delivered its barrier the input channel state
is complete (`take_channel_state`). With an alignment timeout, a checkpoint starts aligned and
switches to unaligned when alignment has lasted longer than the timeout since the checkpoint was
triggered (`check_timeout`; the barrier carries the timeout, savepoints none), or when an upstream
task already switched (its barrier is unaligned).

A channel that ends (its producer finished) no longer counts: the barrier will never come on
it, and waiting for it would block checkpoints and the inputs forever. The coordinator aborts
such a checkpoint since the finished producer never acknowledges it (Flink before 1.14).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from strom.runtime.network.events import CheckpointBarrier

NO_CHECKPOINT = -1


class BarrierAligner:
    def __init__(
        self,
        gate: Any,
        *,
        exactly_once: bool,
        clock_ms: Callable[[], float] = lambda: time.time() * 1000,
    ) -> None:
        self.gate = gate
        self.exactly_once = exactly_once
        self.clock_ms = clock_ms
        self.live: set[int] = {ch.index for ch in gate.channels}
        self.seen: set[int] = set()
        self.current = NO_CHECKPOINT  # the checkpoint being aligned
        self.last = NO_CHECKPOINT  # the newest checkpoint snapshotted or abandoned
        self.barrier: CheckpointBarrier | None = None
        self.unaligned = False  # the current checkpoint was snapshotted unaligned; its channel state is open
        self.channel_state: dict[int, list[Any]] = {}
        self._complete_state: tuple[int, dict[int, list[Any]]] | None = None

    @property
    def aligning(self) -> bool:
        return self.current != NO_CHECKPOINT and not self.unaligned

    def on_barrier(self, channel: Any, barrier: CheckpointBarrier) -> CheckpointBarrier | None:
        """A barrier arrived on `channel`; returns the barrier when the task must snapshot now."""
        cid = barrier.checkpoint_id
        if cid <= self.last:
            return None  # the remainder of an abandoned checkpoint
        if cid > self.current:
            if self.current != NO_CHECKPOINT:
                self._reset()  # a newer checkpoint overtook this one, which can no longer complete
            self.current = cid
            self.barrier = barrier
        if self.unaligned:
            self._channel_done(channel, overtaken=self.gate.capture(channel, with_partial=False))
            return None
        self.seen.add(channel.index)
        if barrier.unaligned and self.exactly_once:
            return self._switch(first=channel)
        if self.seen >= self.live:
            return self._aligned()
        if self.exactly_once:
            self.gate.block_channel(channel)
        return None

    def check_timeout(self) -> CheckpointBarrier | None:
        """While aligning: the barrier to snapshot unaligned now, once alignment exceeded the timeout."""
        barrier = self.barrier
        if not self.aligning or barrier is None or barrier.alignment_timeout_ms < 0 or not self.exactly_once:
            return None
        if self.clock_ms() - barrier.timestamp < barrier.alignment_timeout_ms:
            return None
        return self._switch(first=None)

    def on_channel_finished(self, channel: Any) -> CheckpointBarrier | None:
        """`channel` ended; returns the barrier when that completes the alignment in progress."""
        self.live.discard(channel.index)
        if self.unaligned:
            if channel.index in self.gate.recording:
                self._channel_done(channel, overtaken=[])
            return None
        if self.current != NO_CHECKPOINT and self.seen >= self.live:
            return self._aligned()
        return None

    def take_channel_state(self) -> tuple[int, dict[int, list[Any]]] | None:
        """Once per unaligned checkpoint: (checkpoint id, in-flight data by channel index) when complete."""
        done, self._complete_state = self._complete_state, None
        return done

    def abort(self, checkpoint_id: int) -> None:
        """The coordinator abandoned `checkpoint_id`: stop aligning it, and ignore its late barriers."""
        if checkpoint_id == self.current:
            self._reset()
        self.last = max(self.last, checkpoint_id)

    # -- internals ---------------------------------------------------------------------------------
    def _switch(self, *, first: Any) -> CheckpointBarrier:
        """Snapshot now, unaligned: channels whose barrier came in order (seen) hold no in-flight data of
        the checkpoint; `first` (its barrier a priority one) holds what its barrier overtook; every other
        live channel is recorded until its barrier comes."""
        assert self.barrier is not None
        self.unaligned = True
        self.gate.unblock_all()
        self.channel_state = {i: [] for i in self.seen}
        if first is not None:
            self.channel_state[first.index] = self.gate.capture(first, with_partial=True)
        for ch in self.gate.channels:
            if ch.index in self.live and ch.index not in self.seen:
                self.gate.start_recording(ch)
        barrier = replace(self.barrier, unaligned=True)
        self._maybe_complete()
        return barrier

    def _channel_done(self, channel: Any, *, overtaken: list[Any]) -> None:
        self.channel_state[channel.index] = self.gate.stop_recording(channel) + overtaken
        self.seen.add(channel.index)
        self._maybe_complete()

    def _maybe_complete(self) -> None:
        if self.unaligned and not self.gate.recording:
            self._complete_state = (self.current, {i: s for i, s in self.channel_state.items() if s})
            cid = self.current
            self._reset()
            self.last = max(self.last, cid)

    def _aligned(self) -> CheckpointBarrier | None:
        barrier = self.barrier
        self._reset()
        return barrier

    def _reset(self) -> None:
        self.last = max(self.last, self.current)
        self.current = NO_CHECKPOINT
        self.barrier = None
        self.seen.clear()
        self.unaligned = False
        self.channel_state = {}
        self.gate.recording.clear()
        self.gate.unblock_all()
