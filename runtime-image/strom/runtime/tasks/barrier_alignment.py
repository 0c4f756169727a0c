"""Checkpoint barrier alignment of one task with input channels: when does the task snapshot?

EXACTLY_ONCE: once a barrier arrived on a channel, that channel is blocked (its items stay in
its bounded queue) until the barrier arrived on every live channel; then the task snapshots and
forwards the barrier, and every channel is unblocked. So the snapshot reflects exactly the
records before the barrier on every input. AT_LEAST_ONCE: nothing is blocked; the task
snapshots when the last barrier arrives, so records after the barrier on a fast channel may
already be in the state (replayed again after a restore).

A channel that ends (its producer finished) no longer counts: the barrier will never come on
it, and waiting for it would block checkpoints and the inputs forever. The coordinator aborts
such a checkpoint since the finished producer never acknowledges it (Flink before 1.14).
Pure bookkeeping over channel indexes; the gate is only told which channels to block.
"""

from __future__ import annotations

from typing import Any

from strom.runtime.network.events import CheckpointBarrier

NO_CHECKPOINT = -1


class BarrierAligner:
    def __init__(self, gate: Any, *, exactly_once: bool) -> None:
        self.gate = gate
        self.exactly_once = exactly_once
        self.live: set[int] = {ch.index for ch in gate.channels}
        self.seen: set[int] = set()
        self.current = NO_CHECKPOINT  # the checkpoint being aligned
        self.last = NO_CHECKPOINT  # the newest checkpoint snapshotted or abandoned
        self.barrier: CheckpointBarrier | None = None

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
        self.seen.add(channel.index)
        if self.seen >= self.live:
            return self._aligned()
        if self.exactly_once:
            self.gate.block_channel(channel)
        return None

    def on_channel_finished(self, channel: Any) -> CheckpointBarrier | None:
        """`channel` ended; returns the barrier when that completes the alignment in progress."""
        self.live.discard(channel.index)
        if self.current != NO_CHECKPOINT and self.seen >= self.live:
            return self._aligned()
        return None

    def abort(self, checkpoint_id: int) -> None:
        """The coordinator abandoned `checkpoint_id`: stop aligning it, and ignore its late barriers."""
        if checkpoint_id == self.current:
            self._reset()
        self.last = max(self.last, checkpoint_id)

    def _aligned(self) -> CheckpointBarrier | None:
        barrier = self.barrier
        self._reset()
        return barrier

    def _reset(self) -> None:
        self.last = max(self.last, self.current)
        self.current = NO_CHECKPOINT
        self.barrier = None
        self.seen.clear()
        self.gate.unblock_all()
