"""A submitted job's effective configuration: the cluster's configuration with the job's own over it.

Flink's rule for every key: defaults < the cluster's configuration (the JobManager's config file and
`-D`) < the job's own settings (what its program set, and the submitting client's `-D`/`--config`).
So a session cluster started with `-D state.checkpoints.dir=...`, a restart strategy or a state
backend gives them to every job that does not set its own, and a job's value always wins.

Two keys are never inherited: where to restore from (`execution.savepoint.path` and its
`ignore-unclaimed-state`) belongs to one submission. A cluster started with `--from-savepoint` (application
mode) already hands it to its job through the job's own configuration; a session cluster must not
restore every later job from that savepoint. Nor is the cluster secret (`security.cluster-secret`, its
file), nor any `security.ssl.*` key (TLS material and its passwords): they are the processes' own, not the job's.

Parallelism is not layered here: a graph's parallelism is fixed when the client builds it (`-p`,
`parallelism.default` of the client), as with Flink's CLI, which resolves it before submission.
"""

from __future__ import annotations

from collections.abc import Mapping

from strom.common import config_options as opts
from strom.common import tls_options
from strom.common.configuration import Configuration
from strom.common.sensitive_keys import is_sensitive_key, masked_mapping

# Keys of one submission, never taken from the cluster; nor the cluster secret, which is the
# processes' own and would otherwise travel in every job's payload (and its high-availability copy).
NOT_INHERITED = frozenset({
    opts.SAVEPOINT_PATH.key,
    opts.SAVEPOINT_IGNORE_UNCLAIMED_STATE.key,
    opts.CLUSTER_SECRET.key,
    opts.CLUSTER_SECRET_FILE.key,
    *tls_options.ALL_KEYS,
})


def effective_job_configuration(cluster: Configuration, job: Configuration | None) -> Configuration:
    """The configuration a job runs with: `cluster`'s keys, then `job`'s over them."""
    effective = Configuration({k: v for k, v in cluster.to_dict().items() if k not in NOT_INHERITED})
    if job is not None:
        effective.add_all(job)
    return effective


# The one rule for secrets (Flink's GlobalConfiguration.isSensitive); the old name stays importable.
is_secret_key = is_sensitive_key


def shown_configuration(config: Configuration) -> Mapping[str, str]:
    """`config` as text for REST, secrets masked."""
    return masked_mapping(config.to_dict())
