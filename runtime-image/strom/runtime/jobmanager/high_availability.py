"""JobManager high availability: what a restarted JobManager needs to recover its running jobs.

`high-availability.type: file` keeps, per job, under `high-availability.storageDir` (file:// or
s3://) and `high-availability.cluster-id`:

    <cluster-id>/jobs/<job-id>/jobgraph      the submitted job (its payload, written at submission)
    <cluster-id>/jobs/<job-id>/checkpoint    JSON pointer to the latest completed checkpoint
    <cluster-id>/jobs/<job-id>/restarts      JSON {"numRestarts": n}, rewritten at each restart

The pointer is written when a checkpoint completes, before older checkpoints are subsumed and
before any task hears of the completion (and commits transactions of it): a JobManager that dies
at any moment leaves a pointer to a checkpoint whose files exist and whose side effects are at
most committed, never ahead. A job that reaches a globally terminal state (FINISHED, CANCELED,
FAILED) is removed, so only jobs that were still running are recovered.

A recovering JobManager starts the job's `numRestarts` from the stored count. Flink keeps the count in
the scheduler, so a new JobMaster starts from 0; we keep the count instead (what a user watching
the metric expects), and, as Flink, do not count the JobManager failover itself as a restart: it is a
new JobManager taking over the job, not a failure the restart strategy handled.

Flink's `high-availability.type: kubernetes` (leader election with Lease objects, pointers in
ConfigMaps, standby JobManagers) is not implemented, and the name is refused with a line saying what
to use instead, rather than silently meaning `file`. On Kubernetes the operator runs one JobManager
per FlinkJob (a Deployment with Recreate) and writes `file` with the storage next to the checkpoints
(S3): a replaced JobManager pod recovers its job from there.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from strom.common import config_options as opts
from strom.common.config_options import ConfigError, option
from strom.runtime.checkpoint.options import read_option
from strom.runtime.checkpoint.storage import CheckpointStorage, checkpoint_storage_for

log = logging.getLogger(__name__)

HA_TYPE = option(
    "high-availability.type",
    "enum",
    "NONE",
    "How a restarted JobManager recovers running jobs: NONE or FILE (high-availability.storageDir).",
    allowed=("NONE", "FILE", "KUBERNETES"),  # KUBERNETES is refused by ha_services_for, with what to use
)
HA_STORAGE_DIR = option(
    "high-availability.storageDir",
    "str",
    "",
    "Where job graphs and checkpoint pointers are kept (file:// or s3://); default: <state.checkpoints.dir>/_ha.",
)
HA_CLUSTER_ID = option(
    "high-availability.cluster-id", "str", "default", "Separates the HA data of clusters sharing a storage directory."
)


@dataclass(frozen=True, slots=True)
class CheckpointPointer:
    """The latest completed checkpoint of a job: its id and its directory under the job's
    `state.checkpoints.dir` ('<job-id>/chk-<n>')."""

    checkpoint_id: int
    directory: str


@dataclass(frozen=True, slots=True)
class RecoveredJob:
    job_id: str
    payload: bytes
    checkpoint: CheckpointPointer | None
    num_restarts: int = 0


class HaServices(Protocol):
    def recover_jobs(self) -> list[RecoveredJob]:
        """The jobs a previous JobManager ran and did not end."""

    def job_submitted(self, job_id: str, payload: bytes) -> None: ...

    def checkpoint_completed(self, job_id: str, pointer: CheckpointPointer) -> None:
        """Raises when the pointer cannot be kept (the checkpoint then does not complete)."""

    def job_restarted(self, job_id: str, num_restarts: int) -> None:
        """Keep the job's restart count for a JobManager that recovers it."""

    def job_terminated(self, job_id: str) -> None: ...


class NoHaServices:
    """high-availability.type: NONE — a JobManager that dies loses its jobs (Flink's default)."""

    def recover_jobs(self) -> list[RecoveredJob]:
        return []

    def job_submitted(self, job_id: str, payload: bytes) -> None:
        pass

    def checkpoint_completed(self, job_id: str, pointer: CheckpointPointer) -> None:
        pass

    def job_restarted(self, job_id: str, num_restarts: int) -> None:
        pass

    def job_terminated(self, job_id: str) -> None:
        pass


class StorageHaServices:
    """HA data as objects of a checkpoint storage (file:// or s3://)."""

    def __init__(self, storage: CheckpointStorage, cluster_id: str) -> None:
        self.storage = storage
        self.prefix = f"{cluster_id.strip('/')}/jobs"

    def _path(self, job_id: str, name: str) -> str:
        return f"{self.prefix}/{job_id}/{name}"

    def recover_jobs(self) -> list[RecoveredJob]:
        job_ids = sorted({p[len(self.prefix) + 1 :].split("/", 1)[0] for p in self.storage.list(self.prefix + "/")})
        jobs = []
        for job_id in job_ids:
            if not self.storage.exists(self._path(job_id, "jobgraph")):
                continue  # removed while listing, or a submission that never completed its write
            payload = self.storage.read_bytes(self._path(job_id, "jobgraph"))
            pointer = None
            if self.storage.exists(self._path(job_id, "checkpoint")):
                doc = json.loads(self.storage.read_bytes(self._path(job_id, "checkpoint")))
                pointer = CheckpointPointer(int(doc["checkpoint_id"]), str(doc["directory"]))
            jobs.append(RecoveredJob(job_id, payload, pointer, self._restarts(job_id)))
        return jobs

    def _restarts(self, job_id: str) -> int:
        """The stored restart count; 0 when none was kept, or (with a warning) when it is unreadable: a
        counter must not keep a job from being recovered."""
        path = self._path(job_id, "restarts")
        if not self.storage.exists(path):
            return 0
        try:
            count = json.loads(self.storage.read_bytes(path))["numRestarts"]
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError(f"numRestarts must be a non-negative integer, got {count!r}")
            return count
        except (ValueError, KeyError, TypeError) as e:
            log.warning("job %s: unreadable restart count %s (%s); numRestarts starts from 0", job_id, path, e)
            return 0

    def job_submitted(self, job_id: str, payload: bytes) -> None:
        self.storage.write_bytes(self._path(job_id, "jobgraph"), payload)

    def checkpoint_completed(self, job_id: str, pointer: CheckpointPointer) -> None:
        doc = {"checkpoint_id": pointer.checkpoint_id, "directory": pointer.directory}
        self.storage.write_bytes(self._path(job_id, "checkpoint"), json.dumps(doc).encode())

    def job_restarted(self, job_id: str, num_restarts: int) -> None:
        self.storage.write_bytes(self._path(job_id, "restarts"), json.dumps({"numRestarts": num_restarts}).encode())

    def job_terminated(self, job_id: str) -> None:
        try:
            self.storage.delete_prefix(f"{self.prefix}/{job_id}")
        except Exception as e:  # noqa: BLE001 - leftovers only make a later JobManager recover an ended job
            log.warning("could not remove the HA data of job %s: %s", job_id, e)


def ha_services_for(config: Any) -> HaServices:
    """The HA services `config` asks for; a `ConfigError` naming the keys when they cannot work."""
    kind = str(read_option(config, HA_TYPE)).upper()
    if kind == "NONE":
        return NoHaServices()
    if kind == "KUBERNETES":
        raise ConfigError(
            f"'{HA_TYPE.key}: kubernetes' (leader election with Leases, standby JobManagers) is not supported: "
            f"set '{HA_TYPE.key}: file' with '{HA_STORAGE_DIR.key}' (s3:// or shared file://; default "
            "<state.checkpoints.dir>/_ha), which recovers a replaced JobManager's jobs"
        )
    storage_dir = str(read_option(config, HA_STORAGE_DIR) or "")
    if not storage_dir and config.get(opts.CHECKPOINTS_DIR):
        # next to the checkpoints it points to: a location every JobManager pod already reaches
        storage_dir = str(config.get(opts.CHECKPOINTS_DIR)).rstrip("/") + "/_ha"
    if not storage_dir:
        raise ConfigError(
            f"'{HA_TYPE.key}: {kind.lower()}' needs '{HA_STORAGE_DIR.key}' (file:// on storage every JobManager "
            "reaches, or s3://) to keep job graphs and checkpoint pointers"
        )
    return StorageHaServices(checkpoint_storage_for(storage_dir, config), str(read_option(config, HA_CLUSTER_ID)))
