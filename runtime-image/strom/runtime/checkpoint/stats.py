"""Checkpoint statistics: what `/jobs/:jobid/checkpoints` and the checkpoint metrics report.

`CheckpointStatsTracker` is plain bookkeeping the coordinator feeds (triggered, acknowledged,
completed, failed, restored); it keeps counts, the latest of each kind and a bounded history,
newest first, as Flink's CheckpointStatsTracker does. Times are epoch milliseconds.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, replace

from strom.common.ids import CheckpointId

HISTORY_SIZE = 10  # Flink's web.checkpoints.history default


@dataclass(frozen=True, slots=True)
class CheckpointStats:
    """One checkpoint attempt; `status` is IN_PROGRESS, COMPLETED or FAILED (Flink's names)."""

    checkpoint_id: CheckpointId
    status: str
    trigger_timestamp: int
    num_subtasks: int
    num_acknowledged: int = 0
    latest_ack_timestamp: int = -1
    end_timestamp: int = -1  # completion or failure time
    external_path: str = ""
    failure_message: str = ""
    state_size: int = 0  # bytes the checkpoint wrote (state files and new shared files)
    persisted_data: int = 0  # of which in-flight data an unaligned checkpoint stored (channel state)
    unaligned: bool = False  # triggered as an unaligned checkpoint

    @property
    def end_to_end_duration(self) -> int:
        end = self.end_timestamp if self.end_timestamp > 0 else self.latest_ack_timestamp
        return max(0, end - self.trigger_timestamp) if end > 0 else 0


@dataclass(frozen=True, slots=True)
class RestoredCheckpointStats:
    checkpoint_id: CheckpointId
    restore_timestamp: int
    external_path: str
    is_savepoint: bool = False


@dataclass(frozen=True, slots=True)
class CheckpointStatsSnapshot:
    """A consistent copy of the tracker's figures, for the read model."""

    num_restored: int
    num_completed: int
    num_failed: int
    num_in_progress: int
    latest_completed: CheckpointStats | None
    latest_failed: CheckpointStats | None
    latest_restored: RestoredCheckpointStats | None
    history: tuple[CheckpointStats, ...]  # newest first

    @property
    def total(self) -> int:
        return self.num_completed + self.num_failed + self.num_in_progress


class CheckpointStatsTracker:
    """Thread-safe: the coordinator's thread, ack threads and REST readers all touch it."""

    def __init__(self, history_size: int = HISTORY_SIZE) -> None:
        self._lock = threading.Lock()
        self._history: deque[CheckpointStats] = deque(maxlen=history_size)
        self._in_progress: dict[int, CheckpointStats] = {}
        self._completed = 0
        self._failed = 0
        self._restored = 0
        self._latest_completed: CheckpointStats | None = None
        self._latest_failed: CheckpointStats | None = None
        self._latest_restored: RestoredCheckpointStats | None = None

    def triggered(
        self, checkpoint_id: CheckpointId, trigger_timestamp: int, num_subtasks: int, *, unaligned: bool = False
    ) -> None:
        with self._lock:
            self._in_progress[checkpoint_id] = CheckpointStats(
                checkpoint_id, "IN_PROGRESS", trigger_timestamp, num_subtasks, unaligned=unaligned
            )

    def acknowledged(self, checkpoint_id: CheckpointId) -> None:
        with self._lock:
            st = self._in_progress.get(checkpoint_id)
            if st is not None:
                self._in_progress[checkpoint_id] = replace(
                    st, num_acknowledged=st.num_acknowledged + 1, latest_ack_timestamp=_now_ms()
                )

    def completed(
        self, checkpoint_id: CheckpointId, external_path: str, state_size: int = 0, persisted_data: int = 0
    ) -> None:
        with self._lock:
            st = self._in_progress.pop(checkpoint_id, None)
            if st is None:
                return
            done = replace(
                st,
                status="COMPLETED",
                end_timestamp=_now_ms(),
                external_path=external_path,
                state_size=state_size,
                persisted_data=persisted_data,
            )
            self._completed += 1
            self._latest_completed = done
            self._history.appendleft(done)

    def failed(self, checkpoint_id: CheckpointId, reason: str) -> None:
        with self._lock:
            st = self._in_progress.pop(checkpoint_id, None)
            if st is None:
                return
            done = replace(st, status="FAILED", end_timestamp=_now_ms(), failure_message=reason)
            self._failed += 1
            self._latest_failed = done
            self._history.appendleft(done)

    def restored(self, checkpoint_id: CheckpointId, external_path: str) -> None:
        with self._lock:
            self._restored += 1
            self._latest_restored = RestoredCheckpointStats(checkpoint_id, _now_ms(), external_path)

    def snapshot(self) -> CheckpointStatsSnapshot:
        with self._lock:
            in_progress = sorted(self._in_progress.values(), key=lambda s: -s.checkpoint_id)
            return CheckpointStatsSnapshot(
                num_restored=self._restored,
                num_completed=self._completed,
                num_failed=self._failed,
                num_in_progress=len(in_progress),
                latest_completed=self._latest_completed,
                latest_failed=self._latest_failed,
                latest_restored=self._latest_restored,
                history=(*in_progress, *self._history),
            )

    def last_duration_ms(self) -> int:
        latest = self._latest_completed
        return latest.end_to_end_duration if latest is not None else 0

    def completed_count(self) -> int:
        return self._completed

    def failed_count(self) -> int:
        return self._failed

    def last_size(self) -> int:
        latest = self._latest_completed
        return latest.state_size if latest is not None else 0


def _now_ms() -> int:
    return int(time.time() * 1000)
