"""Configuration options of checkpoint storage and retention, with Flink's keys and defaults.

Registered in the option registry at import. The `s3.*` keys are the ones Flink's S3 file
systems read; when the credentials are absent, boto3's standard chain (AWS_* environment
variables, shared profiles, instance roles) applies. The timeouts and attempts mirror Flink's
`s3.*` -> `fs.s3a.*` keys so that an unreachable endpoint fails a checkpoint in bounded time.
"""

from __future__ import annotations

from typing import Any

from strom.common import config_options as opts
from strom.common.config_options import ConfigOption, option

S3_ENDPOINT = option("s3.endpoint", "str", "", "S3 endpoint URL for S3-compatible stores; empty = AWS.")
S3_ACCESS_KEY = option("s3.access-key", "str", "", "S3 access key; empty = boto3's credential chain.")
S3_SECRET_KEY = option("s3.secret-key", "str", "", "S3 secret key; empty = boto3's credential chain.")
S3_PATH_STYLE_ACCESS = option(
    "s3.path.style.access", "bool", False, "Address buckets as endpoint/bucket (most S3-compatible stores)."
)
S3_REGION = option("s3.region", "str", "", "S3 region; empty = boto3's chain (AWS_REGION, profile).")
S3_CONNECT_TIMEOUT = option(
    "s3.connection.establish.timeout", "duration", 5_000, "Timeout to open a connection to S3.", minimum=1
)
S3_SOCKET_TIMEOUT = option("s3.connection.timeout", "duration", 60_000, "Timeout of one S3 read.", minimum=1)
S3_ATTEMPTS = option(
    "s3.attempts.maximum", "int", 3, "Attempts of one S3 request, the first one included.", minimum=1
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


def read_option(config: Any, opt: ConfigOption) -> Any:
    """The parsed value of `opt` in a `Configuration`, a mapping or None (then the default).

    Parsed here because a configuration built before this module was imported keeps `s3.*` and
    `state.*` values unparsed (the registry passes those namespaces through).
    """
    raw = config.get(opt.key) if config is not None else None
    return opt.default if raw is None else opt.parse(raw)


def snapshot_staging_dir(config: Any) -> str:
    """Where the tasks of a job write snapshots: `state.checkpoints.dir`, else (a job that only takes
    savepoints) `state.savepoints.dir`, whose `<job-id>/chk-<n>` staging directories are removed once
    each savepoint is copied into its own directory. '' when the job can take neither."""
    return str(config.get(opts.CHECKPOINTS_DIR) or config.get(opts.SAVEPOINTS_DIR) or "")


def takes_snapshots(config: Any) -> bool:
    """Periodic checkpoints are enabled, or savepoints can be staged (Flink takes savepoints of jobs
    without periodic checkpointing too)."""
    return config.get(opts.CHECKPOINT_INTERVAL) > 0 or bool(snapshot_staging_dir(config))
