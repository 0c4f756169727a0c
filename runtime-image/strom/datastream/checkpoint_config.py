"""`CheckpointConfig` and `ExternalizedCheckpointCleanup` (`pyflink.datastream.checkpoint_config`).

A view over the environment's Configuration: each getter and setter reads or writes the Flink key
the runtime's checkpoint coordinator and tasks read (`execution.checkpointing.*`, `state.*`).
Settings that Strom's coordinator has no counterpart for are said where they are.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from strom.common import config_options as opts
from strom.common.config_options import parse_duration_ms
from strom.common.configuration import Configuration
from strom.common.time import Duration, to_millis
from strom.datastream.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    checkpoint_storage_of,
)
from strom.datastream.execution_mode import CheckpointingMode

_TIMEOUT = "execution.checkpointing.timeout"
_MIN_PAUSE = "execution.checkpointing.min-pause"
_MAX_CONCURRENT = "execution.checkpointing.max-concurrent-checkpoints"
_TOLERABLE = "execution.checkpointing.tolerable-failed-checkpoints"
_RETENTION = "execution.checkpointing.externalized-checkpoint-retention"
_FORCE_UNALIGNED = "execution.checkpointing.unaligned.forced"
_MAX_SUBTASKS_PER_FILE = "execution.checkpointing.unaligned.max-subtasks-per-channel-state-file"
_IGNORED_IN_FLIGHT = "execution.checkpointing.recover-without-channel-state.checkpoint-id"
_APPROXIMATE_RECOVERY = "execution.checkpointing.approximate-local-recovery"
_INT_MAX = 2**31 - 1


class ExternalizedCheckpointCleanup(Enum):
    """What happens to retained (externalized) checkpoints when the job is cancelled; Flink's key
    `execution.checkpointing.externalized-checkpoint-retention`, which Strom's retention reads."""

    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


class CheckpointConfig:
    DEFAULT_MODE = CheckpointingMode.EXACTLY_ONCE
    DEFAULT_TIMEOUT = 10 * 60 * 1000
    DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS = 0
    DEFAULT_MAX_CONCURRENT_CHECKPOINTS = 1

    def __init__(self, configuration: Configuration) -> None:
        self._conf = configuration

    def _duration(self, key: str, default: int) -> int:
        raw = self._conf.get(key)
        return default if raw is None else parse_duration_ms(raw)

    def _int(self, key: str, default: int) -> int:
        raw = self._conf.get(key)
        return default if raw is None else int(raw)

    # -- interval and mode ------------------------------------------------------------------------
    def is_checkpointing_enabled(self) -> bool:
        return self._conf.get(opts.CHECKPOINT_INTERVAL) > 0

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        interval = checkpoint_interval
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 10:
            raise ValueError(f"checkpoint interval must be at least 10 ms, got {checkpoint_interval!r}")
        self._conf.set(opts.CHECKPOINT_INTERVAL.key, checkpoint_interval)
        return self

    def get_checkpoint_interval(self) -> int:
        """Milliseconds; -1 while checkpointing is disabled (Flink's value for 'disabled')."""
        interval = self._conf.get(opts.CHECKPOINT_INTERVAL)
        return interval if interval > 0 else -1

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        self._conf.set(opts.CHECKPOINT_MODE.key, getattr(checkpointing_mode, "name", checkpointing_mode))
        return self

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return CheckpointingMode[self._conf.get(opts.CHECKPOINT_MODE)]

    # -- pacing and failures ------------------------------------------------------------------------
    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        timeout = checkpoint_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
            raise ValueError(f"checkpoint timeout must be a positive number of milliseconds, got {timeout!r}")
        self._conf.set(_TIMEOUT, checkpoint_timeout)
        return self

    def get_checkpoint_timeout(self) -> int:
        return self._duration(_TIMEOUT, self.DEFAULT_TIMEOUT)

    def set_min_pause_between_checkpoints(self, min_pause_between_checkpoints: int) -> CheckpointConfig:
        if not isinstance(min_pause_between_checkpoints, int) or min_pause_between_checkpoints < 0:
            raise ValueError(f"min pause must be >= 0 milliseconds, got {min_pause_between_checkpoints!r}")
        self._conf.set(_MIN_PAUSE, min_pause_between_checkpoints)
        return self

    def get_min_pause_between_checkpoints(self) -> int:
        return self._duration(_MIN_PAUSE, self.DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS)

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        """Accepted and read back; Strom's coordinator runs one checkpoint at a time (an upper bound Flink allows)."""
        if not isinstance(max_concurrent_checkpoints, int) or max_concurrent_checkpoints < 1:
            raise ValueError(f"max concurrent checkpoints must be >= 1, got {max_concurrent_checkpoints!r}")
        self._conf.set(_MAX_CONCURRENT, max_concurrent_checkpoints)
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        return self._int(_MAX_CONCURRENT, self.DEFAULT_MAX_CONCURRENT_CHECKPOINTS)

    def set_tolerable_checkpoint_failure_number(self, tolerable_checkpoint_failure_number: int) -> CheckpointConfig:
        n = tolerable_checkpoint_failure_number
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"tolerable checkpoint failure number must be >= 0, got {n!r}")
        self._conf.set(_TOLERABLE, n)
        return self

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return self._int(_TOLERABLE, 0)

    def set_fail_on_checkpointing_errors(self, fail_on_checkpointing_errors: bool) -> CheckpointConfig:
        """Deprecated in Flink: true = no tolerated failure, false = unlimited (as Flink maps it)."""
        return self.set_tolerable_checkpoint_failure_number(0 if fail_on_checkpointing_errors else _INT_MAX)

    def is_fail_on_checkpointing_errors(self) -> bool:
        return self.get_tolerable_checkpoint_failure_number() == 0

    # -- retention --------------------------------------------------------------------------------
    def set_externalized_checkpoint_cleanup(self, cleanup_mode: ExternalizedCheckpointCleanup) -> CheckpointConfig:
        if not isinstance(cleanup_mode, Enum):
            raise TypeError(f"expected an ExternalizedCheckpointCleanup, got {cleanup_mode!r}")
        self._conf.set(_RETENTION, cleanup_mode.name)
        return self

    enable_externalized_checkpoints = set_externalized_checkpoint_cleanup

    def get_externalized_checkpoint_cleanup(self) -> ExternalizedCheckpointCleanup:
        """Flink 1.20's default: NO_EXTERNALIZED_CHECKPOINTS."""
        raw = self._conf.get(_RETENTION) or "NO_EXTERNALIZED_CHECKPOINTS"
        return ExternalizedCheckpointCleanup[str(raw).strip().upper().replace("-", "_")]

    def is_externalized_checkpoints_enabled(self) -> bool:
        none = ExternalizedCheckpointCleanup.NO_EXTERNALIZED_CHECKPOINTS
        return self.get_externalized_checkpoint_cleanup() is not none

    def set_externalized_checkpoint_retention(self, retention_mode: Any) -> CheckpointConfig:
        """Flink 1.20's name (ExternalizedCheckpointRetention), the same key."""
        return self.set_externalized_checkpoint_cleanup(retention_mode)

    def get_externalized_checkpoint_retention(self) -> Any:
        from strom.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention

        return ExternalizedCheckpointRetention[self.get_externalized_checkpoint_cleanup().name]

    def set_prefer_checkpoint_for_recovery(self, prefer_checkpoint_for_recovery: bool) -> CheckpointConfig:
        """Accepted: a Strom job recovers from its latest completed checkpoint, never a newer savepoint."""
        self._prefer_checkpoint = bool(prefer_checkpoint_for_recovery)
        return self

    def is_prefer_checkpoint_for_recovery(self) -> bool:
        return getattr(self, "_prefer_checkpoint", False)

    # -- unaligned checkpoints --------------------------------------------------------------------
    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        self._conf.set(opts.UNALIGNED_CHECKPOINTS.key, bool(enabled))
        return self

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        return self.enable_unaligned_checkpoints(False)

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return bool(self._conf.get(opts.UNALIGNED_CHECKPOINTS))

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Duration | int) -> CheckpointConfig:
        self._conf.set(opts.ALIGNED_CHECKPOINT_TIMEOUT.key, to_millis(alignment_timeout, what="alignment_timeout"))
        return self

    def get_aligned_checkpoint_timeout(self) -> Duration:
        return Duration.of_millis(self._conf.get(opts.ALIGNED_CHECKPOINT_TIMEOUT))

    # the names of Flink 1.12-1.13
    set_alignment_timeout = set_aligned_checkpoint_timeout
    get_alignment_timeout = get_aligned_checkpoint_timeout

    def set_force_unaligned_checkpoints(self, force_unaligned_checkpoints: bool = True) -> CheckpointConfig:
        """Accepted and read back: Strom takes unaligned checkpoints of every job graph it can run."""
        self._conf.set(_FORCE_UNALIGNED, bool(force_unaligned_checkpoints))
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        raw = self._conf.get(_FORCE_UNALIGNED)
        return raw is not None and str(raw).strip().lower() == "true"

    def set_max_subtasks_per_channel_state_file(self, max_subtasks_per_channel_state_file: int) -> CheckpointConfig:
        """Accepted and read back: Strom writes one channel-state file per subtask."""
        self._conf.set(_MAX_SUBTASKS_PER_FILE, int(max_subtasks_per_channel_state_file))
        return self

    def get_max_subtasks_per_channel_state_file(self) -> int:
        return self._int(_MAX_SUBTASKS_PER_FILE, 5)

    def set_checkpoint_id_of_ignored_in_flight_data(self, checkpoint_id: int) -> CheckpointConfig:
        """Accepted and read back: Strom always restores a checkpoint's channel state."""
        self._conf.set(_IGNORED_IN_FLIGHT, int(checkpoint_id))
        return self

    def get_checkpoint_id_of_ignored_in_flight_data(self) -> int:
        return self._int(_IGNORED_IN_FLIGHT, -1)

    def enable_approximate_local_recovery(self, enabled: bool) -> CheckpointConfig:
        """Accepted and read back: a failed Strom task restarts the job from its latest checkpoint."""
        self._conf.set(_APPROXIMATE_RECOVERY, bool(enabled))
        return self

    def is_approximate_local_recovery_enabled(self) -> bool:
        raw = self._conf.get(_APPROXIMATE_RECOVERY)
        return raw is not None and str(raw).strip().lower() == "true"

    # -- storage ----------------------------------------------------------------------------------
    def set_checkpoint_storage(self, storage: CheckpointStorage) -> CheckpointConfig:
        if not isinstance(storage, CheckpointStorage):
            raise TypeError(
                f"set_checkpoint_storage expects a CheckpointStorage (FileSystemCheckpointStorage, "
                f"JobManagerCheckpointStorage), got {storage!r}"
            )
        storage._apply(self._conf)
        return self

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        return self.set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_path))

    def get_checkpoint_storage(self) -> CheckpointStorage | None:
        return checkpoint_storage_of(self._conf)
