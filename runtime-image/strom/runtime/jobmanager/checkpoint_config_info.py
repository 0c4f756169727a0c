"""/jobs/:jobid/checkpoints/config: a job's checkpointing settings in Flink's CheckpointConfigInfo shape.

Read from the job's effective configuration (the cluster's with the job's own over it), so what the
dashboard shows is what the coordinator runs with: the same options, parsed the same way, with the
same defaults. Flink answers 404 for a job without periodic checkpoints; so does this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strom.common import config_options as opts
from strom.common.config_options import read_option
from strom.runtime.checkpoint import options as checkpoint_options
from strom.runtime.checkpoint.coordinator import CHECKPOINT_TIMEOUT, MIN_PAUSE, TOLERABLE_FAILED_CHECKPOINTS

# Flink's class names for what the dashboard calls "State Backend" and "Checkpoint Storage"
_STATE_BACKENDS = {"HASHMAP": "HashMapStateBackend", "ROCKSDB": "EmbeddedRocksDBStateBackend"}


def checkpoint_config_info(config: Mapping[str, str]) -> dict[str, Any] | None:
    """CheckpointConfigInfo of a job's effective configuration; None when checkpointing is off."""
    interval = int(read_option(config, opts.CHECKPOINT_INTERVAL))
    if interval <= 0:
        return None
    retention = read_option(config, checkpoint_options.EXTERNALIZED_RETENTION)
    has_storage = bool(read_option(config, opts.CHECKPOINTS_DIR))
    return {
        "mode": read_option(config, opts.CHECKPOINT_MODE).lower(),  # Flink's ProcessingMode: "exactly_once"
        "interval": interval,
        "timeout": int(read_option(config, CHECKPOINT_TIMEOUT)),
        "min_pause": int(read_option(config, MIN_PAUSE)),
        "max_concurrent": 1,  # the coordinator never triggers while a checkpoint is in progress
        "externalization": {
            "enabled": retention != "NO_EXTERNALIZED_CHECKPOINTS",
            "delete_on_cancellation": retention != "RETAIN_ON_CANCELLATION",
        },
        "state_backend": _STATE_BACKENDS[read_option(config, opts.STATE_BACKEND)],
        "checkpoint_storage": "FileSystemCheckpointStorage" if has_storage else "JobManagerCheckpointStorage",
        "unaligned_checkpoints": bool(read_option(config, opts.UNALIGNED_CHECKPOINTS)),
        "tolerable_failed_checkpoints": int(read_option(config, TOLERABLE_FAILED_CHECKPOINTS)),
        "aligned_checkpoint_timeout": int(read_option(config, opts.ALIGNED_CHECKPOINT_TIMEOUT)),
        "checkpoints_after_tasks_finish": False,  # not triggered once a task finished (Flink < 1.14)
        "state_changelog_enabled": False,
        "changelog_periodic_materialization_interval": 600_000,
        "changelog_storage": "memory",
    }
