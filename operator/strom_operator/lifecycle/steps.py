"""The steps the lifecycle state machine asks a handler to perform, one per reconciliation.

Each step says what to do and carries the whole status to write once it is done (a handler
writes `status_patch(old.to_dict(), step.status.to_dict())`). Every action is idempotent:
applying objects, deleting what may be gone, re-sending a savepoint trigger with the same id.
So an operator that dies between the action and the status write repeats the step safely.
`WriteStatus` does nothing but write: it is how a decision enters the write-ahead log before
anything is torn down.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus

SOON = 5.0  # seconds: poll again shortly while something is in progress
IDLE = 30.0  # seconds: nothing to do until the next observation


@dataclass(frozen=True, slots=True)
class WriteStatus:
    status: FlinkJobStatus
    requeue_after: float = 0.0


@dataclass(frozen=True, slots=True)
class DeployJob:
    """Apply the ConfigMap, Service and Deployments of `spec` (builders.build_job_objects), with the
    autoscaler's per-vertex parallelism if it set any."""

    spec: FlinkJobSpec
    restore_from: str | None
    allow_non_restored_state: bool
    status: FlinkJobStatus
    requeue_after: float = SOON
    vertex_parallelism: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeleteDeployments:
    """Delete the JobManager and TaskManager Deployments; the ConfigMap and Service stay."""

    status: FlinkJobStatus
    requeue_after: float = SOON


@dataclass(frozen=True, slots=True)
class TriggerSavepoint:
    """`POST /jobs/:jobid/savepoints` with this trigger id; the job keeps running."""

    job_id: str
    target_dir: str
    trigger_id: str
    status: FlinkJobStatus
    requeue_after: float = SOON


@dataclass(frozen=True, slots=True)
class StopWithSavepoint:
    """`POST /jobs/:jobid/stop` with this trigger id: savepoint, then the job finishes."""

    job_id: str
    target_dir: str
    trigger_id: str
    status: FlinkJobStatus
    requeue_after: float = SOON


@dataclass(frozen=True, slots=True)
class DisposeSavepoints:
    """Delete the savepoints' files (S3 objects or local files) pruned from the history."""

    paths: tuple[str, ...]
    status: FlinkJobStatus
    requeue_after: float = 0.0


@dataclass(frozen=True, slots=True)
class MarkDegraded:
    """Write the Degraded condition and emit a warning event with the reason."""

    reason: str
    message: str
    status: FlinkJobStatus
    requeue_after: float = IDLE


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to do now; look again after `requeue_after` seconds. The reason is logged."""

    reason: str
    status: FlinkJobStatus
    requeue_after: float = IDLE


@dataclass(frozen=True, slots=True)
class FinishDeletion:
    """Everything the deletion needed is done: remove the finalizer (owners delete the rest)."""

    reason: str
    status: FlinkJobStatus


Step = (WriteStatus | DeployJob | DeleteDeployments | TriggerSavepoint | StopWithSavepoint | DisposeSavepoints
        | MarkDegraded | Wait | FinishDeletion)
