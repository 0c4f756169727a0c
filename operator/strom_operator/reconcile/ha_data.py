"""Where a FlinkJob's JobManager keeps its high-availability data, so a deployment can start clean.

With checkpointing on, the JobManager runs with `high-availability.type: file` and the
FlinkJob's name as `high-availability.cluster-id`: it keeps the job graph and the latest checkpoint
pointer of each running job under `<high-availability.storageDir>/<cluster-id>/` (by default
`<state.checkpoints.dir>/_ha`). A JobManager that starts finds the jobs there and recovers them;
that is what makes a restarted JobManager pod continue its job, and it wins over `--from-savepoint`.

So whenever the operator deploys a job from the snapshot it chose (an upgrade's savepoint, the
checkpoint of a permitted fallback, the stable spec's snapshot when rolling back, nothing for
`stateless`), data left there by an earlier JobManager (one that was deleted while its job was still
running or restarting, or an earlier FlinkJob of the same name) must go first, or the new
JobManager would resume that job instead (the Flink Kubernetes Operator deletes HA data before such
deployments for the same reason).

S3 must not hold up a FlinkJob's first deployment, which restores nothing of its own
(`cleanup_policy`): there the cleanup is best effort (data of an earlier FlinkJob of the same name
goes when S3 answers; a missing credentials Secret or an S3 outage is a Warning event and the
deployment goes on). Any later deployment needs it: a failure is a condition and the pass is retried.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import unquote, urlparse

from strom_operator.clients.savepoint_disposal import S3Access
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.configmap import engine_configuration
from strom_operator.resources.labels import FlinkJobRef

HA_TYPE = "high-availability.type"
HA_STORAGE_DIR = "high-availability.storageDir"
HA_CLUSTER_ID = "high-availability.cluster-id"

NO_CLEANUP = "none"  # no HA data, or a JobManager runs (its recovery data stays)
BEST_EFFORT = "best-effort"  # a first deployment: nothing of this FlinkJob's to restore
REQUIRED = "required"


def cleanup_policy(uri: str | None, *, jobmanager_exists: bool, lifecycle_state: str | None) -> str:
    """Whether HA data must go before a deployment (see the module docstring). `lifecycle_state` is the
    FlinkJob's before the deployment: CREATED only before its first one."""
    if uri is None or jobmanager_exists:
        return NO_CLEANUP
    return BEST_EFFORT if lifecycle_state in (None, "CREATED") else REQUIRED


def checkpoints_dir(ref: FlinkJobRef, spec: FlinkJobSpec) -> str:
    return engine_configuration(ref, spec).get("state.checkpoints.dir", "").strip()


def ha_data_uri(ref: FlinkJobRef, spec: FlinkJobSpec) -> str | None:
    """The directory holding the HA data of the FlinkJob's JobManager, or None without HA.

    Read from the engine configuration the pods get, with the engine's defaults (storage next to
    the checkpoints, cluster-id `default`), so a user's `flinkConfiguration` overrides are followed.
    """
    conf = engine_configuration(ref, spec)
    if conf.get(HA_TYPE, "none").strip().lower() in ("", "none"):
        return None
    storage = conf.get(HA_STORAGE_DIR, "").strip()
    if not storage:
        checkpoints = conf.get("state.checkpoints.dir", "").strip()
        if not checkpoints:
            return None  # the engine refuses to start such a JobManager: nothing was ever kept
        storage = checkpoints.rstrip("/") + "/_ha"
    cluster_id = conf.get(HA_CLUSTER_ID, "default").strip().strip("/") or "default"
    return f"{storage.rstrip('/')}/{cluster_id}"


def newer_checkpoint(
    restore_from: str | None, checkpoints_dir: str, pointers: dict[str, tuple[int, str]]
) -> str | None:
    """A checkpoint newer than `restore_from` that the HA data points to, or None.

    `pointers` maps job id -> (checkpoint id, directory relative to `checkpoints_dir`), as the
    JobManager wrote them. The operator chose `restore_from` (`<checkpoints_dir>/<job-id>/chk-<n>`)
    from its last observation; a checkpoint may have completed between that observation and the
    JobManager's end. Restoring the older one would replay what an exactly-once sink already
    committed, so the newer one wins.
    """
    if not restore_from or not checkpoints_dir:
        return None
    base = checkpoints_dir.rstrip("/") + "/"
    path = restore_from.rstrip("/")
    if path.endswith("/_metadata"):
        path = path[: -len("/_metadata")]
    if not path.startswith(base):
        return None  # a savepoint, or a checkpoint of another location: the lifecycle chose it on purpose
    job_id, _, name = path[len(base):].partition("/")
    if not name.startswith("chk-") or not name[4:].isdigit() or job_id not in pointers:
        return None
    checkpoint_id, directory = pointers[job_id]
    if checkpoint_id <= int(name[4:]):
        return None
    return base + directory.strip("/")


def read_checkpoint_pointers(uri: str, s3: S3Access) -> dict[str, tuple[int, str]]:
    """job id -> (checkpoint id, directory) of the checkpoint pointers under the HA data at `uri`
    (`<uri>/jobs/<job-id>/checkpoint`); unreadable pointers are skipped (they are about to go)."""
    docs: dict[str, bytes] = {}
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme == "file":
        root = os.path.join(unquote(urlparse(uri).path), "jobs")
        for job_id in sorted(os.listdir(root)) if os.path.isdir(root) else ():
            pointer = os.path.join(root, job_id, "checkpoint")
            if os.path.isfile(pointer):
                with open(pointer, "rb") as f:
                    docs[job_id] = f.read()
    elif scheme in ("s3", "s3a", "s3p"):
        parsed = urlparse(uri)
        bucket, prefix = parsed.netloc, parsed.path.strip("/") + "/jobs/"
        client: Any = s3.client()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents") or ():
                job_id, _, name = obj["Key"][len(prefix):].partition("/")
                if name == "checkpoint":
                    docs[job_id] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    pointers: dict[str, tuple[int, str]] = {}
    for job_id, raw in docs.items():
        try:
            doc = json.loads(raw)
            pointers[job_id] = (int(doc["checkpoint_id"]), str(doc["directory"]))
        except (ValueError, KeyError, TypeError):
            continue
    return pointers
