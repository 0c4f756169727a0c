"""Deleting a FlinkJob: `next_deletion_step(spec, status, observed, now=...) -> Step`.

With `spec.savepoints.onDeletion`, the running job is stopped with a savepoint first, so its
state survives the FlinkJob (the savepoint is not pruned: the history goes with the resource,
the files stay). Deletion is never blocked forever: a savepoint that fails or times out ends in
`FinishDeletion` whose reason says that no savepoint was taken. The Deployments, Service and
ConfigMap go with the FlinkJob through their ownerReferences.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.savepoint_history import clear_pending, record_completed, with_pending
from strom_operator.lifecycle.savepoint_outcome import SavepointProgress, savepoint_outcome
from strom_operator.lifecycle.steps import SOON, FinishDeletion, Step, StopWithSavepoint, Wait, WriteStatus
from strom_operator.lifecycle.upgrades import Situation
from strom_operator.observe.observed import ObservedJob


def next_deletion_step(spec: FlinkJobSpec, status: FlinkJobStatus, observed: ObservedJob, *, now: datetime,
                       name: str = "") -> Step:
    s = Situation(spec, status, observed, now, name)
    if status.lifecycle_state != "DELETING":
        new = replace(status, lifecycle_state="DELETING")
        if spec.savepoints.on_deletion and spec.savepoints.dir and observed.running:
            new = with_pending(new, name, "deletion", now)
        return WriteStatus(new)
    pending = status.savepoints.pending
    if pending is None or pending.kind != "deletion":
        last = status.savepoints.last
        if last is not None and last.kind == "deletion":
            return FinishDeletion(f"deleted after savepoint {last.path}", status)
        return FinishDeletion("deleted", status)
    outcome = savepoint_outcome(pending, observed, now=now, timeout_s=s.options.savepoint_timeout_s)
    match outcome.progress:
        case SavepointProgress.COMPLETED:
            return WriteStatus(record_completed(status, outcome.location or "", now))
        case SavepointProgress.FAILED:
            last = status.savepoints.last
            kept = f"; the latest savepoint is {last.path}" if last else ""
            return FinishDeletion(f"deleted without a final savepoint ({outcome.cause}){kept}", clear_pending(status))
        case SavepointProgress.IN_PROGRESS | SavepointProgress.NO_ANSWER:
            return Wait(f"waiting for the savepoint before deletion {pending.trigger_id}", status, SOON)
    job_id = observed.job_id or status.job_status.job_id or ""
    return StopWithSavepoint(job_id, spec.savepoints.dir or "", pending.trigger_id, status)
