"""Configuration options of checkpoint storage and retention, with Flink's keys and defaults.

Registered in the option registry at import. The `s3.*` keys are the ones Flink's S3 file
systems read; when the credentials are absent, boto3's standard chain (AWS_* environment
variables, shared profiles, instance roles) applies. The timeouts and attempts mirror Flink's
`s3.*` -> `fs.s3a.*` keys so that an unreachable endpoint fails a checkpoint in bounded time.
"""

from __future__ import annotations

from strom.common import config_options as opts
from strom.common.config_options import option
from strom.common.config_options import read_option as read_option  # re-exported: readers of these options
from strom.common.configuration import Configuration

# the `s3.*` options live beside the S3 client that the file source shares with checkpoint storage
from strom.common.s3_client import (  # noqa: F401 - re-exported: checkpoint code reads them from here
    S3_ACCESS_KEY,
    S3_ATTEMPTS,
    S3_CONNECT_TIMEOUT,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_SECRET_KEY,
    S3_SOCKET_TIMEOUT,
)

NUM_RETAINED = option(
    "state.checkpoints.num-retained", "int", 1, "Completed checkpoints kept; older ones are subsumed.", minimum=1
)
EXTERNALIZED_RETENTION = option(
    "execution.checkpointing.externalized-checkpoint-retention",
    "enum",
    "NO_EXTERNALIZED_CHECKPOINTS",
    "What happens to retained checkpoints when the job ends.",
    allowed=("NO_EXTERNALIZED_CHECKPOINTS", "DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"),
)


def snapshot_staging_dir(config: Configuration) -> str:
    """Where the tasks of a job write snapshots: `state.checkpoints.dir`, else (a job that only takes
    savepoints) `state.savepoints.dir`, whose `<job-id>/chk-<n>` staging directories are removed once
    each savepoint is copied into its own directory. '' when the job can take neither."""
    return str(config.get(opts.CHECKPOINTS_DIR) or config.get(opts.SAVEPOINTS_DIR) or "")


def takes_snapshots(config: Configuration) -> bool:
    """Periodic checkpoints are enabled, or savepoints can be staged (Flink takes savepoints of jobs
    without periodic checkpointing too)."""
    return config.get(opts.CHECKPOINT_INTERVAL) > 0 or bool(snapshot_staging_dir(config))


def barrier_alignment(config: Configuration | None) -> tuple[bool, int]:
    """How a source task's checkpoint barriers go: (unaligned, alignment timeout in ms or -1). Unaligned
    checkpoints need EXACTLY_ONCE; with an aligned-checkpoint-timeout they start aligned."""
    if config is None or not config.get(opts.UNALIGNED_CHECKPOINTS):
        return False, -1
    if config.get(opts.CHECKPOINT_MODE) != "EXACTLY_ONCE":
        return False, -1
    timeout = int(config.get(opts.ALIGNED_CHECKPOINT_TIMEOUT))
    return (True, -1) if timeout <= 0 else (False, timeout)
